import Foundation

/// Splits SQL text into its statements the way `psql` does, so a script of several statements can run over
/// PostgresNIO, which speaks only the extended query protocol (one statement per query).
///
/// A semicolon ends a statement unless it is inside a string constant (`'…'`, `E'…'` with backslash escapes),
/// a quoted identifier (`"…"`), a dollar-quoted string (`$$…$$`, `$tag$…$tag$`), a comment (`-- …`, nested
/// `/* … */`), parentheses, or the `BEGIN ATOMIC … END` body of a `CREATE FUNCTION`/`CREATE PROCEDURE`.
/// Statements that are empty or only comments are dropped.
public struct PostgresSQLScript: Sendable, Equatable {
  /// One statement and where it starts.
  public struct Statement: Sendable, Equatable {
    /// The statement's text, without the terminating semicolon, trimmed.
    public var sql: String
    /// The 1-based line of the script on which the statement starts.
    public var line: Int

    /// Creates a statement.
    public init(sql: String, line: Int) {
      self.sql = sql
      self.line = line
    }
  }

  /// The statements, in order.
  public var statements: [Statement]

  /// Splits `sql`.
  ///
  /// - Throws: ``PostgresSQLScriptError`` when a string, identifier, dollar quote or comment is not closed.
  public init(_ sql: String) throws(PostgresSQLScriptError) {
    var splitter = Splitter(Array(sql.unicodeScalars))
    statements = try splitter.split()
  }
}

/// SQL text that can't be split because something opened is never closed.
public struct PostgresSQLScriptError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What is unterminated, e.g. "string constant" or "dollar-quoted string $body$".
  public var construct: String
  /// The 1-based line where it starts.
  public var line: Int

  /// Creates an error.
  public init(construct: String, line: Int) {
    self.construct = construct
    self.line = line
  }

  /// A message naming the construct and its line.
  public var description: String { "unterminated \(construct) starting on line \(line)" }
}

private struct Splitter {
  let text: [Unicode.Scalar]
  var index = 0
  var line = 1
  var statements: [PostgresSQLScript.Statement] = []
  var current = String.UnicodeScalarView()
  var currentLine = 1
  var hasCode = false
  var parenDepth = 0
  var beginDepth = 0
  /// The first words of the current statement, lowercased, to recognise `CREATE [OR REPLACE] FUNCTION|PROCEDURE`.
  var words: [String] = []

  init(_ text: [Unicode.Scalar]) {
    self.text = text
  }

  mutating func split() throws(PostgresSQLScriptError) -> [PostgresSQLScript.Statement] {
    while index < text.count {
      let c = text[index]
      switch c {
      case "'":
        let escapes = isEscapeStringPrefix()
        try quoted(until: "'", backslashEscapes: escapes, construct: "string constant")
      case "\"":
        try quoted(until: "\"", backslashEscapes: false, construct: "quoted identifier")
      case "-" where peek(1) == "-":
        while index < text.count, text[index] != "\n" { append(text[index]) }
      case "/" where peek(1) == "*":
        try blockComment()
      case "$" where !followsIdentifier():
        if let tag = dollarTag() { try dollarQuoted(tag) } else { code(c) }
      case "(":
        parenDepth += 1
        code(c)
      case ")":
        parenDepth = max(0, parenDepth - 1)
        code(c)
      case ";" where parenDepth == 0 && beginDepth == 0:
        index += 1
        finishStatement()
      case _ where isIdentifierStart(c):
        word()
      default:
        if c == "\n" || c == " " || c == "\t" || c == "\r" { append(c) } else { code(c) }
      }
    }
    finishStatement()
    return statements
  }

  // MARK: Pieces

  private mutating func word() {
    var scalars = String.UnicodeScalarView()
    while index < text.count, isIdentifierPart(text[index]) {
      scalars.append(text[index])
      code(text[index])
    }
    let word = String(scalars).lowercased()
    // psql's rule: inside CREATE [OR REPLACE] FUNCTION|PROCEDURE, BEGIN and CASE open a block that END closes.
    if words.count < 4 { words.append(word) }
    if word == "begin" || word == "case" {
      if isRoutineDefinition() && parenDepth == 0 { beginDepth += 1 }
    } else if word == "end", beginDepth > 0 {
      beginDepth -= 1
    }
  }

  private func isRoutineDefinition() -> Bool {
    guard words.first == "create", words.count > 1 else { return false }
    if words[1] == "function" || words[1] == "procedure" { return true }
    return words.count > 3 && words[1] == "or" && words[2] == "replace"
      && (words[3] == "function" || words[3] == "procedure")
  }

  private mutating func quoted(
    until quote: Unicode.Scalar, backslashEscapes: Bool, construct: String
  ) throws(PostgresSQLScriptError) {
    let startLine = line
    code(quote)
    while index < text.count {
      let c = text[index]
      if backslashEscapes, c == "\\", index + 1 < text.count {
        code(c)
        code(text[index])
        continue
      }
      code(c)
      if c == quote {
        if index < text.count, text[index] == quote {
          code(quote)  // a doubled quote stands for one
          continue
        }
        return
      }
    }
    throw PostgresSQLScriptError(construct: construct, line: startLine)
  }

  private mutating func blockComment() throws(PostgresSQLScriptError) {
    let startLine = line
    var depth = 0
    while index < text.count {
      if text[index] == "/", peek(1) == "*" {
        depth += 1
        append(text[index])
        append(text[index])
      } else if text[index] == "*", peek(1) == "/" {
        depth -= 1
        append(text[index])
        append(text[index])
        if depth == 0 { return }
      } else {
        append(text[index])
      }
    }
    throw PostgresSQLScriptError(construct: "comment /* */", line: startLine)
  }

  /// The `$tag$` starting at `index`, if one does (`$1` is a parameter, not a tag).
  private func dollarTag() -> [Unicode.Scalar]? {
    var end = index + 1
    if end < text.count, !isIdentifierStart(text[end]), text[end] != "$" { return nil }
    while end < text.count, text[end] != "$" {
      guard isIdentifierPart(text[end]), text[end] != "$" else { return nil }
      end += 1
    }
    guard end < text.count else { return nil }
    return Array(text[index...end])
  }

  private mutating func dollarQuoted(_ tag: [Unicode.Scalar]) throws(PostgresSQLScriptError) {
    let startLine = line
    for scalar in tag { code(scalar) }
    while index < text.count {
      if text[index] == "$", index + tag.count <= text.count, Array(text[index..<(index + tag.count)]) == tag {
        for scalar in tag { code(scalar) }
        return
      }
      code(text[index])
    }
    throw PostgresSQLScriptError(
      construct: "dollar-quoted string \(String(String.UnicodeScalarView(tag)))", line: startLine)
  }

  // MARK: Characters

  private func peek(_ offset: Int) -> Unicode.Scalar? {
    index + offset < text.count ? text[index + offset] : nil
  }

  /// Whether the quote at `index` opens an `E'…'` string: preceded by a lone `E` or `e`.
  private func isEscapeStringPrefix() -> Bool {
    guard index >= 1, text[index - 1] == "E" || text[index - 1] == "e" else { return false }
    return index < 2 || !isIdentifierPart(text[index - 2])
  }

  /// Whether the character before `index` continues an identifier (so `$` there is part of a name like `a$b`).
  private func followsIdentifier() -> Bool {
    index > 0 && isIdentifierPart(text[index - 1])
  }

  private func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
    c == "_" || (c.value >= 0x80) || ("a"..."z").contains(c) || ("A"..."Z").contains(c)
  }

  private func isIdentifierPart(_ c: Unicode.Scalar) -> Bool {
    isIdentifierStart(c) || ("0"..."9").contains(c) || c == "$"
  }

  /// Appends a character that is part of a statement (not only whitespace or comment).
  private mutating func code(_ c: Unicode.Scalar) {
    if !hasCode {
      hasCode = true
      currentLine = line
    }
    append(c)
  }

  private mutating func append(_ c: Unicode.Scalar) {
    if c == "\n" { line += 1 }
    current.append(c)
    index += 1
  }

  private mutating func finishStatement() {
    if hasCode {
      let sql = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
      statements.append(PostgresSQLScript.Statement(sql: sql, line: currentLine))
    }
    current = String.UnicodeScalarView()
    hasCode = false
    parenDepth = 0
    beginDepth = 0
    words = []
  }
}

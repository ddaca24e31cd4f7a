import DomainKit
import Foundation
import MeridianAPI

/// A failure of an admin command, with the exit code it ends the process with.
public struct AdminError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What kind of failure, which decides the exit code.
  public enum Kind: Sendable, Hashable {
    /// The work failed (exit 1): a damaged database, a bad input file, a conflict.
    case failure
    /// The command line was wrong (exit 2): a bad value, a missing `--yes`.
    case usage
    /// A user, token or file does not exist (exit 3).
    case notFound
  }

  /// The kind.
  public var kind: Kind
  /// What was wrong and what to do.
  public var message: String

  /// An error of `kind`.
  public init(_ kind: Kind, _ message: String) {
    self.kind = kind
    self.message = message
  }

  /// A failure (exit 1).
  public static func failure(_ message: String) -> AdminError { AdminError(.failure, message) }
  /// A usage error (exit 2).
  public static func usage(_ message: String) -> AdminError { AdminError(.usage, message) }
  /// Something named does not exist (exit 3).
  public static func notFound(_ message: String) -> AdminError { AdminError(.notFound, message) }

  /// The process exit code.
  public var exitCode: Int32 {
    switch kind {
    case .failure: ExitStatus.failure
    case .usage: ExitStatus.usage
    case .notFound: ExitStatus.notFound
    }
  }

  /// The message.
  public var description: String { message }
}

/// The documented exit codes of `meridian-admin`.
public enum ExitStatus {
  /// Success.
  public static let ok: Int32 = 0
  /// The command failed (including `db check` finding problems and `i18n check` finding missing translations).
  public static let failure: Int32 = 1
  /// Bad command line: unknown command or option, bad value, a destructive command without `--yes`.
  public static let usage: Int32 = 2
  /// A user, token, venue or input file that was named does not exist.
  public static let notFound: Int32 = 3
}

/// Text that is safe on an operator's terminal. Names, titles, comments and every other value a user set through the
/// API may hold control characters: `ESC]0;…BEL` retitles the window, `ESC[2J` clears it, a carriage return or a
/// bidirectional override hides what follows. ``visible(_:keepingLineBreaks:)`` is the one rule every output of
/// `meridian-admin` goes through (``Console``, ``TextTable``): such characters are shown as Swift escapes
/// (`\u{1B}`), never sent raw.
public enum TerminalText {
  /// Whether `scalar` must not reach a terminal raw: C0 controls, DEL, C1 controls (U+0080…U+009F; U+009B is an
  /// 8-bit CSI) and the bidirectional marks, embeddings, overrides and isolates.
  public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
  }

  /// `text` with every unsafe character shown as `\u{1B}` (hexadecimal, upper case). With `keepingLineBreaks` (a whole
  /// output), line feeds and tabs stay; without (one table cell, one line), they are shown too, so a value can't
  /// forge a row. Text with nothing to show is returned as it is.
  public static func visible(_ text: String, keepingLineBreaks: Bool = false) -> String {
    func kept(_ scalar: Unicode.Scalar) -> Bool {
      !isUnsafe(scalar) || (keepingLineBreaks && (scalar == "\n" || scalar == "\t"))
    }
    guard !text.unicodeScalars.allSatisfy(kept) else { return text }
    var result = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
      if kept(scalar) {
        result.append(scalar)
      } else {
        result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
      }
    }
    return String(result)
  }

  /// JSON text with the unsafe characters JSONEncoder leaves raw (DEL, C1, bidirectional controls) written as JSON
  /// escapes (`\u009B`): the same document, safe on a terminal. They can only occur inside strings.
  static func escapingJSON(_ json: String) -> String {
    func escaped(_ scalar: Unicode.Scalar) -> Bool { isUnsafe(scalar) && scalar != "\n" }
    guard json.unicodeScalars.contains(where: escaped) else { return json }
    var result = String.UnicodeScalarView()
    for scalar in json.unicodeScalars {
      if escaped(scalar) {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        result.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
      } else {
        result.append(scalar)
      }
    }
    return String(result)
  }
}

/// Where commands write: standard output for results, standard error for messages and progress. Everything written
/// goes through ``TerminalText/visible(_:keepingLineBreaks:)``: no control sequence a user stored reaches the
/// operator's terminal.
public enum Console {
  /// Writes `text` and a newline to standard output, control characters shown visibly.
  public static func print(_ text: String) {
    FileHandle.standardOutput.write(Data((TerminalText.visible(text, keepingLineBreaks: true) + "\n").utf8))
  }

  /// Writes `text` and a newline to standard error, control characters shown visibly.
  public static func error(_ text: String) {
    FileHandle.standardError.write(Data((TerminalText.visible(text, keepingLineBreaks: true) + "\n").utf8))
  }

  /// Writes `value` as pretty-printed JSON with sorted keys (what `--json` prints).
  public static func json(_ value: some Encodable) throws {
    print(try jsonText(value))
  }

  /// `value` as pretty-printed JSON with sorted keys; control characters in strings are JSON escapes (the encoder
  /// escapes C0, ``TerminalText/escapingJSON(_:)`` the rest).
  public static func jsonText(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return TerminalText.escapingJSON(String(decoding: try encoder.encode(value), as: UTF8.self))
  }

  /// Whether standard error is a terminal (progress is shown only then).
  public static var showsProgress: Bool { isatty(STDERR_FILENO) != 0 }

  /// Rewrites one progress line on standard error when it is a terminal.
  public static func progress(_ text: String) {
    guard showsProgress else { return }
    FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
  }

  /// Ends a progress line.
  public static func endProgress() {
    guard showsProgress else { return }
    FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
  }
}

/// A plain-text table: a header row and left-aligned columns separated by two spaces.
public struct TextTable: Sendable {
  /// Column titles.
  public var columns: [String]
  /// Rows of cells.
  public var rows: [[String]] = []

  /// A table with `columns`.
  public init(_ columns: [String]) { self.columns = columns }

  /// Appends a row; control characters and line breaks in a cell are shown visibly
  /// (``TerminalText/visible(_:keepingLineBreaks:)``), so a value can't rewrite the terminal or forge a row.
  public mutating func add(_ cells: [String]) { rows.append(cells.map { TerminalText.visible($0) }) }

  /// The table as text (trailing spaces trimmed).
  public var text: String {
    var widths = columns.map(\.count)
    for row in rows {
      for (index, cell) in row.enumerated() where index < widths.count {
        widths[index] = max(widths[index], cell.count)
      }
    }
    func line(_ cells: [String]) -> String {
      var text = ""
      for (index, cell) in cells.enumerated() {
        let padded =
          index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
        text += (index == 0 ? "" : "  ") + padded
      }
      return text
    }
    return ([line(columns)] + rows.map(line)).joined(separator: "\n")
  }
}

/// Parsing and printing of the values operators type.
public enum AdminFormat {
  /// UTC ISO 8601 (`2026-11-24T07:00:00.000Z`) of a millisecond timestamp.
  public static func time(_ milliseconds: Int64?) -> String {
    milliseconds.map { Timestamp.formatISO8601($0) } ?? "-"
  }

  /// A time as every CLI reads it (``CommandLineTime``: a date alone is local midnight in `timeZone`).
  public static func parseTime(_ text: String, option: String, timeZone: TimeZone = .current) throws(AdminError)
    -> Int64
  {
    guard let milliseconds = CommandLineTime.parse(text, timeZone: timeZone) else {
      throw .usage("\(option) '\(text)' is not a time; use \(CommandLineTime.accepted).")
    }
    return milliseconds
  }

  /// A duration like `365d`, `12h`, `2w` or `30m`, in milliseconds.
  public static func parseDuration(_ text: String, option: String) throws(AdminError) -> Int64 {
    let units: [Character: Int64] = ["m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000]
    guard let unit = text.last, let factor = units[unit], let count = Int64(text.dropLast()), count > 0,
      count <= Int64.max / factor
    else {
      throw .usage("\(option) '\(text)' is not a duration; use a positive number and m, h, d or w, like 365d.")
    }
    return count * factor
  }

  /// A byte count for people: `12.3 MiB`.
  public static func bytes(_ count: Int64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(count)
    var unit = 0
    while value >= 1024, unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    return unit == 0 ? "\(count) B" : String(format: "%.1f", value) + " " + units[unit]
  }
}

import Foundation

/// The one rule for text a person writes for others (or an operator) to read: names, titles, option captions,
/// descriptions, comments, reviews, notes, profile fields.
///
/// A text is trimmed of surrounding whitespace and line breaks, then it must
/// - hold no control character (Unicode category Cc: C0, DEL, C1, NUL), except TAB and LF in a multi-line text;
///   a single-line text holds no line or paragraph separator (U+2028, U+2029) either;
/// - have at most ``maximumLength`` characters (grapheme clusters), and at most four times as many Unicode scalars,
///   so combining marks can't stack without bound on one character;
/// - not be empty, unless ``allowsEmpty``.
///
/// Every engine stores what this rule lets through (PostgreSQL can't store NUL), so the rule, not an engine,
/// decides what is accepted.
public struct UserText: Sendable, Hashable {
  /// Whether a text may span lines.
  public enum Lines: Sendable, Hashable {
    /// One line: no TAB, LF or any other control character.
    case single
    /// Several lines: TAB and LF are allowed, no other control character.
    case multiple
  }

  /// Single- or multi-line.
  public var lines: Lines
  /// The most characters (grapheme clusters) after trimming.
  public var maximumLength: Int
  /// Whether an empty text (after trimming) is accepted.
  public var allowsEmpty: Bool

  /// A rule.
  public init(_ lines: Lines, maximumLength: Int, allowsEmpty: Bool) {
    self.lines = lines
    self.maximumLength = maximumLength
    self.allowsEmpty = allowsEmpty
  }

  /// A one-line text of at most `maximumLength` characters (a name, a title, a caption); empty only if
  /// `allowsEmpty`.
  public static func singleLine(maximumLength: Int, allowsEmpty: Bool = false) -> UserText {
    UserText(.single, maximumLength: maximumLength, allowsEmpty: allowsEmpty)
  }

  /// A text of several lines of at most `maximumLength` characters in all (a description, a comment, a review);
  /// empty unless `allowsEmpty` is false.
  public static func multiLine(maximumLength: Int, allowsEmpty: Bool = true) -> UserText {
    UserText(.multiple, maximumLength: maximumLength, allowsEmpty: allowsEmpty)
  }

  /// Why a text breaks the rule.
  public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text is empty (or only whitespace) where one is required.
    case empty
    /// The text is longer than `maximum` characters (or has more than four Unicode scalars per allowed character).
    case tooLong(maximum: Int)
    /// The text holds a character it may not: a control character, or a line break in a one-line text.
    case forbiddenCharacter(Unicode.Scalar, lines: Lines)

    /// What is wrong, to follow the field's name: "can have at most 255 characters".
    public var description: String {
      switch self {
      case .empty: "is required"
      case .tooLong(let maximum): "can have at most \(maximum) characters"
      case .forbiddenCharacter(let scalar, let lines):
        "can't contain \(Self.name(of: scalar))"
          + (lines == .single
            ? " (a one-line text takes no control characters or line breaks)"
            : " (no control characters other than tabs and line breaks)")
      }
    }

    /// The message of an error about the field `field`: `'title' can have at most 255 characters.`
    public func message(field: String) -> String { "'\(field)' \(description)." }

    static func name(of scalar: Unicode.Scalar) -> String { String(format: "U+%04X", scalar.value) }
  }

  /// Whether `scalar` may appear in such a text.
  public func allows(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .control: lines == .multiple && (scalar == "\n" || scalar == "\t")
    case .lineSeparator, .paragraphSeparator: lines == .multiple
    default: true
    }
  }

  /// `text` trimmed of surrounding whitespace and line breaks, once it follows the rule.
  /// - Throws: ``Problem``.
  public func validated(_ text: some StringProtocol) throws(Problem) -> String {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    if trimmed.isEmpty {
      guard allowsEmpty else { throw .empty }
      return trimmed
    }
    // Counting scalars first bounds the (costlier) count of characters.
    guard trimmed.unicodeScalars.count <= maximumLength * 4, trimmed.count <= maximumLength else {
      throw .tooLong(maximum: maximumLength)
    }
    if let scalar = trimmed.unicodeScalars.first(where: { !allows($0) }) {
      throw .forbiddenCharacter(scalar, lines: lines)
    }
    return trimmed
  }
}

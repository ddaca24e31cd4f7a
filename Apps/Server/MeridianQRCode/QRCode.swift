import CQRencode

/// A QR code symbol made by libqrencode: a square of dark and light modules (byte mode, case kept).
public struct QRCode: Sendable, Hashable {
  /// How much of the symbol may be damaged and still read; higher levels make larger symbols.
  public enum Correction: Sendable, Hashable, CaseIterable {
    /// About 7 % of the codewords.
    case low
    /// About 15 % (what most readers expect for printed codes).
    case medium
    /// About 25 %.
    case quartile
    /// About 30 %.
    case high

    var level: QRecLevel {
      switch self {
      case .low: QR_ECLEVEL_L
      case .medium: QR_ECLEVEL_M
      case .quartile: QR_ECLEVEL_Q
      case .high: QR_ECLEVEL_H
      }
    }
  }

  /// Why a text can't be encoded.
  public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Empty text, or text with a NUL byte.
    case invalidText
    /// More than the largest symbol (version 40) holds at this correction level.
    case tooLong(bytes: Int)

    /// What was wrong.
    public var description: String {
      switch self {
      case .invalidText: "A QR code needs a non-empty text without NUL characters."
      case .tooLong(let bytes): "\(bytes) bytes are more than a QR code holds; use a shorter text."
      }
    }
  }

  /// The symbol version (1…40): the size is 17 + 4 × version modules.
  public let version: Int
  /// Modules per side, without the quiet zone.
  public let size: Int
  /// The modules row by row, `true` for dark.
  public let modules: [Bool]

  /// The symbol of `text` (UTF-8, byte mode) at the smallest version that holds it.
  public init(_ text: String, correction: Correction = .medium) throws(Failure) {
    guard !text.isEmpty, !text.utf8.contains(0) else { throw .invalidText }
    guard let code = QRcode_encodeString8bit(text, 0, correction.level) else {
      throw .tooLong(bytes: text.utf8.count)
    }
    defer { QRcode_free(code) }
    let width = Int(code.pointee.width)
    version = Int(code.pointee.version)
    size = width
    // libqrencode's bytes carry flags; bit 0 is the module's colour.
    modules = (0..<width * width).map { code.pointee.data[$0] & 1 == 1 }
  }

  /// Whether the module at `row`, `column` is dark (out of the symbol, e.g. in the quiet zone: light).
  public func isDark(row: Int, column: Int) -> Bool {
    guard (0..<size).contains(row), (0..<size).contains(column) else { return false }
    return modules[row * size + column]
  }
}

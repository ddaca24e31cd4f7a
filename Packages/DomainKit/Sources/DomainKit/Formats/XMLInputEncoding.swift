/// Decides an XML document's encoding from its first bytes, before the parser sees any, and hands the parser
/// UTF-8 only: UTF-8 (with or without a byte order mark) and US-ASCII pass through, ISO-8859-1 and Windows-1252 are
/// converted, and anything else (UTF-16, UTF-32, EBCDIC, other declared encodings) is refused with a
/// ``FormatError``. libxml2 is told to ignore the declaration, so its own encoding switching (where 2.9 has
/// crashed on a UCS-4 or EBCDIC document) never runs.
struct XMLInputEncoding {
  enum Encoding: Equatable {
    case utf8
    /// A single-byte encoding: the scalars of bytes 0x80…0xFF.
    case singleByte([Unicode.Scalar])
  }

  /// How many bytes are held back at most while looking for the end of the XML declaration.
  static let declarationLimit = 1024

  private let format: FileFormat
  private var head: [UInt8] = []
  private(set) var encoding: Encoding?

  init(format: FileFormat) { self.format = format }

  /// Passes `bytes` to `sink` as UTF-8; the first bytes are held until the encoding is known (`final` ends the
  /// input).
  mutating func feed(
    _ bytes: UnsafeRawBufferPointer, final: Bool, _ sink: (UnsafeRawBufferPointer) throws -> Void
  ) throws {
    if let encoding { return try Self.emit(bytes, encoding, sink) }
    head.append(contentsOf: bytes)
    guard let decided = try decide(final: final) else { return }
    encoding = decided
    let held = head
    head = []
    try held.withUnsafeBytes { try Self.emit($0, decided, sink) }
  }

  private static func emit(
    _ bytes: UnsafeRawBufferPointer, _ encoding: Encoding, _ sink: (UnsafeRawBufferPointer) throws -> Void
  ) throws {
    guard case .singleByte(let table) = encoding else { return try sink(bytes) }
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count + bytes.count / 8)
    for byte in bytes {
      if byte < 0x80 {
        out.append(byte)
      } else {
        Unicode.UTF8.encode(table[Int(byte) - 0x80]) { out.append($0) }
      }
    }
    try out.withUnsafeBytes(sink)
  }

  private func refuse(_ message: String) -> FormatError {
    FormatError(format, line: 1, field: "encoding", message + "; save the file as UTF-8")
  }

  /// The encoding, or nil while more bytes are needed.
  private func decide(final: Bool) throws -> Encoding? {
    let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
    let body = head.starts(with: bom) ? head[3...] : head[...]
    guard body.count >= 4 || final else { return nil }
    if head.starts(with: [0xFE, 0xFF]) || head.starts(with: [0xFF, 0xFE]) || body.prefix(4).contains(0) {
      throw refuse("the file is UTF-16 or UTF-32, not UTF-8")
    }
    if body.starts(with: [0x4C, 0x6F, 0xA7, 0x94]) { throw refuse("the file is EBCDIC, not UTF-8") }
    guard body.starts(with: Array("<?xml".utf8)) else { return .utf8 }
    guard let end = body.firstRange(of: Array("?>".utf8)) else {
      // No end of the declaration yet: wait, up to a limit; past it the parser reports the broken declaration.
      return body.count < Self.declarationLimit && !final ? nil : .utf8
    }
    guard let name = Self.declaredEncoding(body[..<end.lowerBound]) else { return .utf8 }
    switch name.lowercased() {
    case "utf-8", "utf8", "us-ascii", "ascii": return .utf8
    case "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1":
      return .singleByte((0x80...0xFF).compactMap(Unicode.Scalar.init))
    case "windows-1252", "cp1252": return .singleByte(Self.windows1252)
    default: throw refuse("the encoding '\(name.prefix(40))' is not supported (UTF-8, ISO-8859-1 and Windows-1252 are)")
    }
  }

  /// The value of `encoding="…"` in an XML declaration, if there is one.
  private static func declaredEncoding(_ declaration: ArraySlice<UInt8>) -> String? {
    guard let key = declaration.firstRange(of: Array("encoding".utf8)) else { return nil }
    var index = key.upperBound
    func skipSpaces() {
      while index < declaration.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(declaration[index]) { index += 1 }
    }
    skipSpaces()
    guard index < declaration.endIndex, declaration[index] == 0x3D else { return nil }
    index += 1
    skipSpaces()
    guard index < declaration.endIndex, declaration[index] == 0x22 || declaration[index] == 0x27 else { return nil }
    let quote = declaration[index]
    let start = index + 1
    guard let end = declaration[start...].firstIndex(of: quote) else { return nil }
    return String(decoding: declaration[start..<end], as: UTF8.self)
  }

  /// Windows-1252's bytes 0x80…0xFF: 0x80…0x9F differ from ISO-8859-1 (the five unassigned ones stay C1 controls,
  /// as browsers decode them).
  private static let windows1252: [Unicode.Scalar] = {
    let high: [UInt32] = [
      0x20AC, 0x81, 0x201A, 0x192, 0x201E, 0x2026, 0x2020, 0x2021, 0x2C6, 0x2030, 0x160, 0x2039, 0x152, 0x8D, 0x17D,
      0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x2DC, 0x2122, 0x161, 0x203A, 0x153, 0x9D,
      0x17E, 0x178,
    ]
    return (high + (0xA0...0xFF).map { UInt32($0) }).compactMap(Unicode.Scalar.init)
  }()
}

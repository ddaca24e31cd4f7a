import NIOCore
import PostgresNIO

/// A one-dimensional PostgreSQL array whose elements may be NULL, in the binary format (postgres-nio encodes arrays
/// of non-optional elements only): what `unnest($n::float8[])` reads for an optional column of a multi-row insert.
struct NullableArray<Element: PostgresArrayEncodable>: PostgresEncodable {
  var elements: [Element?]

  init(_ elements: [Element?]) { self.elements = elements }

  static var psqlType: PostgresDataType { Element.psqlArrayType }
  static var psqlFormat: PostgresFormat { .binary }

  func encode<JSONEncoder: PostgresJSONEncoder>(
    into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
  ) throws {
    // Dimensions, whether any element is NULL, the element type; then each dimension's length and lower bound.
    buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
    buffer.writeInteger(elements.contains { $0 == nil } ? 1 : 0, as: Int32.self)
    buffer.writeInteger(Element.psqlType.rawValue)
    guard !elements.isEmpty else { return }
    buffer.writeInteger(Int32(elements.count))
    buffer.writeInteger(1, as: Int32.self)
    for element in elements {
      guard let element else {
        buffer.writeInteger(-1, as: Int32.self)
        continue
      }
      let lengthIndex = buffer.writerIndex
      buffer.writeInteger(0, as: Int32.self)
      let start = buffer.writerIndex
      try element.encode(into: &buffer, context: context)
      buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex)
    }
  }
}

extension PostgresBindings {
  /// Appends `values` as an array whose missing elements are NULL.
  mutating func appendNullable<Element: PostgresArrayEncodable>(_ values: [Element?]) throws {
    try append(NullableArray(values))
  }
}

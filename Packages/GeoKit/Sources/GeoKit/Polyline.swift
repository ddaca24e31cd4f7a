/// Google's encoded polyline format (precision 5 as used by the Directions API, or 6 as used by OSRM/Valhalla).
///
/// ```swift
/// let text = Polyline.encode(track)                        // "_p~iF~ps|U_ulLnnqC_mqNvxq`@"
/// let points = try Polyline.decode(text, precision: 5)
/// ```
public enum Polyline {
  /// Encodes `coordinates` with `precision` decimal digits (5 and 6 are the usual ones; clamped to 0…9).
  /// Arithmetic is 64-bit, so no value overflows.
  public static func encode(_ coordinates: some Sequence<Coordinate>, precision: Int = 5) -> String {
    let factor = scale(precision)
    let points = Array(coordinates)
    // A 64-bit zigzag value needs at most 13 characters; two values per point.
    return String(unsafeUninitializedCapacity: points.count * 26) { buffer in
      var index = 0
      var previousLatitude: Int64 = 0
      var previousLongitude: Int64 = 0
      for coordinate in points {
        let latitude = Int64((coordinate.latitude * factor).rounded())
        let longitude = Int64((coordinate.longitude * factor).rounded())
        write(latitude &- previousLatitude, to: buffer, at: &index)
        write(longitude &- previousLongitude, to: buffer, at: &index)
        previousLatitude = latitude
        previousLongitude = longitude
      }
      return index
    }
  }

  /// Decodes an encoded polyline with `precision` decimal digits.
  /// - Throws: ``PolylineError`` on a character outside '?'…'~', a truncated value, a value too long for 64 bits,
  ///   a missing longitude or an out-of-range latitude.
  public static func decode(_ text: some StringProtocol, precision: Int = 5) throws(PolylineError) -> [Coordinate] {
    var text = String(text)
    let result = text.withUTF8 { bytes in Result { () throws(PolylineError) in try decode(bytes, precision: precision) }
    }
    return try result.get()
  }

  static func decode(_ bytes: UnsafeBufferPointer<UInt8>, precision: Int) throws(PolylineError) -> [Coordinate] {
    let factor = scale(precision)
    var coordinates: [Coordinate] = []
    coordinates.reserveCapacity(bytes.count / 8)
    var latitude: Int64 = 0
    var longitude: Int64 = 0
    var offset = 0
    while offset < bytes.count {
      let deltaLatitude = try readValue(bytes, offset: &offset)
      guard offset < bytes.count else { throw .missingLongitude(pointIndex: coordinates.count) }
      let deltaLongitude = try readValue(bytes, offset: &offset)
      latitude &+= deltaLatitude
      longitude &+= deltaLongitude
      let lat = Double(latitude) / factor
      let lon = Double(longitude) / factor
      guard let coordinate = try? Coordinate(latitude: lat, longitude: lon) else {
        throw .invalidCoordinate(pointIndex: coordinates.count, latitude: lat, longitude: lon)
      }
      coordinates.append(coordinate)
    }
    return coordinates
  }

  static func scale(_ precision: Int) -> Double {
    var factor = 1.0
    for _ in 0..<max(0, min(precision, 9)) { factor *= 10 }
    return factor
  }

  @inline(__always)
  static func write(_ value: Int64, to buffer: UnsafeMutableBufferPointer<UInt8>, at index: inout Int) {
    var zigzag = UInt64(bitPattern: value << 1) ^ UInt64(bitPattern: value >> 63)
    while zigzag >= 0x20 {
      buffer[index] = UInt8(truncatingIfNeeded: (zigzag & 0x1F) | 0x20) + 63
      index += 1
      zigzag >>= 5
    }
    buffer[index] = UInt8(truncatingIfNeeded: zigzag) + 63
    index += 1
  }

  /// Reads one zigzag varint starting at `offset` (which must be inside `bytes`) and moves `offset` past it.
  @inline(__always)
  static func readValue(_ bytes: UnsafeBufferPointer<UInt8>, offset: inout Int) throws(PolylineError) -> Int64 {
    var result: UInt64 = 0
    var shift: UInt64 = 0
    while true {
      guard offset < bytes.count else { throw .truncated(offset: offset) }
      let byte = bytes[offset]
      guard byte >= 63, byte <= 126 else { throw .invalidCharacter(byte, offset: offset) }
      guard shift < 64 else { throw .valueTooLong(offset: offset) }
      offset += 1
      let chunk = UInt64(byte - 63)
      result |= (chunk & 0x1F) << shift
      shift += 5
      if chunk < 0x20 { break }
    }
    let magnitude = Int64(bitPattern: result >> 1)
    return result & 1 == 0 ? magnitude : ~magnitude
  }
}

/// Why an encoded polyline could not be decoded.
public enum PolylineError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A byte outside the polyline alphabet ('?' to '~') at this offset.
  case invalidCharacter(UInt8, offset: Int)
  /// The text ends in the middle of a value.
  case truncated(offset: Int)
  /// A value has more 5-bit chunks than fit in 64 bits.
  case valueTooLong(offset: Int)
  /// The text ends after a latitude without its longitude.
  case missingLongitude(pointIndex: Int)
  /// A decoded point is not a valid coordinate.
  case invalidCoordinate(pointIndex: Int, latitude: Double, longitude: Double)

  /// What was wrong and where in the input.
  public var description: String {
    switch self {
    case .invalidCharacter(let byte, let offset): "byte \(byte) at offset \(offset) is not a polyline character"
    case .truncated(let offset): "polyline ends in the middle of a value at offset \(offset)"
    case .valueTooLong(let offset): "polyline value at offset \(offset) does not fit in 64 bits"
    case .missingLongitude(let index): "polyline point \(index) has a latitude but no longitude"
    case .invalidCoordinate(let index, let latitude, let longitude):
      "polyline point \(index) (\(latitude), \(longitude)) is not a valid coordinate"
    }
  }
}

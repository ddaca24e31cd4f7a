import Testing

@testable import GeoKit

/// Encoding against exact rational bisection (Tools/geo-fixtures/geohash_exact.py): points on, one ulp below and one
/// ulp above the cell edges of every precision, signed zeros, tiny and huge values, and random points.
@Suite struct GeohashExactTests {
  struct Case: CustomStringConvertible {
    let latitude: Double
    let longitude: Double
    let normalizedLongitude: Double
    let value: UInt64
    let hash: String
    var description: String { "(\(latitude), \(longitude))" }
  }

  static let cases: [Case] = {
    guard let rows = try? Fixture.rows("geohash-exact.txt") else { return [] }
    return rows.compactMap { row in
      guard row.count == 5, let latitude = Double(row[0]), let longitude = Double(row[1]),
        let normalized = Double(row[2]), let value = UInt64(row[3])
      else { return nil }
      return Case(
        latitude: latitude, longitude: longitude, normalizedLongitude: normalized, value: value, hash: String(row[4]))
    }
  }()

  /// The cases as coordinates (every input is finite with |lat| ≤ 90; longitudes past ±180, such as one ulp below
  /// -180, are brought into range by ``Coordinate/normalizedLongitude(_:)``, as geometry inside the kit does).
  static func points() throws -> [(Case, Coordinate)] {
    cases.map {
      ($0, Coordinate(uncheckedLatitude: $0.latitude, longitude: Coordinate.normalizedLongitude($0.longitude)))
    }
  }

  /// Runs `check` on every case and expects no failure; reports the first few.
  static func expectNone(_ check: (Case, Coordinate) throws -> [String]) throws {
    let points = try points()
    #expect(points.count > 3000)
    var failures: [String] = []
    for (reference, point) in points { failures += try check(reference, point) }
    let count = failures.count
    #expect(count == 0, "first failures: \(failures.prefix(8).joined(separator: "; "))")
  }

  @Test func fixtureCoversTheEdgesOfEveryPrecision() throws {
    let rows = try Fixture.rows("geohash-exact.txt")
    #expect(Self.cases.count == rows.count)
    #expect(Self.cases.contains { $0.latitude == 90 && $0.longitude == -1e-300 && $0.hash.hasPrefix("g") })
  }

  @Test func longitudesWrapExactly() throws {
    try Self.expectNone { reference, point in
      point.longitude == reference.normalizedLongitude && point.longitude < 180
        ? [] : ["\(reference): longitude \(point.longitude), expected \(reference.normalizedLongitude)"]
    }
  }

  @Test func integerEncodingIsExactAtEveryBitPrecision() throws {
    try Self.expectNone { reference, point in
      var failures: [String] = []
      for bits in 1...64 {
        let value = try GeohashCell(point, bits: bits).value
        if value != reference.value >> UInt64(64 - bits) { failures.append("\(reference) \(bits) bits: \(value)") }
      }
      return failures
    }
  }

  @Test func stringEncodingIsExactAtEveryPrecision() throws {
    try Self.expectNone { reference, point in
      var failures: [String] = []
      for precision in 1...Geohash.maxPrecision {
        let expected = String(reference.hash.prefix(precision))
        let hash = try Geohash.encode(point, precision: precision)
        let text = try Geohash.encodeText(point, precision: precision)
        let cell = try GeohashCell(point, bits: 5 * precision).string
        if hash != expected || String(text) != expected || cell != expected {
          failures.append("\(reference) precision \(precision): \(hash) \(text) \(cell ?? "-"), expected \(expected)")
        }
      }
      return failures
    }
  }

  /// A cell holds its south and west edges and not its north and east ones (except at 90° and 180°), as bisection
  /// assigns them; decoding and `contains` agree.
  @Test func everyCellContainsItsPoints() throws {
    try Self.expectNone { reference, point in
      var failures: [String] = []
      for bits in 1...64 {
        let cell = try GeohashCell(point, bits: bits)
        let box = cell.box
        let inside =
          box.south <= point.latitude && (point.latitude < box.north || box.north == 90)
          && box.west <= point.longitude && (point.longitude < box.east || box.east == 180)
        if !inside || !cell.contains(point) { failures.append("\(reference) \(bits) bits: \(cell) \(box)") }
        if bits % 5 == 0, let string = cell.string, try !Geohash.decode(string).box.contains(point) {
          failures.append("\(reference) \(string) decodes to a box without the point")
        }
      }
      return failures
    }
  }

  /// Points on a cell's north and east edges encode to the northern and eastern neighbours, and points one ulp
  /// beyond its south and west edges to the southern and western ones (longitude wraps).
  @Test func neighborsAgreeWithEncodingAtTheEdges() throws {
    try Self.expectNone { reference, point in
      var failures: [String] = []
      for bits in [1, 2, 5, 13, 30, 31, 47, 60, 63, 64] {
        let cell = try GeohashCell(point, bits: bits)
        let box = cell.box
        let probes: [(GeohashDirection, Double, Double)] = [
          (.north, box.north, point.longitude), (.east, point.latitude, box.east),
          (.south, box.south.nextDown, point.longitude), (.west, point.latitude, box.west.nextDown),
          (.northEast, box.north, box.east), (.southWest, box.south.nextDown, box.west.nextDown),
        ]
        for (direction, latitude, longitude) in probes where latitude >= -90 && latitude < 90 {
          let probe = Coordinate(uncheckedLatitude: latitude, longitude: Coordinate.normalizedLongitude(longitude))
          let encoded = try GeohashCell(probe, bits: bits)
          if cell.neighbor(direction) != encoded {
            failures.append(
              "\(reference) \(bits) bits \(direction): \(encoded), neighbour \(String(describing: cell.neighbor(direction)))"
            )
          }
        }
        let inner = try Coordinate(latitude: box.north.nextDown, longitude: box.east.nextDown)
        if try GeohashCell(inner, bits: bits) != cell { failures.append("\(reference) \(bits) bits: inner corner") }
      }
      return failures
    }
  }

  /// The corners of a box one ulp wide at each point are covered, whichever side of an edge they fall on.
  @Test func coveringsAgreeWithEncoding() throws {
    try Self.expectNone { reference, point in
      let north = min(90, point.latitude.nextUp)
      let east = point.longitude.nextUp
      let box = BoundingBox(south: point.latitude, west: point.longitude, north: north, east: east)
      let covering = try GeohashCovering(box: box, maxCells: 4, maxBits: 64)
      let corners = [
        point, Coordinate(uncheckedLatitude: north, longitude: point.longitude),
        try Coordinate(latitude: point.latitude, longitude: east), try Coordinate(latitude: north, longitude: east),
      ]
      // (A corner at longitude 180 becomes -180, which the box does not contain.)
      return corners.filter { box.contains($0) && !covering.contains($0) }.map {
        "\(reference): covering misses \($0)"
      }
    }
  }

  @Test func examplesFromTheIssue() throws {
    #expect(try Geohash.encode(Coordinate(latitude: 90, longitude: -1e-300), precision: 1) == "g")
    #expect(try Geohash.encode(Coordinate(latitude: -1e-300, longitude: 180), precision: 1) == "2")
    #expect(try Geohash.encode(Coordinate(latitude: -0.04394531250000001, longitude: 0), precision: 5) == "kpbp8")
    #expect(try Geohash.encode(Coordinate(latitude: 0, longitude: -0.04394531250000001), precision: 5) == "ebpbn")
    #expect(try Geohash.encode(Coordinate(latitude: -0.0, longitude: -0.0), precision: 2) == "s0")
    #expect(try GeohashCell(Coordinate(latitude: 90, longitude: 180), bits: 64).value == 0x5555_5555_5555_5555)
    #expect(try GeohashCell(Coordinate(uncheckedLatitude: 90, longitude: 180), bits: 64).value == .max)
  }
}

import Testing

@testable import GeoKit

@Suite struct GeohashTests {
  @Test func encodeMatchesPythonGeohash() throws {
    let rows = try Fixture.rows("geohash-encode.txt")
    #expect(rows.count > 4000)
    for row in rows {
      let point = try Coordinate(latitude: Double(row[0]) ?? .nan, longitude: Double(row[1]) ?? .nan)
      let precision = Int(row[2]) ?? 0
      #expect(try Geohash.encode(point, precision: precision) == String(row[3]), "\(row)")
      #expect(try GeohashCell(point, bits: 64).value == UInt64(row[4]), "\(row)")
      #expect(try GeohashCell(point, bits: 5 * precision).string == String(row[3]))
      let text = try Geohash.encodeText(point, precision: precision)
      #expect(String(text) == String(row[3]), "\(row)")
      #expect(text.count == precision)
    }
  }

  @Test func pairTableSpellsEveryTenBitValue() {
    let alphabet = Array("\(Geohash.alphabet)")
    let pairs = Array("\(Geohash.pairs)")
    #expect(pairs.count == 2048)
    for value in 0..<1024 {
      #expect(String(pairs[2 * value...2 * value + 1]) == String([alphabet[value >> 5], alphabet[value & 31]]))
    }
  }

  @Test func axisTableSpellsEveryPairOfAxisBits() {
    let pairs = Array("\(Geohash.pairs)")
    let axisPairs = Array("\(Geohash.axisPairs)")
    #expect(axisPairs.count == 2048)
    for longitude in 0..<32 {
      for latitude in 0..<32 {
        let interleaved = Int(GeohashCell.spread(UInt64(longitude)) << 1 | GeohashCell.spread(UInt64(latitude)))
        let offset = 2 * (longitude << 5 | latitude)
        #expect(axisPairs[offset...offset + 1] == pairs[2 * interleaved...2 * interleaved + 1])
      }
    }
  }

  /// `GeohashText` is equal, hashed and ordered as its string is, for every length and for prefixes.
  @Test func textBehavesLikeItsString() throws {
    var random = SeededRandom(seed: 9)
    var texts: [GeohashText] = []
    for _ in 0..<400 {
      let point = random.coordinate()
      let precision = Int.random(in: 1...12, using: &random)
      texts.append(try Geohash.encodeText(point, precision: precision))
      texts.append(try Geohash.encodeText(point, precision: max(1, precision - 1)))
    }
    let strings = texts.map(String.init)
    #expect(texts.sorted().map(String.init) == strings.sorted())
    for (text, string) in zip(texts, strings) {
      #expect(text.description == string && text.count == string.utf8.count)
      #expect(text.withUTF8 { Array($0) } == Array(string.utf8))
    }
    #expect(Set(texts).count == Set(strings).count)
  }

  @Test func inlineTextOrdersAndHashesLikeStrings() throws {
    let hashes = ["u", "u4", "u4pruydqqvj", "u4pruydqqvjz", "s0000000000", "zzzzzzzzzzzz", "0"]
    let texts = try hashes.map { hash in try Geohash.encodeText(Geohash.decode(hash).center, precision: hash.count) }
    #expect(texts.map(String.init) == hashes)
    #expect(texts.sorted().map(String.init) == hashes.sorted())
    #expect(Set(texts).count == hashes.count)
    #expect(texts[2].withUTF8 { Array($0) } == Array("u4pruydqqvj".utf8))
  }

  @Test func decodeMatchesPythonGeohash() throws {
    for row in try Fixture.rows("geohash-decode.txt") {
      let cell = try Geohash.decode(row[0])
      let expected = row[1...].map { Double($0) ?? .nan }
      #expect(cell.center.latitude == expected[0] && cell.center.longitude == expected[1], "\(row)")
      #expect(cell.latitudeError == expected[2] && cell.longitudeError == expected[3], "\(row)")
      #expect(cell.string == String(row[0]))
    }
  }

  @Test func neighborsMatchPythonGeohash() throws {
    let names: [GeohashDirection] = [.north, .northEast, .east, .southEast, .south, .southWest, .west, .northWest]
    for row in try Fixture.rows("geohash-neighbors.txt") {
      let neighbors = try Geohash.neighbors(of: row[0])
      for (index, direction) in names.enumerated() {
        let expected = row[index + 1] == "-" ? nil : String(row[index + 1])
        #expect(neighbors[direction] == expected, "\(row[0]) \(direction)")
      }
    }
  }

  @Test func noNeighborPastAPole() throws {
    let top = try Geohash.neighbors(of: "zzzz")
    #expect(top.north == nil && top.northEast == nil && top.northWest == nil)
    #expect(top.east == "bpbp")  // wraps across the antimeridian
    let bottom = try Geohash.neighbors(of: "0")
    #expect(bottom.south == nil && bottom.southWest == nil && bottom.southEast == nil)
    #expect(bottom.west == "p")
  }

  @Test func rejectsBadInput() throws {
    #expect(throws: GeohashError.invalidCharacter("a", offset: 2)) { try Geohash.decode("u4apr") }
    #expect(throws: GeohashError.invalidLength(0)) { try Geohash.decode("") }
    #expect(throws: GeohashError.invalidLength(13)) { try Geohash.decode("u4pruydqqvjvu") }
    #expect(throws: GeohashError.invalidCharacter("é", offset: 1)) { try Geohash.decode("uéb") }
    let point = try Coordinate(latitude: 1, longitude: 2)
    #expect(throws: GeohashError.invalidPrecision(13)) { try Geohash.encode(point, precision: 13) }
    #expect(throws: GeohashError.invalidPrecision(0)) { try Geohash.encode(point, precision: 0) }
    // Seven characters but more than 12 bytes: the fault is the non-ASCII character, not the length.
    #expect(throws: GeohashError.invalidCharacter("ж", offset: 3)) { try Geohash.decode("u4pжжжж") }
    #expect(throws: GeohashError.invalidLength(13)) { try Geohash.decode("u4pruydqqvjzz") }
    #expect(throws: GeohashError.invalidBits(65)) { try GeohashCell(point, bits: 65) }
    #expect(throws: GeohashError.valueTooWide(8, bits: 3)) { try GeohashCell(value: 8, bits: 3) }
    #expect(try Geohash.decode("EZS42") == Geohash.decode("ezs42"))
  }

  @Test func integerAndStringFormsAgree() throws {
    let cell = try GeohashCell("ezs42")
    #expect(cell.bits == 25)
    #expect(try GeohashCell(value: cell.value, bits: 25).string == "ezs42")
    #expect(try cell.parent(bits: 10).string == "ez")
    #expect(try GeohashCell(value: 5, bits: 3).string == nil)
    let range = try cell.range(bits: 64)
    let point = try Coordinate(latitude: 42.6, longitude: -5.6)
    #expect(range.contains(try GeohashCell(point, bits: 64).value))
  }

  @Test func decodedCellContainsEncodedPoint() throws {
    var random = SeededRandom(seed: 7)
    for _ in 0..<5000 {
      let point = random.coordinate()
      for bits in [1, 2, 7, 25, 33, 52, 60, 63, 64] {
        let cell = try GeohashCell(point, bits: bits)
        #expect(cell.box.contains(point), "\(point) \(bits)")
        #expect(cell.contains(point))
        #expect(abs(cell.center.latitude - point.latitude) <= cell.latitudeError)
      }
      let precision = Int.random(in: 1...12, using: &random)
      let box = try Geohash.decode(Geohash.encode(point, precision: precision)).box
      #expect(box.contains(point))
    }
  }

  @Test func neighborsShareAnEdgeOrCorner() throws {
    var random = SeededRandom(seed: 8)
    for _ in 0..<2000 {
      let bits = Int.random(in: 1...64, using: &random)
      let cell = try GeohashCell(random.coordinate(), bits: bits)
      let box = cell.box
      for direction in GeohashDirection.allCases {
        guard let neighbor = cell.neighbor(direction) else {
          #expect(direction.step.latitude == 1 ? box.north == 90 : box.south == -90)
          continue
        }
        let other = neighbor.box
        #expect(neighbor.bits == bits && neighbor != cell || bits <= 2)
        let latitudeTouches =
          direction.step.latitude == 1
          ? other.south == box.north
          : direction.step.latitude == -1 ? other.north == box.south : other.south == box.south
        let longitudeTouches: Bool
        switch direction.step.longitude {
        case 1: longitudeTouches = other.west == box.east || (box.east == 180 && other.west == -180)
        case -1: longitudeTouches = other.east == box.west || (box.west == -180 && other.east == 180)
        default: longitudeTouches = other.west == box.west
        }
        #expect(latitudeTouches && longitudeTouches, "\(cell) \(direction) \(neighbor)")
      }
    }
  }

  @Test func precisionForRadius() {
    #expect(Geohash.precision(forRadius: 1_000) == 5)  // 4.9 km × 4.9 km cells
    #expect(Geohash.precision(forRadius: 100) == 7)  // 153 m × 153 m
    #expect(Geohash.precision(forRadius: 0.01) == 12)
    #expect(Geohash.precision(forRadius: 10_000_000) == 1)
  }
}

/// A deterministic random source for property tests (SplitMix64).
struct SeededRandom: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  mutating func coordinate(latitudes: ClosedRange<Double> = -90...90) -> Coordinate {
    Coordinate(
      uncheckedLatitude: Double.random(in: latitudes, using: &self),
      longitude: Double.random(in: -180..<180, using: &self))
  }
}

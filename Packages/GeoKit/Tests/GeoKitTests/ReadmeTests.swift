import Testing

@testable import GeoKit

/// The README's examples, so that they keep compiling and saying the truth.
@Suite struct ReadmeTests {
  @Test func examples() throws {
    let kyiv = try Coordinate(latitude: 50.4501, longitude: 30.5234)
    let lviv = try Coordinate(latitude: 49.8397, longitude: 24.0297)

    let hash = try Geohash.encode(kyiv, precision: 7)
    #expect(hash == "u8vxn84")
    let cell = try Geohash.decode(hash)
    #expect(cell.box.contains(kyiv))
    #expect(try Geohash.neighbors(of: hash).north != nil)
    #expect(try String(Geohash.encodeText(kyiv, precision: 7)) == "u8vxn84")
    #expect(throws: GeohashError.invalidCharacter("a", offset: 4)) { try Geohash.validate("u8vxa") }

    let key = try GeohashCell(kyiv, bits: 62).value
    #expect(key <= UInt64(Int64.max))
    let coarse = try GeohashCell(kyiv, bits: 26)
    #expect(coarse.neighbor(.east) != nil && coarse.string == nil)
    #expect(try GeohashCell(value: key, bits: 62).parent(bits: 35).string == "u8vxn84")

    let covering = try GeohashCovering(center: kyiv, radius: 1_000, maxCells: 16)
    #expect(covering.ranges(keyBits: 62).contains { $0.contains(key) })
    #expect(Geohash.precision(forRadius: 1_000) == 5)

    let haversine = kyiv.haversineDistance(to: lviv)
    let geodesic = kyiv.geodesicDistance(to: lviv)
    #expect(abs(haversine - geodesic) / geodesic < 0.0056)
    let line = Geodesic.wgs84.inverse(from: kyiv, to: lviv)
    #expect(line.distance == geodesic && line.initialAzimuth == kyiv.initialBearing(to: lviv))
    let west = try kyiv.destination(bearing: 270, distance: 5_000)
    #expect(abs(kyiv.geodesicDistance(to: west) - 5_000) < 1e-6)
    #expect(abs(CheapRuler(latitude: kyiv.latitude).distance(kyiv, west) - 5_000) < 0.01)
    #expect(BoundingBox(around: kyiv, radius: 2_000).contains(kyiv))

    #expect(!Geofence.circle(center: kyiv, radius: 150).contains(lviv))

    let towns = NearestPointIndex([kyiv, lviv])
    let nearest = try #require(towns.nearest(to: west, k: 1).first)
    #expect(nearest.index == 0 && abs(nearest.distance - 5_000) < 20)
  }
}

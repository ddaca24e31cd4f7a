import Testing

@testable import GeoKit

@Suite struct CoordinateTests {
  @Test func normalizesLongitude() throws {
    #expect(try Coordinate(latitude: 0, longitude: 180).longitude == -180)
    #expect(try Coordinate(latitude: 0, longitude: 540).longitude == -180)
    #expect(try Coordinate(latitude: 0, longitude: -190).longitude == 170)
  }

  @Test func rejectsOutOfRangeLatitude() {
    #expect(throws: CoordinateError.latitudeOutOfRange(91)) { try Coordinate(latitude: 91, longitude: 0) }
  }
}

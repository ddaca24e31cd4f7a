import Foundation
import Testing

@testable import GeoKit

@Suite struct CoordinateTests {
  @Test func keepsTheMeridianOf180AsMinus180() throws {
    #expect(try Coordinate(latitude: 0, longitude: 180).longitude == -180)
    #expect(try Coordinate(latitude: 0, longitude: -180).longitude == -180)
    #expect(Coordinate.normalizedLongitude(540) == -180)
    #expect(Coordinate.normalizedLongitude(-190) == 170)
  }

  @Test func rejectsOutOfRangeLatitude() {
    #expect(throws: CoordinateError.latitudeOutOfRange(91)) { try Coordinate(latitude: 91, longitude: 0) }
    #expect(throws: CoordinateError.latitudeOutOfRange(-90.000_001)) {
      try Coordinate(latitude: -90.000_001, longitude: 0)
    }
  }

  /// A longitude outside [-180, 180] is a mistake, not a point to wrap: 181 is refused, not stored as -179.
  @Test func refusesOutOfRangeLongitudeInsteadOfWrapping() {
    #expect(throws: CoordinateError.longitudeOutOfRange(181)) { try Coordinate(latitude: 0, longitude: 181) }
    #expect(throws: CoordinateError.longitudeOutOfRange(-540)) { try Coordinate(latitude: 0, longitude: -540) }
    #expect(throws: CoordinateError.notFinite(name: "longitude", value: .infinity)) {
      try Coordinate(latitude: 0, longitude: .infinity)
    }
  }

  @Test func decodingNamesTheFieldOutOfRange() throws {
    let decoder = JSONDecoder()
    for (json, key) in [(#"{"lat": 91, "lon": 0}"#, "lat"), (#"{"lat": 0, "lon": 181}"#, "lon")] {
      do {
        _ = try decoder.decode(Coordinate.self, from: Data(json.utf8))
        Issue.record("\(json) was accepted")
      } catch DecodingError.dataCorrupted(let context) {
        #expect(context.codingPath.map(\.stringValue) == [key])
      }
    }
  }
}

import DomainKit
import Foundation
import MeridianStore
import Testing

/// A person's state per fence is stored as JSON and read on every commit of the geofence monitor without
/// `JSONDecoder` (``GeofenceState/decoded(_:)``): what it reads must be what `JSONDecoder` reads, however the JSON is
/// ordered and spaced, and anything else must still fail or decode as `JSONDecoder` says.
@Suite("Geofence states: their stored form")
struct GeofenceStateStorageTests {
  static let states = [
    GeofenceState(),
    GeofenceState(presence: .inside, since: 1_800_000_000_000, lastFixAt: 1_800_000_060_000, outsideStreak: 2),
    GeofenceState(presence: .outside, since: -5, lastFixAt: nil, outsideStreak: 0, dwellReported: true),
    GeofenceState(presence: .unknown, since: nil, lastFixAt: 9_007_199_254_740_993),
  ]

  @Test func theStoredFormReadsBackAsJSONDecoderReadsIt() throws {
    for state in Self.states {
      let text = try state.encoded()
      #expect(try GeofenceState.decoded(text) == state, "\(text)")
      #expect(try JSONDecoder().decode(GeofenceState.self, from: Data(text.utf8)) == state, "\(text)")
      // What states were stored as before: `JSONEncoder`'s text.
      let encoder = String(decoding: try JSONEncoder().encode(state), as: UTF8.self)
      #expect(try GeofenceState.decoded(encoder) == state, "\(encoder)")
    }
  }

  @Test func anyKeyOrderSpacingAndNullsAreRead() throws {
    let text = #"{"since": 12, "presence": "inside", "lastFixAt": null, "dwellReported": true, "outsideStreak": 1}"#
    #expect(
      try GeofenceState.decoded(text)
        == GeofenceState(presence: .inside, since: 12, lastFixAt: nil, outsideStreak: 1, dwellReported: true))
  }

  @Test func anythingElseIsReadOrRefusedAsJSONDecoderDoes() throws {
    // A field the fast reading does not know: JSONDecoder's answer (it ignores unknown keys).
    let extra = #"{"presence":"outside","outsideStreak":0,"dwellReported":false,"note":"x"}"#
    #expect(try GeofenceState.decoded(extra) == GeofenceState(presence: .outside))
    for broken in [
      #"{"presence":"nearby","outsideStreak":0,"dwellReported":false}"#,
      #"{"presence":"inside","outsideStreak":0}"#,
      #"{"presence":"inside","outsideStreak":0.5,"dwellReported":false}"#,
      #"{"presence":"inside","outsideStreak":0,"dwellReported":false"#,
      "",
    ] {
      #expect(throws: (any Error).self, "\(broken)") { try GeofenceState.decoded(broken) }
    }
  }
}

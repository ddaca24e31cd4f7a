import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianServer
import NetworkingKit
import Testing

/// Live only (issue 39 §4) over HTTP: an account that keeps only its last position stores no history from any
/// ingest path while the position its friends see moves and its geofences are evaluated; imports are refused; the
/// switch can delete the history stored before.
@Suite("Live only over HTTP")
struct LiveOnlyTests {
  @Test(arguments: PollTests.engines)
  func uploadsMoveTheLivePositionWithoutHistoryAndImportsAreRefused(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let friends = try #require(try await anna.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      let store = server.app.environment.store
      // The acknowledgement that the geofences evaluated every upload (they hold its fixes until then).
      func evaluated() async throws {
        try await GeofenceQueueTests.waitFor("the geofence queue's evaluation") {
          try await store.geofenceQueueBacklog().entries == 0
        }
      }
      func history() async throws -> [Int64] {
        try await anna.send(API.history, parameters: HistoryQuery(limit: 1000)).fixes.map(\.timestamp)
      }
      func seenByBob() async throws -> Int64? {
        try await bob.send(API.userLocation, parameters: UserRef(id: annaSession.userId)).fix?.timestamp
      }

      let start = GeofenceTests.now() - 3_600_000
      let old = try (0..<3).map { try GeofenceTests.fix(start + Int64($0) * 1_000, 2_000) }
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: old))
      try await evaluated()
      let previous = old.reversed().map(\.timestamp)
      _ = try await anna.send(
        API.createGeofence,
        body: NewGeofence(name: "Home", shape: .circle(center: GeofenceTests.home, radius: 100)))

      #expect(
        try await anna.send(API.updateSettings, body: AccountSettingsUpdate(liveOnly: true))
          == AccountSettingsChange(settings: AccountSettings(liveOnly: true), deletedFixes: 0))
      #expect(try await anna.send(API.me).settings.liveOnly)
      #expect(try await !bob.send(API.me).settings.liveOnly)

      // POST /v1/fixes: Anna comes home; her friend sees her there, her fence sees her arrive, her history holds
      // only the new last position beside what was stored before.
      let arriving = try [1_500.0, 600, 0].enumerated().map { index, metres in
        try GeofenceTests.fix(start + 60_000 + Int64(index) * 1_000, metres)
      }
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: arriving))
      try await evaluated()
      #expect(try await seenByBob() == arriving[2].timestamp)
      #expect(try await history() == [arriving[2].timestamp] + previous)
      #expect(
        try await anna.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items.map(\.kind) == [.enter])

      // OwnTracks' /pub.
      let tst = (start + 120_000) / 1_000
      let published = try await server.ownTracks(
        ownTracksLocation(lat: 50.4502, lon: 30.5235, tst: tst), username: "anna@example.com",
        password: PhoneAppIngestTests.password)
      #expect(published.head.status == .ok)
      try await evaluated()
      #expect(try await seenByBob() == tst * 1_000)
      #expect(try await history() == [tst * 1_000] + previous)

      // OsmAnd's /osmand.
      let identifier = try await anna.send(API.enableOsmAnd, parameters: DeviceRef(id: "phone")).identifier
      let reported = try await server.phoneAppRequest(
        .get, "/osmand?id=\(identifier)&lat=50.4503&lon=30.5236&timestamp=\(tst + 60)")
      #expect(reported.head.status == .ok)
      try await evaluated()
      #expect(try await seenByBob() == (tst + 60) * 1_000)
      #expect(try await history() == [(tst + 60) * 1_000] + previous)

      // An import is refused with a message that says why, and stores nothing.
      let file = Data("time,lat,lon\n2024-02-01T10:00:00Z,50.45,30.52\n".utf8)
      let refused = try await HistoryImportTests.post(server, annaSession.token, file)
      let error = refused.json["error"] as? [String: Any]
      #expect(refused.status == 409 && error?["code"] as? String == "live_only", "\(refused.json)")
      #expect((error?["message"] as? String)?.contains("live only") == true, "\(refused.json)")
      #expect(try await history() == [(tst + 60) * 1_000] + previous)

      // `deleteHistory` goes with turning live only on; then the history before goes, the last position stays.
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.updateSettings, body: AccountSettingsUpdate(deleteHistory: true))
      }
      #expect(
        try await anna.send(API.updateSettings, body: AccountSettingsUpdate(liveOnly: true, deleteHistory: true))
          == AccountSettingsChange(settings: AccountSettings(liveOnly: true), deletedFixes: 3))
      #expect(try await history() == [(tst + 60) * 1_000])
      #expect(try await seenByBob() == (tst + 60) * 1_000)

      // Turned off, uploads are history again and imports are taken.
      _ = try await anna.send(API.updateSettings, body: AccountSettingsUpdate(liveOnly: false))
      #expect(try await !anna.send(API.me).settings.liveOnly)
      let imported = try await HistoryImportTests.post(server, annaSession.token, file)
      #expect(imported.status == 200, "\(imported.json)")
      #expect(try await history().count == 2)
    }
  }
}

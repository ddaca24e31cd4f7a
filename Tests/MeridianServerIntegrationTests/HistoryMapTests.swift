import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianTestSupport
import NetworkingKit
import Testing

/// The map endpoint with a raw query, to send what `HistoryMapQuery` never writes.
private let rawMap = Endpoint<[QueryItem], NoBody, HistoryMap>(
  .get, PathTemplate(stringLiteral: API.historyMap.pathTemplate), query: { $0 })

/// `GET /v1/history/map` (issue 38 §2): a long history answered in bounded size — counted cells for a wide view at a
/// low zoom, simplified tracks of stored fixes for a small view at a high zoom — only ever the caller's fixes.
@Suite("The history map", .inProcess)
struct HistoryMapTests {
  /// Fixes in the generated history.
  static let count = 50_000
  /// Fixes per north-going sweep of the generated track.
  static let sweep = 5_000
  static let start: Int64 = 1_700_000_000_000

  /// Anna's track: sweeps 0.5° north from 50°N, 10 s and about 11 m apart, each 0.05° east of the last and wavering
  /// about 70 m east and west.
  static func track(count: Int, device: String, latitudeOffset: Double = 0, start: Int64 = start) throws
    -> [LocationFix]
  {
    try (0..<count).map { index in
      let step = index % sweep
      return try LocationFix(
        deviceID: DeviceID(device), timestamp: start + Int64(index) * 10_000,
        latitude: 50 + Double(step) * 0.0001 + latitudeOffset,
        longitude: 30 + Double(index / sweep) * 0.05 + 0.001 * sin(Double(step) / 50), horizontalAccuracy: 5)
    }
  }

  static func post(_ fixes: [LocationFix], device: String, as client: NetworkClient) async throws {
    for offset in stride(from: 0, to: fixes.count, by: 1000) {
      let batch = Array(fixes[offset..<min(offset + 1000, fixes.count)])
      _ = try await client.send(API.postFixes, body: FixBatch(deviceId: DeviceID(device), fixes: batch))
    }
  }

  static func vertices(_ map: HistoryMap) -> [HistoryMapPoint] { map.tracks.flatMap(\.points) }

  @Test(arguments: ["sqlite", "postgres"])
  func aLongHistoryIsCellsWhenWideAndSimplifiedTracksOfStoredFixesWhenNear(_ engine: String) async throws {
    try await PollTests.withServer(engine, clock: nil, { $0.limits.fixesPerAccountPerMinute = 1_000_000 }) { server in
      let (_, anna) = try await server.signUp("anna")
      let (_, bob) = try await server.signUp("bob")
      let annas = try Self.track(count: Self.count, device: "anna-phone")
      try await Self.post(annas, device: "anna-phone", as: anna)
      // Bob walks the same streets a little north, at other times.
      let bobs = try Self.track(count: 6_000, device: "bob-phone", latitudeOffset: 0.00003, start: Self.start + 7)
      try await Self.post(bobs, device: "bob-phone", as: bob)
      let stored = Dictionary(uniqueKeysWithValues: annas.map { ($0.timestamp, $0) })

      // The whole region at zoom 5: more fixes than a screen shows, so cells counting all of Anna's and none of Bob's.
      let wide = try await anna.send(
        API.historyMap,
        parameters: HistoryMapQuery(box: BoundingBox(south: 49, west: 29, north: 51.5, east: 31), zoom: 5))
      #expect(wide.tracks.isEmpty)
      #expect(wide.precision == 2)
      #expect(wide.cells.map(\.count).reduce(0, +) == Self.count)
      #expect(wide.cells.count <= 2_000)
      #expect(wide.fixes == Self.count)
      // The same region at zoom 16 (more fixes than are read for tracks): cells again, of the finest length.
      let dense = try await anna.send(
        API.historyMap,
        parameters: HistoryMapQuery(box: BoundingBox(south: 49, west: 29, north: 51.5, east: 31), zoom: 16))
      #expect(dense.tracks.isEmpty && dense.precision == 6)
      #expect(dense.cells.map(\.count).reduce(0, +) == Self.count && dense.cells.count <= 2_000)

      // One sweep (5,000 fixes) at zoom 12: one track, simplified to far fewer vertices, every one a fix of Anna's in
      // the view, in time order, the first and last of the sweep kept.
      let sweepBox = BoundingBox(south: 49.99, west: 29.99, north: 50.6, east: 30.01)
      let near = try await anna.send(API.historyMap, parameters: HistoryMapQuery(box: sweepBox, zoom: 12))
      #expect(near.cells.isEmpty && near.precision == nil)
      #expect(near.tracks.count == 1)
      #expect(near.fixes == Self.sweep)
      let points = Self.vertices(near)
      #expect(points.count > 10 && points.count < Self.sweep / 10, "\(points.count) vertices")
      #expect(points.first?.timestamp == annas[0].timestamp)
      #expect(points.last?.timestamp == annas[Self.sweep - 1].timestamp)
      #expect(points.map(\.timestamp) == points.map(\.timestamp).sorted())
      for point in points {
        let fix = try #require(stored[point.timestamp], "vertex at \(point.timestamp) is no fix of Anna's")
        #expect(fix.latitude == point.latitude && fix.longitude == point.longitude)
        #expect(sweepBox.contains(Coordinate(uncheckedLatitude: point.latitude, longitude: point.longitude)))
      }
      // The tolerance is a pixel and a half at zoom 12 at the view's latitude.
      #expect(abs(near.tolerance - 156_543.034 * cos(50.295 * .pi / 180) / 4096 * 1.5) < 0.01)

      // A small box crossed by two sweeps half a day apart at zoom 17: two tracks (the gap splits them).
      let small = try await anna.send(
        API.historyMap,
        parameters: HistoryMapQuery(box: BoundingBox(south: 50.1, west: 29.99, north: 50.11, east: 30.06), zoom: 17))
      #expect(small.tracks.count == 2)
      #expect(Self.vertices(small).allSatisfy { stored[$0.timestamp] != nil })
      #expect(Self.vertices(small).count <= 2_000)

      // A view with nothing of Anna's in it answers empty tracks.
      let empty = try await anna.send(
        API.historyMap,
        parameters: HistoryMapQuery(box: BoundingBox(south: -10, west: -10, north: 10, east: 10), zoom: 6))
      #expect(empty.tracks.isEmpty && empty.cells.isEmpty && empty.fixes == 0)
    }
  }

  /// Cells counted from the store's per-day counts, the per-hour counts at a period's ends and, for the parts of an
  /// hour at its ends, from the fixes: a period that starts and ends inside an hour counts exactly its fixes, and
  /// deleted fixes leave the counts.
  @Test(arguments: ["sqlite", "postgres"])
  func cellsOfAPeriodBetweenHoursCountExactlyItsFixesAndForgetDeletedOnes(_ engine: String) async throws {
    try await PollTests.withServer(engine, clock: nil, { $0.limits.fixesPerAccountPerMinute = 1_000_000 }) { server in
      let (_, anna) = try await server.signUp("anna")
      // 3,000 fixes 100 s apart (83 h 20 min from 22:13:20 UTC), zigzagging 2° north and south: too many vertices for
      // tracks at zoom 3 (over 2,000), so the answer is cells.
      let fixes = try (0..<3_000).map { index in
        try LocationFix(
          deviceID: "anna-phone", timestamp: Self.start + Int64(index) * 100_000,
          latitude: index.isMultiple(of: 2) ? 40 : 42, longitude: 10 + Double(index) * 0.001, horizontalAccuracy: 5)
      }
      try await Self.post(fixes, device: "anna-phone", as: anna)
      let box = BoundingBox(south: 30, west: 0, north: 50, east: 20)
      func counted(from: Int64?, to: Int64?) async throws -> HistoryMap {
        try await anna.send(
          API.historyMap, parameters: HistoryMapQuery(history: HistoryQuery(from: from, to: to), box: box, zoom: 3))
      }
      func expected(from: Int64, to: Int64) -> Int { fixes.filter { (from..<to).contains($0.timestamp) }.count }

      let all = try await counted(from: nil, to: nil)
      #expect(all.tracks.isEmpty && all.precision == 2)
      #expect(all.fixes == 3_000 && all.cells.map(\.count).reduce(0, +) == 3_000)
      // From 25 min 5 s in (22:38:25) to 69 h 26 min 40 s in (19:40:00 two days later): parts of two hours at the
      // ends, whole hours up to the first midnight and after the last, two whole days between.
      let (from, to) = (Self.start + 1_505_000, Self.start + 250_000_000)
      let period = try await counted(from: from, to: to)
      #expect(period.fixes == expected(from: from, to: to))
      #expect(period.cells.map(\.count).reduce(0, +) == expected(from: from, to: to))
      // Within one hour: counted from the fixes alone.
      let short = try await counted(from: Self.start + 100_000, to: Self.start + 110_000)
      #expect(short.fixes == 1)

      // Deleting the fixes of 05:00–06:00 on the second whole day (as the history's DELETE does) takes them out of
      // the counts of that hour and that day.
      let (hour, day) = (HistoryCells.hour, HistoryCells.day)
      let deletedHour = (Self.start / day + 2) * day + 5 * hour
      let deleted = try await anna.send(
        API.deleteHistory, parameters: HistoryQuery(from: deletedHour, to: deletedHour + hour))
      #expect(deleted.deleted == 36)
      let left = try await counted(from: nil, to: nil)
      #expect(left.fixes == 2_964 && left.cells.map(\.count).reduce(0, +) == 2_964)
      let afterwards = try await counted(from: from, to: to)
      #expect(afterwards.fixes == expected(from: from, to: to) - 36)
      let emptied = try await counted(from: deletedHour, to: deletedHour + hour)
      #expect(emptied.fixes == 0 && emptied.cells.isEmpty && emptied.tracks.isEmpty)
    }
  }

  @Test(arguments: ["sqlite", "postgres"])
  func aViewAcrossTheAntimeridianHoldsBothSides(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (_, anna) = try await server.signUp("anna")
      let fixes = try (0..<100).map { index in
        try LocationFix(
          deviceID: "anna-phone", timestamp: Self.start + Int64(index) * 10_000, latitude: -17 + Double(index) * 0.001,
          longitude: index.isMultiple(of: 2) ? 179.99 : -179.99)
      }
      // Then 20 on the antimeridian itself, stored as 180.
      let onIt = try (0..<20).map { index in
        try LocationFix(
          deviceID: "anna-phone", timestamp: Self.start + 2_000_000 + Int64(index) * 10_000,
          latitude: -16.5 + Double(index) * 0.001, longitude: 180)
      }
      try await Self.post(fixes + onIt, device: "anna-phone", as: anna)
      let map = try await anna.send(
        API.historyMap,
        parameters: HistoryMapQuery(box: BoundingBox(south: -18, west: 179.9, north: -16, east: -179.9), zoom: 14))
      #expect(map.fixes == 120)
      #expect(Set(Self.vertices(map).map(\.longitude)) == [179.99, -179.99, 180])
      // A view whose west edge is the antimeridian, +180: the fixes at 180 and those east of it. (The covering once
      // took that edge as −180 and read only the cells west of −179.9, and missed the fixes at 180.)
      let fromTheEdge = try await anna.send(
        API.historyMap,
        parameters: HistoryMapQuery(box: BoundingBox(south: -18, west: 180, north: -16, east: -179.9), zoom: 14))
      #expect(fromTheEdge.fixes == 70)
      #expect(Set(Self.vertices(fromTheEdge).map(\.longitude)) == [-179.99, 180])
      // The same latitudes the other way round the world: everything but the antimeridian.
      let other = try await anna.send(
        API.historyMap,
        parameters: HistoryMapQuery(box: BoundingBox(south: -18, west: -179.9, north: -16, east: 179.9), zoom: 14))
      #expect(other.tracks.isEmpty)
    }
  }

  @Test func badViewsAndZoomsAre400() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let view = [QueryItem("south", 50), QueryItem("west", 30), QueryItem("north", 51), QueryItem("east", 31)]
      _ = try await anna.send(rawMap, parameters: view + [QueryItem("zoom", 10)])
      let bad: [[QueryItem]] = [
        view,
        view + [QueryItem("zoom", 23)],
        view + [QueryItem("zoom", -1)],
        view + [QueryItem("zoom", "ten")],
        view + [QueryItem("zoom", 99_999_999_999_999_999)],
        Array(view.dropFirst()) + [QueryItem("zoom", 10)],
        [
          QueryItem("south", 52), QueryItem("west", 30), QueryItem("north", 51), QueryItem("east", 31),
          QueryItem("zoom", 3),
        ],
        [
          QueryItem("south", 50), QueryItem("west", 190), QueryItem("north", 51), QueryItem("east", 31),
          QueryItem("zoom", 3),
        ],
        [
          QueryItem("south", -91), QueryItem("west", 30), QueryItem("north", 51), QueryItem("east", 31),
          QueryItem("zoom", 3),
        ],
        [
          QueryItem("south", "nan"), QueryItem("west", 30), QueryItem("north", 51), QueryItem("east", 31),
          QueryItem("zoom", 3),
        ],
        view + [QueryItem("zoom", 3), QueryItem("from", 10), QueryItem("to", 5)],
        view + [QueryItem("zoom", 3), QueryItem("preset", "someday")],
      ]
      for items in bad {
        await expectAPIError(.invalidRequest, status: 400) { try await anna.send(rawMap, parameters: items) }
      }
    }
  }
}

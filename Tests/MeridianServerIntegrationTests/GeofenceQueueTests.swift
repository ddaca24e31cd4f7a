import DomainKit
import Foundation
import GeoKit
import Logging
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreEngines
import MeridianStoreTesting
import MeridianTestSupport
import Synchronization
import Testing

/// The geofence monitor follows the store's durable queue: a burst longer than anything it reads at once, and a
/// restart in the middle of one, lose no event and store none twice — on both engines.
@Suite("Geofence evaluation loses nothing")
struct GeofenceQueueTests {
  /// A server on `engine` ("sqlite", or "postgres" on a fresh database) with `configure` applied, given to `body`
  /// with its database's location and a way to start another server on the same database.
  static func withServer(
    _ engine: String, _ configure: @escaping @Sendable (inout ServerConfiguration) -> Void,
    _ body: (TestServer, StoreLocation, _ restart: @Sendable (TestServer) async throws -> TestServer) async throws
      -> Void
  ) async throws {
    let database = engine == "postgres" ? try await PostgresTestDatabase.create() : nil
    let setUp: @Sendable (inout ServerConfiguration) -> Void = { configuration in
      if let database { configuration.database = .postgres(url: database.url) }
      configure(&configuration)
    }
    let latest = LatestServer()
    do {
      let server = try await TestServer.start(setUp)
      latest.set(server)
      let location =
        database.map { StoreLocation.postgres(url: $0.url) }
        ?? .sqlite(path: server.directory.appendingPathComponent("meridian.sqlite").path)
      try await body(server, location) { stopped in
        latest.set(nil)
        let next = try await TestServer.start(directory: stopped.directory, setUp)
        latest.set(next)
        return next
      }
      try await latest.get()?.stop()
    } catch {
      try? await latest.get()?.stop()
      await database?.drop()
      throw error
    }
    await database?.drop()
  }

  /// The server running now, stopped at the end.
  final class LatestServer: Sendable {
    private let server = Mutex<TestServer?>(nil)
    func set(_ value: TestServer?) { server.withLock { $0 = value } }
    func get() -> TestServer? { server.withLock { $0 } }
  }

  /// `count` fixes 250 ms apart from `start`, in runs of three inside the 100 m fence at home (10 m from its centre)
  /// and three 1 km away, each within 5 m.
  static func track(count: Int, from start: Int64) throws -> [LocationFix] {
    try (0..<count).map { index in
      try GeofenceTests.fix(start + Int64(index) * 250, (index / 3).isMultiple(of: 2) ? 10 : 1_000, accuracy: 5)
    }
  }

  /// The events DomainKit's rules decide for `fixes` in `fence`, by id: what the server must store, once each.
  static func expectedEvents(_ fixes: [LocationFix], fence: Geofence, user: UserID, id: GeofenceID) -> [String] {
    let rules = GeofenceSettings().rules
    var state = GeofenceState()
    var ids: [String] = []
    for fix in fixes {
      let (next, transitions) = rules.evaluate(fix, in: fence, state: state)
      state = next
      ids += transitions.map {
        GeofenceEventItem.eventID(geofence: id, user: user, kind: $0.kind, timestamp: $0.timestamp)
      }
    }
    return ids
  }

  /// Every stored event of `user`, by id, oldest first.
  static func storedEvents(_ store: any MeridianStore, _ user: UserID) async throws -> [String] {
    try await store.geofenceEvents(GeofenceEventQuery(involving: user, limit: 100_000)).events.reversed().map(\.id)
  }

  /// Waits (polling the store, ``waitUntil(_:timeout:_:)``) until `condition` holds, at most `timeout`; a wait that
  /// times out is recorded as the test's issue.
  static func waitFor(
    _ what: String, timeout: Duration = .seconds(120), _ condition: () async throws -> Bool
  ) async throws {
    do {
      try await waitUntil(what, timeout: timeout, condition)
    } catch let timedOut as WaitTimedOut {
      Issue.record("\(timedOut)")
      throw CancellationError()
    }
  }

  /// Waits until the geofence queue of `store` is empty, for as long as it keeps shrinking
  /// (``waitForNoneLeft(_:_:)``).
  static func waitForAnEmptyQueue(_ what: String, _ store: any MeridianStore) async throws {
    try await waitForNoneLeft(what) { try await store.geofenceQueueBacklog().entries }
  }

  /// Waits (``waitUntilDrained(_:stall:_:)``) until `remaining` is 0, for as long as it keeps falling; one that stops
  /// falling for a minute is recorded as the test's issue.
  static func waitForNoneLeft(_ what: String, _ remaining: () async throws -> Int) async throws {
    do {
      try await waitUntilDrained(what, remaining)
    } catch let timedOut as WaitTimedOut {
      Issue.record("\(timedOut)")
      throw CancellationError()
    }
  }

  @Test(.timeLimit(.minutes(5)), arguments: ["sqlite", "postgres"])
  func aBurstLongerThanTheMonitorsReadLosesNoEvent(_ engine: String) async throws {
    try await Self.withServer(engine, { $0.geofences.queueBatch = 3 }) { server, _, _ in
      let (session, bob) = try await server.signUp("bob")
      let shape = GeofenceShape.circle(center: GeofenceTests.home, radius: 100)
      let fence = try await bob.send(API.createGeofence, body: NewGeofence(name: "Home", shape: shape))
      // 240 uploads of one fix each, 80 times the monitor's read: 79 departures and arrivals.
      let track = try Self.track(count: 240, from: GeofenceTests.now() + 1_000)
      for fix in track { _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: [fix])) }
      let expected = Self.expectedEvents(track, fence: shape.geofence, user: session.userId, id: fence.id)
      #expect(expected.count == 79)
      let store = server.app.environment.store
      try await Self.waitFor("the last upload's evaluation") {
        try await store.geofenceTracking(of: session.userId).lastFixAt == track.last?.timestamp
      }
      try await Self.waitForAnEmptyQueue("an empty queue", store)
      #expect(try await Self.storedEvents(store, session.userId) == expected)
      // The queue's size and age are metrics.
      let metrics = String(
        decoding: try await server.client(token: ServerConfiguration.developmentAdminToken).send(API.metrics),
        as: UTF8.self)
      #expect(metrics.contains("meridian_geofence_backlog_entries 0"), "\(metrics)")
      #expect(metrics.contains("meridian_geofence_lag_seconds 0"), "\(metrics)")
    }
  }

  /// Uploads larger than a read's fixes are read one at a time, each read followed by the next at once (not at the
  /// next poll, here ten minutes away), and lose no event.
  @Test(.timeLimit(.minutes(5)), arguments: ["sqlite", "postgres"])
  func uploadsLargerThanTheMonitorsReadAreEachRead(_ engine: String) async throws {
    try await Self.withServer(
      engine,
      {
        $0.geofences.queueFixes = 25
        $0.geofences.queuePollInterval = .seconds(600)
      }
    ) { server, _, _ in
      let (session, bob) = try await server.signUp("bob")
      let shape = GeofenceShape.circle(center: GeofenceTests.home, radius: 100)
      let fence = try await bob.send(API.createGeofence, body: NewGeofence(name: "Home", shape: shape))
      // Six uploads of 40 fixes, each more than a read's 25.
      let track = try Self.track(count: 240, from: GeofenceTests.now() + 1_000)
      for upload in stride(from: 0, to: track.count, by: 40) {
        _ = try await bob.send(
          API.postFixes, body: FixBatch(deviceId: "phone", fixes: Array(track[upload..<upload + 40])))
      }
      let expected = Self.expectedEvents(track, fence: shape.geofence, user: session.userId, id: fence.id)
      let store = server.app.environment.store
      try await Self.waitFor("the last upload's evaluation", timeout: .seconds(60)) {
        try await store.geofenceTracking(of: session.userId).lastFixAt == track.last?.timestamp
      }
      try await Self.waitForAnEmptyQueue("an empty queue", store)
      #expect(try await Self.storedEvents(store, session.userId) == expected)
    }
  }

  /// What ``burstAcrossARestart(_:_:count:batches:)`` saw.
  struct RestartedBurst {
    /// The events DomainKit's rules decide for the track.
    var expected: [String]
    /// The queue's entries, the events stored and the last fix evaluated when the server had stopped.
    var left: Int
    var storedBefore: [String]
    var evaluatedBefore: Int64?
    /// The fixes the restarted server counted as evaluated (`meridian_geofence_fixes_evaluated_total`).
    var countedAfter: Int?
    /// The person's state and events once the restarted server emptied the queue.
    var tracking: GeofenceTracking
    var stored: [String]
    var track: [LocationFix]
  }

  /// A server on `engine` (with `configure`) where bob makes a fence at home and uploads the first fix of a
  /// `count`-fix track through it; the rest is committed at once in the store's batches `batches` makes of it. The
  /// server stops (keeping its database) once the monitor stored two events, and another starts on the same
  /// database and runs until the queue is empty.
  static func burstAcrossARestart(
    _ engine: String, _ configure: @escaping @Sendable (inout ServerConfiguration) -> Void, count: Int,
    batches: @escaping @Sendable (UserID, [LocationFix]) -> [FixInsertBatch]
  ) async throws -> RestartedBurst? {
    var result: RestartedBurst?
    try await withServer(engine, configure) { server, location, restart in
      let (session, bob) = try await server.signUp("bob")
      let shape = GeofenceShape.circle(center: GeofenceTests.home, radius: 100)
      let fence = try await bob.send(API.createGeofence, body: NewGeofence(name: "Home", shape: shape))
      let track = try track(count: count, from: GeofenceTests.now() + 1_000)
      let store = server.app.environment.store
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: [track[0]]))
      _ = try await store.insertFixes(batches(session.userId, Array(track.dropFirst())), now: GeofenceTests.now())
      let expected = expectedEvents(track, fence: shape.geofence, user: session.userId, id: fence.id)
      try await waitFor("the first events") { try await storedEvents(store, session.userId).count >= 2 }
      try await server.stop(keepingFiles: true)
      let probe = try await location.open(maximumConnections: 1, logger: Logger(label: "probe"))
      let left = try await probe.store.geofenceQueueBacklog().entries
      let storedBefore = try await storedEvents(probe.store, session.userId)
      let evaluatedBefore = try await probe.store.geofenceTracking(of: session.userId).lastFixAt
      await probe.close()

      let again = try await restart(server)
      let storeAgain = again.app.environment.store
      // The events come commit by commit (the queue may not shrink for a while: one upload takes many commits).
      try await waitForNoneLeft("the rest of the events") {
        expected.count - (try await storedEvents(storeAgain, session.userId).count)
      }
      try await waitForAnEmptyQueue("the rest of the burst", storeAgain)
      // The counter moves just after the commit that empties the queue: read until it reached what the restarted
      // server evaluated (or passed it).
      func counted() async throws -> Int? {
        let metrics = String(
          decoding: try await again.client(token: ServerConfiguration.developmentAdminToken).send(API.metrics),
          as: UTF8.self)
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("meridian_geofence_fixes_evaluated_total ") }
        return line.flatMap { $0.split(separator: " ").last.flatMap { Int($0) } }
      }
      let evaluatedAfter = track.count { fix in evaluatedBefore.map { fix.timestamp > $0 } ?? true }
      try await waitFor("the evaluated fixes counted", timeout: .seconds(10)) {
        (try await counted() ?? 0) >= evaluatedAfter
      }
      result = RestartedBurst(
        expected: expected, left: left, storedBefore: storedBefore, evaluatedBefore: evaluatedBefore,
        countedAfter: try await counted(),
        tracking: try await storeAgain.geofenceTracking(of: session.userId),
        stored: try await storedEvents(storeAgain, session.userId), track: track)
    }
    return result
  }

  @Test(.timeLimit(.minutes(10)), arguments: ["sqlite", "postgres"])
  func aRestartInTheMiddleOfABurstStoresEveryEventOnce(_ engine: String) async throws {
    // 600 uploads committed at once (one transaction, as a group commit stores them), read one at a time: the
    // monitor evaluates a few before the stop, and the rest after the restart (an evaluation a transaction, which
    // in a busy suite on PostgreSQL took up to 300 ms: the wait lasts while the queue shrinks).
    let burst = try await Self.burstAcrossARestart(engine, { $0.geofences.queueBatch = 1 }, count: 600) { user, rest in
      rest.map { FixInsertBatch(userID: user, deviceID: "phone", fixes: [$0]) }
    }
    let result = try #require(burst)
    #expect(result.expected.count == 199)
    // Stopped in the middle: part of the burst still waits in the queue, none of it lost.
    #expect(result.left > 0 && result.left < 600, "\(result.left) uploads left")
    #expect(result.storedBefore == Array(result.expected.prefix(result.storedBefore.count)))
    #expect(result.tracking.lastFixAt == result.track.last?.timestamp)
    #expect(result.stored == result.expected)
  }

  @Test(.timeLimit(.minutes(10)), arguments: ["sqlite", "postgres"])
  func anUploadCommittedInPartsAcrossARestartStoresEveryEventOnce(_ engine: String) async throws {
    // A commit per event: an upload of 1,799 fixes (two runs of the monitor) takes about 600 commits, and leaves the
    // queue with the last of them; the server stops after the first few.
    let burst = try await Self.burstAcrossARestart(engine, { $0.geofences.eventsPerCommit = 1 }, count: 1_800) {
      user, rest in [FixInsertBatch(userID: user, deviceID: "phone", fixes: rest)]
    }
    let result = try #require(burst)
    #expect(result.expected.count == 599)
    // Stopped between two commits of the upload: it waits in the queue, its events stored so far kept.
    #expect(result.left > 0)
    #expect(result.storedBefore.count < result.expected.count)
    #expect(result.storedBefore == Array(result.expected.prefix(result.storedBefore.count)))
    #expect(result.tracking.lastFixAt == result.track.last?.timestamp)
    #expect(result.stored == result.expected)
    // A commit per event: the person's state has a version per commit.
    #expect(result.tracking.version >= Int64(result.expected.count), "\(result.tracking.version) commits")
    // The restarted server counts only the fixes it evaluated, not those of the upload evaluated before the stop.
    let evaluatedAfter = result.track.count { fix in result.evaluatedBefore.map { fix.timestamp > $0 } ?? true }
    #expect(result.countedAfter == evaluatedAfter, "of \(result.track.count) fixes")
  }
}

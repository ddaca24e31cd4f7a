import DomainKit
import Foundation
import GeoKit
import MeridianStore
import MeridianStoreSQLite
import Synchronization
import Testing

@testable import MeridianServer

/// The server's gazetteer cache: a cell's place does not depend on which of its coordinates came first, and a
/// loaded gazetteer is re-read only after the recheck interval.
@Suite("Gazetteer cache")
struct GazetteerCacheTests {
  /// Two towns 1.1 km apart on either side of one geohash-6 cell's centre.
  static func town(_ id: Int64, _ latitude: Double, _ longitude: Double) -> GazetteerStagedRow {
    GazetteerStagedRow(
      line: Int(id),
      content: .locality(
        GazetteerLocality(geonameID: id, name: "Town \(id)", country: "RU", latitude: latitude, longitude: longitude)))
  }

  static func load(_ rows: [GazetteerStagedRow], file: String, into store: SQLiteStore) async throws {
    _ = try await store.beginGazetteerFile(file, digest: file, restart: false, now: 1)
    try await store.stageGazetteerRows(rows, file: file, through: rows.count)
    _ = try await store.commitGazetteerFile(file, now: 1)
  }

  /// Runs `body` with a store on a temporary file, then closes and deletes it.
  static func withStore(_ body: (SQLiteStore) async throws -> Void) async throws {
    let file = TemporaryDatabaseFile()
    let store = try SQLiteStore.open(at: file.path)
    defer {
      try? store.database.close()
      file.remove()
    }
    try await body(store)
  }

  @Test func aCellIsPlacedByItsCentreWhateverTheOrder() async throws {
    try await Self.withStore { store in try await placedByCentre(store) }
  }

  func placedByCentre(_ store: SQLiteStore) async throws {
    let cell = try GeohashCell(try Coordinate(latitude: 56.5, longitude: 84.97), bits: 30)
    let box = cell.box
    // West and east edges of the cell, each with a town just beyond it.
    let west = try Coordinate(latitude: cell.center.latitude, longitude: box.west + 0.0001)
    let east = try Coordinate(latitude: cell.center.latitude, longitude: box.east - 0.0001)
    try await Self.load(
      [
        Self.town(1, west.latitude, box.west - 0.001), Self.town(2, east.latitude, box.east + 0.001),
        Self.town(3, 0, 0),
      ], file: "towns.txt", into: store)
    let first = GazetteerCache(store: store, now: { 0 })
    let second = GazetteerCache(store: store, now: { 0 })
    let one = try await first.matches(for: [west, east]).map { $0?.locality.geonameID }
    let other = try await second.matches(for: [east, west]).map { $0?.locality.geonameID }
    #expect(one == [other[1], other[0]])
    #expect(Set(one).count == 1)
  }

  @Test func aLoadedGazetteerIsRereadOnlyAfterTheRecheckInterval() async throws {
    try await Self.withStore { store in try await rereadAfterInterval(store) }
  }

  func rereadAfterInterval(_ store: SQLiteStore) async throws {
    let clock = Mutex<Int64>(0)
    let cache = GazetteerCache(store: store, now: { clock.withLock { $0 } })
    let point = try Coordinate(latitude: 10, longitude: 10)
    // Empty: asked every time, so a first import shows at once.
    #expect(try await cache.matches(for: [point]) == [nil])
    try await Self.load([Self.town(1, 10.5, 10)], file: "a.txt", into: store)
    #expect(try await cache.matches(for: [point]).first??.locality.geonameID == 1)
    // A nearer town imported now is seen only once the interval has passed.
    try await Self.load([Self.town(2, 10.01, 10)], file: "b.txt", into: store)
    clock.withLock { $0 = GazetteerCache.recheckInterval - 1 }
    #expect(try await cache.matches(for: [point]).first??.locality.geonameID == 1)
    clock.withLock { $0 = GazetteerCache.recheckInterval + 1 }
    #expect(try await cache.matches(for: [point]).first??.locality.geonameID == 2)
  }
}

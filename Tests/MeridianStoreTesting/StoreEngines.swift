import DomainKit
import DomainKitTesting
import Foundation
import GeoKit
import MeridianStore
import MeridianStoreSQLite

/// A storage engine under test: how to make a fresh, empty, migrated store and how to dispose of it. The contract
/// suite (`MeridianStoreContractTests`) runs every test against every engine in ``all``; an engine joins by adding
/// itself there.
public struct StoreEngine: Sendable, CustomStringConvertible {
  /// A store made for one test, and what removes it afterwards.
  public struct Instance: Sendable {
    /// The store.
    public let store: any MeridianStore
    /// Removes the store's data.
    public let dispose: @Sendable () async -> Void
  }

  /// The engine's name (in test names).
  public let name: String
  /// Makes a fresh store.
  public let make: @Sendable () async throws -> Instance

  public var description: String { name }

  /// SQLite on a file in a new temporary directory.
  public static let sqlite = StoreEngine(name: "sqlite") {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("meridian-store-\(UUID().uuidString)")
    let store = try SQLiteStore.open(at: directory.appendingPathComponent("meridian.sqlite").path)
    return Instance(store: store) { try? FileManager.default.removeItem(at: directory) }
  }

  /// Every engine the contract suite runs against.
  public static let all: [StoreEngine] = [.sqlite]

  /// Runs `body` with a fresh store of this engine and disposes of it, whatever `body` does.
  public func with(_ body: (any MeridianStore) async throws -> Void) async throws {
    let instance = try await make()
    do {
      try await body(instance.store)
    } catch {
      await instance.dispose()
      throw error
    }
    await instance.dispose()
  }
}

/// `count` venues scattered uniformly in a box, with random types and ratings.
public func randomVenues(
  count: Int, prefix: String, latitudes: ClosedRange<Double>, longitudes: ClosedRange<Double>,
  random: inout SplitMix64
) throws -> [VenueRecord] {
  let types = ["cafe", "restaurant", "shop"]
  return try (0..<count).map { index in
    let location = try Coordinate(
      latitude: Double.random(in: latitudes, using: &random), longitude: Double.random(in: longitudes, using: &random))
    let reviews = Int.random(in: 0...20, using: &random)
    let place = try Place(
      id: PlaceID(String(format: "%@-%05d", prefix, index)), kind: .venue,
      name: LocalizedText(["en": "Venue \(index)"]), location: location,
      venueType: types[Int.random(in: 0..<types.count, using: &random)])
    return try VenueRecord(
      place: place, rating: RatingAggregate(sum: reviews * Int.random(in: 1...5, using: &random), count: reviews))
  }
}

/// `distance` metres east of `point` (small distances).
public func east(of point: Coordinate, _ distance: Double) -> Coordinate {
  Coordinate(
    uncheckedLatitude: point.latitude,
    longitude: point.longitude + distance / (meanEarthRadius * cos(point.latitude * .pi / 180)) * 180 / .pi)
}

import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// The in-memory geofence index answers as the store's own lookup does, and follows changes once told (or once its
/// lifetime passed) — over every engine.
@Suite("Geofence index over the store")
struct GeofenceIndexContractTests {
  static let home = GeofenceContractTests.home
  /// The geofence contract's fixtures (accounts, circles).
  let fixtures = GeofenceContractTests()

  func makeUsers(_ store: any MeridianStore, _ names: [String]) async throws {
    try await fixtures.makeUsers(store, names)
  }

  func circle(_ id: String, owner: String, at center: Coordinate, radius: Double) -> GeofenceItem {
    fixtures.circle(id, owner: owner, at: center, radius: radius)
  }

  @Test(arguments: StoreEngine.all)
  func theIndexFindsExactlyWhatTheStoresLookupFinds(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      var rng = SystemRandomNumberGenerator()
      for index in 0..<150 {
        let center = try Self.home.destination(
          bearing: Double.random(in: 0..<360, using: &rng), distance: Double.random(in: 0...20_000, using: &rng))
        try await store.createGeofence(
          circle(
            "c\(index)", owner: index % 3 == 0 ? "bob" : "ann", at: center,
            radius: Double.random(in: 25...3_000, using: &rng)))
      }
      try await store.createGeofence(
        GeofenceItem(
          id: GeofenceID("fiji"), ownerId: UserID("ann"), name: "across",
          shape: .polygon([
            Coordinate(uncheckedLatitude: -17, longitude: 179.5),
            Coordinate(uncheckedLatitude: -17, longitude: -179.5),
            Coordinate(uncheckedLatitude: -16, longitude: -179.5),
            Coordinate(uncheckedLatitude: -16, longitude: 179.5),
          ]), createdAt: 1, updatedAt: 1))
      let index = GeofenceIndex(store: store)
      var points = [
        Coordinate(uncheckedLatitude: -16.5, longitude: 179.9), Coordinate(uncheckedLatitude: -16.5, longitude: -179.9),
      ]
      for _ in 0..<60 {
        points.append(
          try Self.home.destination(
            bearing: Double.random(in: 0..<360, using: &rng), distance: Double.random(in: 0...22_000, using: &rng)))
      }
      for owners in [["ann"], ["bob"], ["ann", "bob"]].map({ $0.map { UserID($0) } }) {
        for point in points {
          let expected = try await store.geofences(near: point, owners: owners)
          #expect(try await index.fences(near: [point], owners: owners, now: 100) == expected, "\(point) \(owners)")
        }
        // Each point's own answer, in a batch, is the store's (in another order).
        let nearEach = try await index.fences(nearEach: points, owners: owners, now: 100)
        for (point, fences) in zip(points, nearEach) {
          #expect(
            fences.sorted { $0.id < $1.id } == (try await store.geofences(near: point, owners: owners)), "\(point)")
        }
        let batch = Array(points.prefix(12))
        #expect(
          try await index.fences(near: batch, owners: owners, now: 100)
            == (try await store.geofences(near: batch, owners: owners)))
        #expect(
          try await index.fences(owners: owners, now: 100) == (try await store.geofences(owners: owners)))
        // A snapshot's slots name the same fences and their decoded shapes, and only the owners' fences.
        let snapshot = try await index.snapshot(owners: owners, now: 100)
        #expect(!snapshot.isEmpty)
        for point in points {
          snapshot.forEachFence(near: point) { slot, shape in
            let fence = snapshot.fence(at: slot)
            #expect(
              owners.contains(fence.ownerId) && shape.shape == fence.shape.geofence
                && snapshot.slot(of: fence.id) == slot)
          }
        }
        let others = Set([UserID("ann"), UserID("bob")]).subtracting(owners)
        for fence in try await store.geofences(owners: Array(others)) { #expect(snapshot.slot(of: fence.id) == nil) }
      }
      #expect(try await index.snapshot(owners: [UserID("nobody")], now: 100).isEmpty)

      // One owner forgotten and read again, with a fence fewer: the other owner's fences under the same cells stay,
      // and every answer is still the store's.
      #expect(try await store.deleteGeofence(GeofenceID("c0")))
      index.invalidate(owner: "bob")
      let both = [UserID("ann"), UserID("bob")]
      for point in points {
        #expect(
          try await index.fences(near: [point], owners: both, now: 100)
            == (try await store.geofences(near: point, owners: both)), "\(point)")
      }
    }
  }

  @Test(arguments: StoreEngine.all)
  func aChangeIsSeenOnceInvalidatedOrOnceTheLifetimePassed(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      let far = try Self.home.destination(bearing: 0, distance: 10_000)
      let home = circle("g1", owner: "ann", at: Self.home, radius: 100)
      try await store.createGeofence(home)
      try await store.createGeofence(circle("b1", owner: "bob", at: far, radius: 100))
      let index = GeofenceIndex(store: store, lifetime: 1_000)
      let ann = [UserID("ann")]
      #expect(try await index.fences(near: [Self.home], owners: ann, now: 0) == [home])

      // Moved in the store: the index keeps what it read until told, or until its lifetime passed.
      var moved = home
      moved.shape = .circle(center: far, radius: 200)
      #expect(try await store.updateGeofence(moved))
      #expect(try await index.fences(near: [Self.home], owners: ann, now: 500) == [home])
      index.invalidate(owner: "ann")
      #expect(try await index.fences(near: [Self.home], owners: ann, now: 500).isEmpty)
      #expect(try await index.fences(near: [far], owners: ann, now: 500) == [moved])

      #expect(try await store.deleteGeofence(GeofenceID("g1")))
      #expect(try await index.fences(near: [far], owners: ann, now: 1_499) == [moved])
      #expect(try await index.fences(near: [far], owners: ann, now: 1_500).isEmpty)

      // By id: from memory for a loaded owner, else from the store.
      let created = circle("g2", owner: "ann", at: Self.home, radius: 50)
      try await store.createGeofence(created)
      index.invalidateAll()
      #expect(try await index.fences(near: [Self.home], owners: ann, now: 1_600) == [created])
      let bob = try #require(try await store.geofence(GeofenceID("b1")))
      #expect(try await index.fences(ids: [GeofenceID("b1"), GeofenceID("g2"), GeofenceID("gone")]) == [bob, created])

      // An owner nobody asked about for twice the lifetime is forgotten at the next reload of another: by id, its
      // fence then comes from the store (deleted there meanwhile), not from memory.
      #expect(try await index.fences(owners: [UserID("bob")], now: 1_600) == [bob])
      #expect(try await store.deleteGeofence(GeofenceID("b1")))
      #expect(try await index.fences(ids: [GeofenceID("b1")]) == [bob])  // still in memory
      _ = try await index.fences(owners: ann, now: 3_600)  // ann's reload, two lifetimes after bob's
      #expect(try await index.fences(ids: [GeofenceID("b1")]).isEmpty)
    }
  }
}

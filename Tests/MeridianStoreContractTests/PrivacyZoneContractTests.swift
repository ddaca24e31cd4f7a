import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Privacy zones (issue 39 §3) on every engine: saved, replaced, listed oldest first, capped per person, deleted,
/// and carried by the owner's privacy settings (the input of DomainKit's `AudienceView`); a group's precision
/// (§2) survives the store.
@Suite("Store contract: privacy zones")
struct PrivacyZoneContractTests {
  static let home = PrivacyZone(id: "home", name: "Home", latitude: 52.52, longitude: 13.405, radius: 150)
  static let friend = PrivacyZone(
    id: "friend", name: "Kim's", latitude: 48.137, longitude: 11.575, radius: 80.5, display: .hidden, store: false)

  @Test(arguments: StoreEngine.all)
  func zonesAreSavedReplacedCappedAndDeleted(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      _ = try await store.createAccount(id: "bob", credential: .email("bob@example.com"), passwordHash: nil, now: 0)
      #expect(try await store.privacyZones(owner: "anna").isEmpty)
      #expect(try await store.savePrivacyZone(Self.home, owner: "anna", now: 10, maximumCount: 2))
      #expect(try await store.savePrivacyZone(Self.friend, owner: "anna", now: 20, maximumCount: 2))
      #expect(try await store.privacyZones(owner: "anna") == [Self.home, Self.friend])
      // A third is refused at the cap; replacing one of the two is not.
      let third = PrivacyZone(id: "work", name: "Work", latitude: 1, longitude: 2, radius: 100)
      #expect(try await !store.savePrivacyZone(third, owner: "anna", now: 30, maximumCount: 2))
      var moved = Self.home
      moved.radius = 300
      moved.display = .hidden
      moved.name = "Home (new)"
      #expect(try await store.savePrivacyZone(moved, owner: "anna", now: 40, maximumCount: 2))
      #expect(try await store.privacyZones(owner: "anna") == [moved, Self.friend], "kept its place, oldest first")
      // Another person's zones are their own, even with the same id.
      #expect(try await store.savePrivacyZone(third, owner: "bob", now: 50, maximumCount: 2))
      #expect(try await store.privacyZones(owner: "bob") == [third])
      #expect(try await store.privacySettings(owner: "anna")?.zones == [moved, Self.friend])
      #expect(try await store.privacySettings(owner: "bob")?.zones == [third])

      #expect(try await !store.deletePrivacyZone(id: "work", owner: "anna"))
      #expect(try await store.deletePrivacyZone(id: "home", owner: "anna"))
      #expect(try await !store.deletePrivacyZone(id: "home", owner: "anna"))
      #expect(try await store.privacyZones(owner: "anna") == [Self.friend])
      #expect(try await store.privacyZones(owner: "bob") == [third])
    }
  }

  @Test(arguments: StoreEngine.all)
  func aGroupKeepsItsPrecision(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      _ = try await store.createAccount(id: "bob", credential: .email("bob@example.com"), passwordHash: nil, now: 0)
      var group = try Group(
        id: "anna.town", ownerID: "anna", name: "Colleagues",
        visibility: GroupVisibility(location: true, fields: [.fullName], precision: .town))
      try group.add("bob")
      try await store.saveGroup(group)
      #expect(try await store.group("anna.town")?.visibility.precision == .town)
      let settings = try #require(try await store.privacySettings(owner: "anna"))
      #expect(Sharing.precision(for: "bob", of: settings, at: 1) == .town)
    }
  }
}

extension PrivacyZoneContractTests {
  /// A share link's precision (issue 39 §2) is stored with it; links made before it show the exact position.
  @Test(arguments: StoreEngine.all)
  func aShareLinkKeepsItsPrecision(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await FixContractTests.accounts(store, ["anna"])
      try await store.createShareLink(
        ShareLinkRecord(
          id: "town", owner: "anna", tokenHash: "hash-town", label: nil, devices: nil, track: true, createdAt: 1,
          until: 60_000, precision: .town))
      try await store.createShareLink(
        ShareLinkRecord(
          id: "plain", owner: "anna", tokenHash: "hash-plain", label: nil, devices: nil, track: false, createdAt: 2,
          until: 60_000))
      #expect(try await store.shareLink(tokenHash: "hash-town")?.precision == .town)
      #expect(try await store.shareLink(id: "plain")?.precision == .exact)
      #expect(try await store.shareLinks(owner: "anna").map(\.precision) == [.exact, .town])
      #expect(try await store.revokeShareLink(id: "town", owner: "anna", now: 5)?.precision == .town)
    }
  }
}

import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Profiles, groups and sharing: the input of DomainKit's `Sharing` rules.
@Suite("Store contract: social graph")
struct SocialContractTests {
  @Test(arguments: StoreEngine.all)
  func sharingCandidatesAreGroupOwnersAndDirectGrantsButNotBlacklists(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let ids: [UserID] = ["viewer", "family-owner", "granter", "blacklister", "stranger", "old-granter"]
      for id in ids {
        _ = try await store.createAccount(id: id, credential: .email("\(id)@example.com"), passwordHash: nil, now: 0)
      }
      func addViewer(to kind: GroupKind, of owner: UserID) async throws {
        var group = try #require(try await store.groups(owner: owner).first { $0.kind == kind })
        try group.add("viewer")
        try await store.saveGroup(group)
      }
      try await addViewer(to: .family, of: "family-owner")
      try await addViewer(to: .blacklist, of: "blacklister")
      try await store.saveSharing(SharingState(viewerGrants: ["viewer": nil]), owner: "granter")
      // An expired grant still makes a candidate; Sharing.canSee is what decides.
      try await store.saveSharing(SharingState(viewerGrants: ["viewer": 1, "stranger": nil]), owner: "old-granter")
      #expect(try await store.sharingCandidates(viewer: "viewer") == ["family-owner", "granter", "old-granter"])
      #expect(try await store.sharingCandidates(viewer: "stranger") == ["old-granter"])
      #expect(try await store.sharingCandidates(viewer: "family-owner").isEmpty)
      #expect(try await store.deviceOwner("nope") == nil)
      #expect(try await store.claimDevice("viewer-phone", owner: "viewer", now: 0))
      #expect(try await store.deviceOwner("viewer-phone") == "viewer")
    }
  }

  @Test(arguments: StoreEngine.all)
  func groupsAndProfilesRoundTrip(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      for id: UserID in ["anna", "bob"] {
        _ = try await store.createAccount(id: id, credential: .email("\(id)@example.com"), passwordHash: nil, now: 0)
      }
      var group = try Group(id: "climbing", ownerID: "anna", name: "Climbing", visibility: .nothing)
      try group.add("bob")
      try await store.saveGroup(group)
      #expect(try await store.group("climbing") == group)
      group.remove("bob")
      try await store.saveGroup(group)
      #expect(try await store.group("climbing")?.members.isEmpty == true)
      try await store.deleteGroup("climbing")
      #expect(try await store.group("climbing") == nil)

      var profile = try #require(try await store.profile("bob"))
      profile.fullName = "Bob Dylan"
      profile.audience[.phone] = .nobody
      try await store.saveProfile(profile)
      #expect(try await store.profile("bob") == profile)
      #expect(
        try await store.searchProfiles(text: "dyl", phone: nil, excluding: "anna", limit: 10).map(\.userID) == ["bob"])
      #expect(try await store.searchProfiles(text: "dyl", phone: nil, excluding: "bob", limit: 10).isEmpty)
      // LIKE's wildcards are matched literally.
      #expect(try await store.searchProfiles(text: "%", phone: nil, excluding: "anna", limit: 10).isEmpty)

      let sharing = SharingState(paused: true)
      try await store.saveSharing(sharing, owner: "anna")
      #expect(try await store.sharing(owner: "anna") == sharing)
      let settings = try #require(try await store.privacySettings(owner: "anna"))
      #expect(settings.owner == "anna" && settings.sharing == sharing && settings.groups.count == 3)
    }
  }
}

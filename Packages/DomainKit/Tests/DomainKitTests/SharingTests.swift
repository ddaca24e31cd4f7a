import DomainKitTesting
import Foundation
import Testing

@testable import DomainKit

@Suite struct SharingTests {
  let now: Int64 = 1_700_000_000_000

  func settings(_ configure: (inout [Group]) throws -> Void = { _ in }) rethrows -> PrivacySettings {
    var groups = Group.standardGroups(for: "o")
    try configure(&groups)
    return PrivacySettings(owner: "o", groups: groups)
  }

  @Test func familySeesLocationStrangerDoesNot() throws {
    let s = try settings { try $0[0].add("mum") }
    #expect(Sharing.canSee("mum", .location, of: s, at: now))
    #expect(!Sharing.canSee("stranger", .location, of: s, at: now))
    #expect(Sharing.canSee("o", .location, of: s, at: now))
  }

  @Test func blacklistOverridesEverything() throws {
    var s = try settings {
      try $0[0].add("x")
      try $0[2].add("x")
    }
    s.fieldAudience = [.fullName: .everyone]
    s.sharing.viewerGrants = ["x": nil]
    #expect(!Sharing.canSee("x", .location, of: s, at: now))
    #expect(Sharing.visibleFields(to: "x", of: s, at: now).isEmpty)
  }

  @Test func pauseAndExpiryHideLocationOnly() throws {
    var s = try settings { try $0[0].add("mum") }
    s.sharing.paused = true
    #expect(!Sharing.canSee("mum", .location, of: s, at: now))
    #expect(Sharing.canSee("mum", .field(.fullName), of: s, at: now))
    s.sharing.paused = false
    s.sharing.until = now
    #expect(!Sharing.canSee("mum", .location, of: s, at: now))
    #expect(Sharing.canSee("mum", .location, of: s, at: now - 1))
    s.sharing.until = nil
    s.sharing.groupUntil[s.groups[0].id] = now + 10
    #expect(Sharing.canSee("mum", .location, of: s, at: now + 9))
    #expect(!Sharing.canSee("mum", .location, of: s, at: now + 10))
  }

  @Test func directGrantForLimitedTime() throws {
    var s = try settings()
    s.sharing.viewerGrants["anna"] = now + 3_600_000
    #expect(Sharing.canSee("anna", .location, of: s, at: now))
    #expect(!Sharing.canSee("anna", .location, of: s, at: now + 3_600_000))
    #expect(!Sharing.canSee("anna", .field(.phone), of: s, at: now))
  }

  @Test func shareForDurations() throws {
    let utc = try #require(TimeZone(identifier: "UTC"))
    let date = Timestamp.date(now)
    var s = try settings { try $0[0].add("mum") }
    s.sharing.paused = true
    s.sharing.share(for: .oneHour, now: date, timeZone: utc)
    #expect(Sharing.canSee("mum", .location, of: s, at: now + 3_599_999))
    #expect(!Sharing.canSee("mum", .location, of: s, at: now + 3_600_000))
    s.sharing.share(for: .always, now: date, timeZone: utc)
    #expect(Sharing.canSee("mum", .location, of: s, at: now + 1_000_000_000))
    s.sharing.share(with: "bob", for: .untilEndOfDay, now: date, timeZone: utc)
    #expect(Sharing.canSee("bob", .location, of: s, at: now))
    #expect(!Sharing.canSee("bob", .location, of: s, at: now + 86_400_000))
    s.sharing.share(with: "eve", for: .always, now: date, timeZone: utc)
    #expect(Sharing.canSee("eve", .location, of: s, at: now + 86_400_000))
    s.sharing.stopSharing(with: "eve")
    #expect(!Sharing.canSee("eve", .location, of: s, at: now))
  }

  @Test func fieldAudiences() throws {
    var s = try settings { try $0[1].add("friend") }
    // Friends see avatar, fullName, status by default.
    #expect(Sharing.visibleFields(to: "friend", of: s, at: now) == [.avatar, .fullName, .status])
    s.fieldAudience[.status] = .nobody
    s.fieldAudience[.birthday] = .everyone
    #expect(Sharing.visibleFields(to: "friend", of: s, at: now) == [.avatar, .fullName, .birthday])
    #expect(Sharing.visibleFields(to: "stranger", of: s, at: now) == [.birthday])
  }

  // MARK: Property tests on random social graphs

  struct Graph {
    var settings: PrivacySettings
    var users: [UserID]
  }

  static func randomGraph(_ rng: inout SplitMix64) -> Graph {
    let users = (0..<8).map { UserID("u\($0)") }
    var groups = Group.standardGroups(for: "o")
    for _ in 0..<Int.random(in: 0...3, using: &rng) {
      groups.append(try! Group(id: GroupID("c\(groups.count)"), ownerID: "o", name: "custom"))
    }
    for index in groups.indices {
      for user in users where Int.random(in: 0..<4, using: &rng) == 0 { groups[index].members.insert(user) }
      groups[index].visibility = GroupVisibility(
        location: Bool.random(using: &rng), fields: Set(ProfileField.allCases.filter { _ in Bool.random(using: &rng) }))
    }
    var audience: [ProfileField: FieldAudience] = [:]
    for field in ProfileField.allCases { audience[field] = FieldAudience.allCases.randomElement(using: &rng) }
    var sharing = SharingState(paused: Int.random(in: 0..<5, using: &rng) == 0)
    if Bool.random(using: &rng) { sharing.until = 1_000 + Int64.random(in: -500...500, using: &rng) }
    for group in groups where Int.random(in: 0..<3, using: &rng) == 0 {
      sharing.groupUntil[group.id] = 1_000 + Int64.random(in: -500...500, using: &rng)
    }
    for user in users where Int.random(in: 0..<4, using: &rng) == 0 {
      sharing.viewerGrants[user] = Bool.random(using: &rng) ? nil : 1_000 + Int64.random(in: -500...500, using: &rng)
    }
    return Graph(
      settings: PrivacySettings(owner: "o", groups: groups, fieldAudience: audience, sharing: sharing), users: users)
  }

  static let everything: [Visible] = [.location] + ProfileField.allCases.map { .field($0) }

  @Test func propertiesOnRandomGraphs() {
    var rng = SplitMix64(seed: 0xC0FFEE)
    let now: Int64 = 1_000
    for _ in 0..<500 {
      let graph = Self.randomGraph(&rng)
      let s = graph.settings
      for viewer in graph.users {
        // Blacklisted ⇒ sees nothing.
        if s.isBlacklisted(viewer) {
          #expect(Self.everything.allSatisfy { !Sharing.canSee(viewer, $0, of: s, at: now) })
        }
        // Paused ⇒ no location; expired ⇒ no location.
        if s.sharing.paused || (s.sharing.until.map { now >= $0 } ?? false) {
          #expect(!Sharing.canSee(viewer, .location, of: s, at: now))
        }
        // The owner always sees everything.
        #expect(Self.everything.allSatisfy { Sharing.canSee("o", $0, of: s, at: now) })
        // Monotonic in group grants: widening a (non-Blacklist) group's visibility or adding the viewer never hides
        // anything.
        var wider = s
        let grantable = wider.groups.indices.filter { wider.groups[$0].kind != .blacklist }
        let index = grantable[Int.random(in: 0..<grantable.count, using: &rng)]
        wider.groups[index].visibility = .everything
        wider.groups[index].members.insert(viewer)
        for what in Self.everything where Sharing.canSee(viewer, what, of: s, at: now) {
          #expect(Sharing.canSee(viewer, what, of: wider, at: now))
        }
        // Blacklisting ⇒ nothing, whatever else was granted.
        var black = wider
        if let b = black.groups.firstIndex(where: { $0.kind == .blacklist }) { black.groups[b].members.insert(viewer) }
        #expect(Self.everything.allSatisfy { !Sharing.canSee(viewer, $0, of: black, at: now) })
        // Later times never reveal more location than earlier ones (all grants only expire).
        if !Sharing.canSee(viewer, .location, of: s, at: now) {
          #expect(!Sharing.canSee(viewer, .location, of: s, at: now + 1_000))
        }
        // Location audience agrees with canSee.
        #expect(
          Sharing.locationAudience(of: s, among: graph.users, at: now).contains(viewer)
            == Sharing.canSee(viewer, .location, of: s, at: now))
      }
    }
  }
}

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
      // `viewerGrants[user] = nil` would delete the key; `updateValue(nil, …)` stores an "always" grant.
      sharing.viewerGrants.updateValue(
        Bool.random(using: &rng) ? nil : 1_000 + Int64.random(in: -500...500, using: &rng), forKey: user)
    }
    return Graph(
      settings: PrivacySettings(owner: "o", groups: groups, fieldAudience: audience, sharing: sharing), users: users)
  }

  static let everything: [Visible] = [.location] + ProfileField.allCases.map { .field($0) }

  /// An independent reference model of PRODUCT.md's visibility rules, written from the rules and not from
  /// `Sharing`: the owner sees everything; a Blacklist member sees nothing; location needs sharing on (not
  /// paused, global expiry not reached) and either a direct grant (no expiry, or not yet expired) or membership
  /// of a non-Blacklist group that grants location and whose per-group expiry is not reached; a field is visible
  /// to everyone, to nobody, or (the default) to members of a non-Blacklist group that grants that field.
  static func oracle(_ viewer: UserID, _ what: Visible, _ settings: PrivacySettings, _ now: Int64) -> Bool {
    if viewer == settings.owner { return true }
    for group in settings.groups where group.kind == .blacklist {
      if group.members.contains(viewer) { return false }
    }
    var viewerGroups: [Group] = []
    for group in settings.groups where group.kind != .blacklist {
      if group.members.contains(viewer) { viewerGroups.append(group) }
    }
    switch what {
    case .location:
      if settings.sharing.paused { return false }
      if let until = settings.sharing.until, now >= until { return false }
      for (grantee, expiry) in settings.sharing.viewerGrants where grantee == viewer {
        switch expiry {
        case .none: return true
        case .some(let end): if now < end { return true }
        }
      }
      for group in viewerGroups where group.visibility.location {
        guard let end = settings.sharing.groupUntil[group.id] else { return true }
        if now < end { return true }
      }
      return false
    case .field(let field):
      let audience = settings.fieldAudience[field] ?? .groups
      if audience == .everyone { return true }
      if audience == .nobody { return false }
      for group in viewerGroups where group.visibility.fields.contains(field) { return true }
      return false
    }
  }

  @Test func canSeeMatchesReferenceModelOnRandomGraphs() {
    var rng = SplitMix64(seed: 0x5EED_0F_0AC1E)
    var checked: [Visible: (shown: Int, hidden: Int)] = [:]
    var alwaysGrantsSeen = 0
    var shownOnlyByDirectGrant = 0
    for _ in 0..<500 {
      let graph = Self.randomGraph(&rng)
      let settings = graph.settings
      alwaysGrantsSeen += settings.sharing.viewerGrants.values.count { $0 == nil }
      for now: Int64 in [499, 999, 1_000, 1_001, 1_501] {
        for viewer in graph.users + ["o", "stranger"] {
          for what in Self.everything {
            let expected = Self.oracle(viewer, what, settings, now)
            #expect(
              Sharing.canSee(viewer, what, of: settings, at: now) == expected,
              "viewer \(viewer), \(what), now \(now), settings \(settings)")
            if viewer != "o" {
              checked[what, default: (0, 0)].shown += expected ? 1 : 0
              checked[what, default: (0, 0)].hidden += expected ? 0 : 1
            }
          }
          if viewer != "o", Self.oracle(viewer, .location, settings, now) {
            var withoutGrant = settings
            withoutGrant.sharing.viewerGrants.removeValue(forKey: viewer)
            if !Self.oracle(viewer, .location, withoutGrant, now) { shownOnlyByDirectGrant += 1 }
          }
        }
      }
    }
    // The generator exercises both answers for every kind of information, and "always" direct grants.
    for what in Self.everything {
      #expect(
        (checked[what]?.shown ?? 0) > 100 && (checked[what]?.hidden ?? 0) > 100, "\(what): \(checked[what] as Any)")
    }
    #expect(alwaysGrantsSeen > 50)
    #expect(shownOnlyByDirectGrant > 50)
  }

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

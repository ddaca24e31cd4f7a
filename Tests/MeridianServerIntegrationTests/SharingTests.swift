import DomainKit
import Foundation
import MeridianAPI
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import Testing

@Suite("Groups and visibility over HTTP", .inProcess)
struct SharingTests {
  @Test func standardGroupsRefuseRenameAndDelete() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let groups = try await anna.send(API.groups).groups
      #expect(groups.map(\.name) == ["Family", "Friends", "Blacklist"])
      for group in groups {
        await expectAPIError(.standardGroup, status: 409) {
          try await anna.send(API.updateGroup, parameters: GroupRef(id: group.id), body: GroupUpdate(name: "Renamed"))
        }
        await expectAPIError(.standardGroup, status: 409) {
          try await anna.send(API.deleteGroup, parameters: GroupRef(id: group.id))
        }
      }
      // Visibility of a standard group may change.
      let friends = try #require(groups.first { $0.kind == .friends })
      let changed = try await anna.send(
        API.updateGroup, parameters: GroupRef(id: friends.id), body: GroupUpdate(visibility: .nothing))
      #expect(changed.visibility == .nothing)
      #expect(changed.name == "Friends")
    }
  }

  @Test func customGroupLifecycle() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let (bob, _) = try await server.signUp("bob")
      let hikers = try await anna.send(
        API.createGroup, body: NewGroup(name: "  Hikers ", visibility: GroupVisibility(location: true, fields: [])))
      #expect(hikers.name == "Hikers")
      #expect(hikers.kind == .custom)
      let renamed = try await anna.send(
        API.updateGroup, parameters: GroupRef(id: hikers.id), body: GroupUpdate(name: "Climbers"))
      #expect(renamed.name == "Climbers")
      let withBob = try await anna.send(
        API.addMember, parameters: GroupMemberRef(groupID: hikers.id, userID: bob.userId))
      #expect(withBob.members == [bob.userId])
      await expectAPIError(.notFound, status: 404) {
        try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: hikers.id, userID: "no-such-user"))
      }
      let me = try await anna.send(API.me)
      await expectAPIError(.invalidMember, status: 400) {
        try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: hikers.id, userID: me.account.id))
      }
      let without = try await anna.send(
        API.removeMember, parameters: GroupMemberRef(groupID: hikers.id, userID: bob.userId))
      #expect(without.members.isEmpty)
      await expectAPIError(.invalidGroupName, status: 400) {
        try await anna.send(API.createGroup, body: NewGroup(name: "   "))
      }
      _ = try await anna.send(API.deleteGroup, parameters: GroupRef(id: hikers.id))
      #expect(try await anna.send(API.groups).groups.count == 3)
      await expectAPIError(.notFound, status: 404) {
        try await anna.send(API.deleteGroup, parameters: GroupRef(id: hikers.id))
      }
    }
  }

  @Test func blacklistPauseAndExpiryDecideWhoSeesTheLocation() async throws {
    // The server's clock is the test's: the sharing ends when the test moves the clock, not after a wait.
    let clock = TestClock()
    try await TestServer.with(clock: clock) { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let (_, carol) = try await server.signUp("carol")
      let annaID = annaSession.userId
      let groups = try await anna.send(API.groups).groups
      let friends = try #require(groups.first { $0.kind == .friends })
      let blacklist = try #require(groups.first { $0.kind == .blacklist })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 3)))

      // Bob (Friends) sees the newest fix; Carol (no group) does not.
      let seen = try await bob.send(API.userLocation, parameters: UserRef(id: annaID))
      #expect(seen.fix?.timestamp == 1_700_000_002_000)
      // A viewer sees the device by its handle, never by its id.
      #expect(seen.fix?.deviceID != nil && seen.fix?.deviceID != "anna-phone")
      await expectAPIError(.locationUnavailable, status: 404) {
        try await carol.send(API.userLocation, parameters: UserRef(id: annaID))
      }

      // Pause hides it; resume shows it again.
      #expect(try await anna.send(API.pauseSharing).paused)
      await expectAPIError(.locationUnavailable, status: 404) {
        try await bob.send(API.userLocation, parameters: UserRef(id: annaID))
      }
      #expect(try await anna.send(API.resumeSharing).paused == false)
      _ = try await bob.send(API.userLocation, parameters: UserRef(id: annaID))

      // Blacklist overrides Friends: no location, no profile.
      _ = try await anna.send(
        API.addMember, parameters: GroupMemberRef(groupID: blacklist.id, userID: bobSession.userId))
      await expectAPIError(.locationUnavailable, status: 404) {
        try await bob.send(API.userLocation, parameters: UserRef(id: annaID))
      }
      await expectAPIError(.notFound, status: 404) {
        try await bob.send(API.userProfile, parameters: UserRef(id: annaID))
      }
      #expect(try await bob.send(API.searchUsers, parameters: UserSearchQuery(q: "Anna")).users.isEmpty)
      _ = try await anna.send(
        API.removeMember, parameters: GroupMemberRef(groupID: blacklist.id, userID: bobSession.userId))
      _ = try await bob.send(API.userLocation, parameters: UserRef(id: annaID))

      // Sharing until a past instant is refused; until an instant soon expires.
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.shareUntil, body: SharingUntil(until: 1_000))
      }
      let until = clock.now + 3000
      #expect(try await anna.send(API.shareUntil, body: SharingUntil(until: until)).until == until)
      _ = try await bob.send(API.userLocation, parameters: UserRef(id: annaID))
      clock.advance(3_100)
      await expectAPIError(.locationUnavailable, status: 404) {
        try await bob.send(API.userLocation, parameters: UserRef(id: annaID))
      }
    }
  }

  /// A fix dated ahead of the server's clock (a phone whose clock runs fast; accepted up to 5 minutes ahead) is not
  /// where the person is now: a viewer's current location is the newest fix not dated after now.
  @Test func aFixDatedAheadOfTheClockIsNotTheCurrentLocation() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let friends = try #require(try await anna.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      let now = Timestamp.milliseconds(Date())
      let past = try makeFixes(count: 1, start: now - 60_000)
      let ahead = try makeFixes(count: 1, start: now + 240_000, latitude: 48.85)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: past + ahead))
      let seen = try await bob.send(API.userLocation, parameters: UserRef(id: annaSession.userId))
      #expect(seen.fix?.timestamp == now - 60_000)
      let own = try await anna.send(API.userLocation, parameters: UserRef(id: annaSession.userId))
      #expect(own.fix?.timestamp == now - 60_000)
    }
  }

  @Test func aGroupsDeadlineEndsOnlyWhatThatGroupSees() async throws {
    // The server's clock is the test's: "soon" stays in the future however slow the refusals below are (at a load
    // they took more than its 3 s), and it passes when the test moves the clock, not after a wait.
    let clock = TestClock()
    try await TestServer.with(clock: clock) { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let (carolSession, carol) = try await server.signUp("carol")
      let (_, dave) = try await server.signUp("dave")
      let annaID = annaSession.userId
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1)))
      let groups = try await anna.send(API.groups).groups
      let friends = try #require(groups.first { $0.kind == .friends })
      let family = try #require(groups.first { $0.kind == .family })
      let blacklist = try #require(groups.first { $0.kind == .blacklist })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      _ = try await anna.send(
        API.addMember, parameters: GroupMemberRef(groupID: family.id, userID: carolSession.userId))
      _ = try await bob.send(API.userLocation, parameters: UserRef(id: annaID))
      _ = try await carol.send(API.userLocation, parameters: UserRef(id: annaID))

      // Refused: a past instant, Blacklist, a group that isn't anna's, an unknown group. Nothing changes.
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.shareUntil, body: SharingUntil(until: 1_000, groupId: friends.id))
      }
      let soon = clock.now + 3000
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.shareUntil, body: SharingUntil(until: soon, groupId: blacklist.id))
      }
      await expectAPIError(.notFound, status: 404) {
        try await dave.send(API.shareUntil, body: SharingUntil(until: soon, groupId: friends.id))
      }
      await expectAPIError(.notFound, status: 404) {
        try await anna.send(API.shareUntil, body: SharingUntil(until: soon, groupId: GroupID("no-such-group")))
      }
      await expectAPIError(.notFound, status: 404) {
        try await dave.send(API.clearGroupUntil, parameters: GroupRef(id: friends.id))
      }
      #expect(try await anna.send(API.me).sharing.groupUntil.isEmpty)

      // Friends until soon: bob loses the location then, carol (Family) keeps it; nothing else of the state moves.
      let state = try await anna.send(API.shareUntil, body: SharingUntil(until: soon, groupId: friends.id))
      #expect(state.groupUntil == [friends.id: soon])
      #expect(state.until == nil && !state.paused)
      _ = try await bob.send(API.userLocation, parameters: UserRef(id: annaID))
      clock.advance(3_100)
      await expectAPIError(.locationUnavailable, status: 404) {
        try await bob.send(API.userLocation, parameters: UserRef(id: annaID))
      }
      _ = try await carol.send(API.userLocation, parameters: UserRef(id: annaID))

      // Cleared: Friends see it again without a deadline.
      #expect(try await anna.send(API.clearGroupUntil, parameters: GroupRef(id: friends.id)).groupUntil.isEmpty)
      _ = try await bob.send(API.userLocation, parameters: UserRef(id: annaID))

      // A deleted custom group takes its deadline with it.
      let hikers = try await anna.send(API.createGroup, body: NewGroup(name: "Hikers"))
      let later = Timestamp.milliseconds(Date()) + 3_600_000
      _ = try await anna.send(API.shareUntil, body: SharingUntil(until: later, groupId: hikers.id))
      #expect(try await anna.send(API.me).sharing.groupUntil == [hikers.id: later])
      _ = try await anna.send(API.deleteGroup, parameters: GroupRef(id: hikers.id))
      #expect(try await anna.send(API.me).sharing.groupUntil.isEmpty)
    }
  }

  @Test func profileFieldsFollowTheirAudience() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, bob) = try await server.signUp("bob")
      let (_, carol) = try await server.signUp("carol")
      let updated = try await anna.send(
        API.updateProfile,
        body: ProfileUpdate(
          fullName: "Anna Kovalenko", birthday: CalendarDay("1990-05-17"), status: "Hiking",
          audience: [.birthday: .nobody, .status: .everyone]))
      #expect(updated.audience[.birthday] == .nobody)
      let friends = try #require(try await anna.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))

      // Friends grant avatar, full name and status; the birthday is for nobody.
      let asBob = try await bob.send(API.userProfile, parameters: UserRef(id: annaSession.userId))
      #expect(asBob.fullName == "Anna Kovalenko")
      #expect(asBob.status == "Hiking")
      #expect(asBob.birthday == nil)
      // Carol is in no group: only the status (audience everyone).
      let asCarol = try await carol.send(API.userProfile, parameters: UserRef(id: annaSession.userId))
      #expect(asCarol.fullName == nil)
      #expect(asCarol.status == "Hiking")
      // The owner sees everything.
      #expect(try await anna.send(API.me).profile.birthday == CalendarDay("1990-05-17"))
      // Search by name finds Anna for Bob (name visible), not for Carol.
      #expect(try await bob.send(API.searchUsers, parameters: UserSearchQuery(q: "Kovalenko")).users.count == 1)
      #expect(try await carol.send(API.searchUsers, parameters: UserSearchQuery(q: "Kovalenko")).users.isEmpty)
      await expectAPIError(.invalidRequest, status: 400) {
        try await bob.send(API.searchUsers, parameters: UserSearchQuery(q: "a"))
      }
    }
  }
}

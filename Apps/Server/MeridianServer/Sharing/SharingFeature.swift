import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit
import RealtimeKit

/// Groups and members, pausing and timed sharing, who the caller may see and their last locations. Every change of
/// who may see whom is enforced on the live sockets at once.
struct SharingFeature: Sendable {
  let environment: ServerEnvironment
  let live: LiveUpdates
  var accounts: any AccountStore { environment.store }
  var store: any SocialStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.groups) { call in GroupList(groups: try await store.groups(owner: call.authenticated())) }
    routes.on(API.createGroup, status: .created) { call in try await createGroup(call.authenticated(), call.body) }
    routes.on(API.updateGroup) { call in
      try await updateGroup(call.authenticated(), call.parameters.id, call.body)
    }
    routes.on(API.deleteGroup, status: .noContent) { call in
      try await deleteGroup(call.authenticated(), call.parameters.id)
    }
    routes.on(API.addMember) { call in
      try await changeMember(call.authenticated(), call.parameters, add: true)
    }
    routes.on(API.removeMember) { call in
      try await changeMember(call.authenticated(), call.parameters, add: false)
    }
    routes.on(API.pauseSharing) { call in
      try await updateSharing(call.authenticated()) { state, _ in state.paused = true }
    }
    routes.on(API.resumeSharing) { call in
      try await updateSharing(call.authenticated()) { state, _ in
        state.paused = false
        state.until = nil
      }
    }
    routes.on(API.shareUntil) { call in
      let (owner, until) = (try call.authenticated(), call.body.until)
      guard let groupID = call.body.groupId else {
        return try await updateSharing(owner) { state, now throws(APIError) in
          guard until > now else { throw .invalidRequest("'until' must be in the future (UTC milliseconds).") }
          state.paused = false
          state.until = until
        }
      }
      guard try await ownedGroup(owner, groupID).kind != .blacklist else {
        throw APIError.invalidRequest("Blacklist sees nothing; it takes no deadline.")
      }
      return try await updateSharing(owner) { state, now throws(APIError) in
        guard until > now else { throw .invalidRequest("'until' must be in the future (UTC milliseconds).") }
        state.groupUntil[groupID] = until
      }
    }
    routes.on(API.clearGroupUntil) { call in
      let owner = try call.authenticated()
      let group = try await ownedGroup(owner, call.parameters.id)
      return try await updateSharing(owner) { state, _ in state.groupUntil[group.id] = nil }
    }
    routes.on(API.visibleUsers) { call in try await visibleUsers(viewer: call.authenticated()) }
    routes.on(API.userLocation) { call in try await userLocation(viewer: call.authenticated(), of: call.parameters.id) }
  }

  func createGroup(_ owner: UserID, _ body: NewGroup) async throws -> Group {
    if let limit = ServerLimits.active(environment.limits.groupsPerAccount) {
      let custom = try await store.groups(owner: owner).filter { $0.kind == .custom }.count
      guard custom < limit else {
        throw APIError(
          status: 409, code: .quotaExceeded, message: "You have \(custom) groups, the most allowed; delete one first.")
      }
    }
    let group: Group
    do {
      group = try Group(
        id: GroupID(Secrets.userID()), ownerID: owner, name: body.name, visibility: body.visibility ?? .nothing)
    } catch {
      throw APIError(status: 400, code: .invalidGroupName, message: error.description)
    }
    try await store.saveGroup(group)
    return group
  }

  func updateGroup(_ owner: UserID, _ id: GroupID, _ update: GroupUpdate) async throws -> Group {
    var group = try await ownedGroup(owner, id)
    if let name = update.name, name != group.name {
      do {
        try group.rename(to: name)
      } catch {
        throw groupError(error)
      }
    }
    if let visibility = update.visibility { group.visibility = visibility }
    try await store.saveGroup(group)
    try await live.enforce(owner: owner)
    return group
  }

  func deleteGroup(_ owner: UserID, _ id: GroupID) async throws -> NoContent {
    let group = try await ownedGroup(owner, id)
    do {
      try group.checkDeletable()
    } catch {
      throw groupError(error)
    }
    try await store.deleteGroup(id)
    if try await store.sharing(owner: owner).groupUntil[id] != nil {
      _ = try await updateSharing(owner) { state, _ in state.groupUntil[id] = nil }
    }
    await live.groupDeleted(id)
    try await live.enforce(owner: owner)
    return NoContent()
  }

  func changeMember(_ owner: UserID, _ ref: GroupMemberRef, add: Bool) async throws -> Group {
    var group = try await ownedGroup(owner, ref.groupID)
    if add {
      guard try await accounts.account(ref.userID) != nil else { throw APIError.notFound("There is no such user.") }
      do {
        try group.add(ref.userID)
      } catch {
        throw groupError(error)
      }
    } else {
      group.remove(ref.userID)
    }
    try await store.saveGroup(group)
    // Adding someone to Blacklist, or removing them from a group that shared the location, ends their live view.
    try await live.enforce(owner: owner)
    return group
  }

  private func ownedGroup(_ owner: UserID, _ id: GroupID) async throws -> Group {
    guard let group = try await store.group(id), group.ownerID == owner else {
      throw APIError.notFound("You have no group with this id.")
    }
    return group
  }

  private func groupError(_ error: GroupError) -> APIError {
    switch error {
    case .cannotDeleteStandardGroup, .cannotRenameStandardGroup:
      APIError(status: 409, code: .standardGroup, message: error.description)
    case .invalidName: APIError(status: 400, code: .invalidGroupName, message: error.description)
    case .ownerCannotBeMember: APIError(status: 400, code: .invalidMember, message: error.description)
    }
  }

  // MARK: Sharing

  func updateSharing(
    _ owner: UserID, _ change: (inout SharingState, Int64) throws(APIError) -> Void
  ) async throws -> SharingState {
    let (before, now) = (try await store.sharing(owner: owner), environment.now())
    var state = before
    try change(&state, now)
    state = ShareLinkRules.noting(state, resumedFrom: before, at: now)
    try await store.saveSharing(state, owner: owner)
    try await live.enforce(owner: owner)
    return state
  }

  /// The people whose location `viewer` may see now, with their names where visible, the time of their last fix
  /// (none while it lies in a zone they hide), the precision the viewer sees them at and the live channel that
  /// carries their fixes at that precision (``LiveUpdates/seenChannel(_:_:)``).
  func visibleUsers(viewer: UserID) async throws -> VisibleUsers {
    let now = environment.now()
    var people: [VisibleUsers.Person] = []
    for settings in try await visibleOwners(viewer: viewer, at: now) {
      let owner = settings.owner
      let name =
        Sharing.canSee(viewer, .field(.fullName), of: settings, at: now)
        ? try await store.profile(owner)?.fullName : nil
      let precision = Sharing.precision(for: viewer, of: settings, at: now)
      var lastFixAt: Int64?
      if let fix = try await environment.lastFix(of: owner) {
        // Only whether it shows and when: no town looked up for a time.
        let view = AudienceView.of(fix, precision: precision == .town ? .approximate : precision, zones: settings.zones)
        lastFixAt = view == .hidden ? nil : fix.timestamp
      }
      people.append(
        VisibleUsers.Person(
          userId: owner, fullName: name, lastFixAt: lastFixAt, precision: precision,
          channel: LiveUpdates.seenChannel(owner, precision)?.description))
    }
    return VisibleUsers(users: people.sorted { $0.userId.rawValue < $1.userId.rawValue })
  }

  /// The live channel of each person whose location `viewer` may see now, at the precision the viewer sees them
  /// (``LiveUpdates/seenChannel(_:_:)``): what a live client subscribes to.
  func visibleChannels(viewer: UserID) async throws -> [UserID: ChannelName] {
    let now = environment.now()
    var channels: [UserID: ChannelName] = [:]
    for settings in try await visibleOwners(viewer: viewer, at: now) {
      channels[settings.owner] = LiveUpdates.seenChannel(
        settings.owner, Sharing.precision(for: viewer, of: settings, at: now))
    }
    return channels
  }

  /// The live channel of `person` at the precision `viewer` sees them now; nil when the viewer may not see them.
  func visibleChannel(viewer: UserID, of person: UserID) async throws -> ChannelName? {
    let now = environment.now()
    guard let settings = try await visibleSettings(of: person, viewer: viewer, at: now) else { return nil }
    return LiveUpdates.seenChannel(person, Sharing.precision(for: viewer, of: settings, at: now))
  }

  /// The privacy settings of everyone but `viewer` whose location `viewer` may see at `now`.
  private func visibleOwners(viewer: UserID, at now: Int64) async throws -> [PrivacySettings] {
    var owners: [PrivacySettings] = []
    for owner in Set(try await store.sharingCandidates(viewer: viewer)) {
      if let settings = try await visibleSettings(of: owner, viewer: viewer, at: now) { owners.append(settings) }
    }
    return owners
  }

  /// `owner`'s privacy settings when `viewer`, someone else, may see the owner's location at `now`.
  private func visibleSettings(of owner: UserID, viewer: UserID, at now: Int64) async throws -> PrivacySettings? {
    guard owner != viewer, let settings = try await store.privacySettings(owner: owner),
      Sharing.canSee(viewer, .location, of: settings, at: now)
    else { return nil }
    return settings
  }

  /// The last fix of `user` as `viewer` may see it (``FixAudience``): exact, coarsened, at the town, or only the time
  /// of a fix in a private zone; `404 location_unavailable` when there is none to show.
  func userLocation(viewer: UserID, of user: UserID) async throws -> UserLocation {
    let unavailable = APIError(
      status: 404, code: .locationUnavailable, message: "This user's location is unknown or not shared with you.")
    let now = environment.now()
    guard let settings = try await store.privacySettings(owner: user),
      Sharing.canSee(viewer, .location, of: settings, at: now),
      let fix = try await environment.lastFix(of: user)
    else { throw unavailable }
    if viewer == user { return UserLocation(userId: user, fix: fix) }
    let precision = Sharing.precision(for: viewer, of: settings, at: now)
    let shownPrecision = precision == .exact ? nil : precision
    switch await environment.audience.view(of: fix, for: viewer, of: settings, at: now) {
    case .hidden: throw unavailable
    case .inPrivateZone(let timestamp):
      return UserLocation(userId: user, fix: nil, precision: shownPrecision, privateZoneAt: timestamp)
    case .shown(let shown, let town):
      return UserLocation(
        userId: user, fix: try await environment.deviceHandles.handles().redacted(shown, owner: user),
        precision: shownPrecision, town: town)
    }
  }
}

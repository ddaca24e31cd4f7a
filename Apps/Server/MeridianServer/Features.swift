import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import NetworkingKit
import Synchronization

/// What the route handlers need, as values: the store, the SMS sender, the clock, the limits. Tests build one with
/// a temporary database and a capturing SMS sender.
public struct ServerEnvironment: Sendable {
  /// The storage.
  public var store: any MeridianStore
  /// The SMS sender for one-time codes.
  public var smsSender: any SMSSender
  /// Password hashing.
  public var passwords: PasswordHasher
  /// The current time in UTC milliseconds.
  public var now: @Sendable () -> Int64
  /// Bearer token lifetime in milliseconds.
  public var tokenLifetime: Int64
  /// One-time code lifetime in milliseconds (5 minutes).
  public var otpLifetime: Int64 = 5 * 60 * 1000
  /// Wrong codes allowed per code.
  public var otpAttempts = 5
  /// Code requests per phone per hour.
  public var otpPhoneLimiter: RateLimiter
  /// Code requests per client address per hour.
  public var otpAddressLimiter: RateLimiter
  /// The admin API's bearer token (`MERIDIAN_ADMIN_TOKEN`); nil refuses every admin request.
  public var adminToken: String?
  /// What one account, address or device may do.
  public var limits: ServerLimits
  /// Wrong passwords per account (by the email as typed, lowercased).
  public var signInFailuresByAccount: FailureBackoff
  /// Wrong passwords per client address.
  public var signInFailuresByAddress: FailureBackoff
  /// User searches per account per minute.
  public var searchLimiter: RateLimiter
  /// Fixes per account per minute.
  public var fixLimiter: RateLimiter
  /// OsmAnd reports per device identifier per minute.
  public var osmAndDeviceLimiter: RateLimiter
  /// OsmAnd reports per client address per minute.
  public var osmAndAddressLimiter: RateLimiter
  /// The handles viewers see instead of device ids.
  public var deviceHandles: DeviceHandleSource

  /// An environment from a configuration.
  public init(
    store: any MeridianStore, smsSender: any SMSSender, configuration: ServerConfiguration,
    now: @escaping @Sendable () -> Int64 = { Timestamp.milliseconds(Date()) }
  ) {
    self.store = store
    self.smsSender = smsSender
    self.passwords = PasswordHasher(cost: UInt8(clamping: configuration.bcryptCost))
    self.now = now
    self.tokenLifetime = configuration.tokenLifetime * 1000
    self.otpPhoneLimiter = RateLimiter(limit: configuration.otpPerPhonePerHour, window: 3_600_000)
    self.otpAddressLimiter = RateLimiter(limit: configuration.otpPerAddressPerHour, window: 3_600_000)
    self.adminToken = configuration.adminToken
    let limits = configuration.limits
    self.limits = limits
    self.signInFailuresByAccount = FailureBackoff(freeFailures: limits.signInFailuresPerAccount)
    self.signInFailuresByAddress = FailureBackoff(freeFailures: limits.signInFailuresPerAddress)
    self.searchLimiter = RateLimiter(limit: limits.searchesPerAccountPerMinute, window: 60_000)
    self.fixLimiter = RateLimiter(limit: limits.fixesPerAccountPerMinute, window: 60_000)
    self.osmAndDeviceLimiter = RateLimiter(limit: limits.osmAndPerDevicePerMinute, window: 60_000)
    self.osmAndAddressLimiter = RateLimiter(limit: limits.osmAndPerAddressPerMinute, window: 60_000)
    self.deviceHandles = DeviceHandleSource(store: store)
  }

  /// The newest fix of `owner` that isn't dated in the future.
  func lastFix(of owner: UserID) async throws -> LocationFix? {
    try await store.lastFix(owner: owner, notAfter: now() + Int64(limits.futureFixSeconds) * 1000)
  }

  /// Checks a password sign-in's throttles before the password is checked (no bcrypt work for a throttled guess).
  /// - Throws: ``APIError`` `rate_limited` (429, `Retry-After`) while the account or the address must wait.
  func checkSignInAllowed(account: String, address: String) async throws(APIError) {
    let now = now()
    let wait = max(
      await signInFailuresByAccount.wait(account, now: now) ?? 0,
      await signInFailuresByAddress.wait(address, now: now) ?? 0)
    guard wait == 0 else {
      throw .rateLimited(
        "Too many wrong passwords; wait \((wait + 999) / 1000) s before trying again.", retryAfterMilliseconds: wait)
    }
  }

  /// Records a password sign-in's outcome for the throttles.
  func recordSignIn(account: String, address: String, succeeded: Bool) async {
    if succeeded {
      await signInFailuresByAccount.succeeded(account)
    } else {
      let now = now()
      await signInFailuresByAccount.failed(account, now: now)
      await signInFailuresByAddress.failed(address, now: now)
    }
  }

  /// Checks an email and password sign-in, throttled per account and per address, with the same bcrypt work
  /// whether or not the account exists. Returns the account when the password is right.
  /// - Throws: `rate_limited` (throttled), `invalid_password` (longer than bcrypt reads), `invalid_credentials`,
  ///   `account_disabled`.
  func signIn(email typed: String, password: String, address: String) async throws -> UserID {
    let failure = APIError(status: 401, code: .invalidCredentials, message: "The email or password is wrong.")
    let account = typed.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    try await checkSignInAllowed(account: account, address: address)
    guard password.utf8.count <= PasswordRules.maximumBytes else {
      throw APIError(
        status: 400, code: .invalidPassword,
        message: CredentialError.passwordTooLong(maximumBytes: PasswordRules.maximumBytes).description)
    }
    let email = try? EmailAddress.validate(typed).lowercased()
    let found = try await email.asyncFlatMap { try await store.account(for: .email($0)) }
    let matches = try await passwords.verify(password, against: found?.passwordHash)
    await recordSignIn(account: account, address: address, succeeded: matches)
    guard matches, let found else { throw failure }
    guard try await !store.isDisabled(found.account.id) else { throw APIError.accountDisabled }
    return found.account.id
  }
}

/// The deployment's ``DeviceHandles``, keyed with the store's `device-handle` secret (read once).
public final class DeviceHandleSource: Sendable {
  private let store: any MeridianStore
  private let loaded = Mutex<DeviceHandles?>(nil)

  init(store: any MeridianStore) { self.store = store }

  /// The handles.
  public func handles() async throws -> DeviceHandles {
    if let handles = loaded.withLock({ $0 }) { return handles }
    let handles = DeviceHandles(secret: try await store.deploymentSecret("device-handle"))
    loaded.withLock { $0 = handles }
    return handles
  }
}

extension Optional {
  /// `flatMap` with an async transform.
  func asyncFlatMap<T>(_ transform: (Wrapped) async throws -> T?) async rethrows -> T? {
    guard let value = self else { return nil }
    return try await transform(value)
  }
}

/// The route handlers, one method per endpoint of ``API``.
struct Features: Sendable {
  let environment: ServerEnvironment
  let ingest: FixIngest
  let live: LiveUpdates

  var store: any MeridianStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.health) { _ in try await health() }
    routes.on(API.requestOTP, status: .accepted) { call in try await requestOTP(call) }
    routes.on(API.verifyOTP) { call in try await verifyOTP(call.body) }
    routes.on(API.register, status: .created) { call in try await register(call.body) }
    routes.on(API.login) { call in try await login(call.body, address: call.clientAddress) }
    routes.on(API.logout, status: .noContent) { call in try await logout(call) }
    routes.on(API.me) { call in try await me(call.authenticated()) }
    routes.on(API.updateProfile) { call in try await updateProfile(call.authenticated(), call.body) }
    routes.on(API.userProfile) { call in try await userProfile(viewer: call.authenticated(), of: call.parameters.id) }
    routes.on(API.searchUsers) { call in try await searchUsers(viewer: call.authenticated(), call.parameters.q) }
    routes.on(API.devices) { call in DeviceList(devices: try await store.devices(owner: call.authenticated())) }
    routes.on(API.enableOsmAnd, status: .created) { call in
      try await enableOsmAnd(call.authenticated(), call.parameters.id)
    }
    routes.on(API.disableOsmAnd, status: .noContent) { call in
      try await disableOsmAnd(call.authenticated(), call.parameters.id)
    }
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
      let until = call.body.until
      return try await updateSharing(call.authenticated()) { state, now throws(APIError) in
        guard until > now else { throw .invalidRequest("'until' must be in the future (UTC milliseconds).") }
        state.paused = false
        state.until = until
      }
    }
    routes.on(API.visibleUsers) { call in try await visibleUsers(viewer: call.authenticated()) }
    routes.on(API.postFixes, keyResolvedByHandler: true) { call in
      try await ingest.submit(call.authenticated(), call.body, idempotency: call.idempotency)
    }
    routes.on(API.userLocation) { call in try await userLocation(viewer: call.authenticated(), of: call.parameters.id) }
    routes.on(API.history) { call in try await history(call.authenticated(), call.parameters) }
    routes.on(API.deleteHistory) { call in
      let filter = call.parameters.filter(now: Timestamp.date(environment.now()))
      return HistoryDeletion(deleted: try await store.deleteHistory(owner: call.authenticated(), filter: filter))
    }
    routes.on(API.historyClusters) { call in try await clusters(call.authenticated(), call.parameters) }
    registerVenues(on: routes)
    PhoneAppIngest(features: self).register(on: routes)
    HistoryExport(environment: environment).register(on: routes)
    AdminFeatures(features: self).register(on: routes)
  }

  // MARK: Health

  func health() async throws -> HealthStatus {
    do {
      try await store.checkHealth()
      return HealthStatus(status: "ok", database: "ok")
    } catch {
      throw APIError(status: 503, code: .unavailable, message: "The database does not answer: \(error)")
    }
  }

  // MARK: Authentication

  func requestOTP(_ call: RouteCall<Void, OTPRequest>) async throws -> NoContent {
    let phone = try normalizedPhone(call.body.phone)
    let now = environment.now()
    guard await environment.otpAddressLimiter.allow(call.clientAddress, now: now) else {
      throw APIError.rateLimited("Too many code requests from this address; try again in an hour.")
    }
    guard await environment.otpPhoneLimiter.allow(phone, now: now) else {
      throw APIError.rateLimited("Too many codes for this number; try again in an hour.")
    }
    let code = Secrets.otpCode()
    try await store.replaceOTP(
      phone: phone, codeHash: SecretHash.sha256(phone + ":" + code), expiresAt: now + environment.otpLifetime,
      maxAttempts: environment.otpAttempts, now: now)
    try await environment.smsSender.sendCode(code, to: phone)
    return NoContent()
  }

  func verifyOTP(_ body: OTPVerification) async throws -> AuthSession {
    let phone = try normalizedPhone(body.phone)
    let now = environment.now()
    let code = body.code.trimmingCharacters(in: .whitespaces)
    switch try await store.checkOTP(phone: phone, codeHash: SecretHash.sha256(phone + ":" + code), now: now) {
    case .valid: break
    case .wrong(let remaining):
      throw APIError(
        status: 401, code: .otpInvalid, message: "The code is wrong; \(remaining) attempts left.")
    case .expired:
      throw APIError(status: 401, code: .otpExpired, message: "No valid code for this number; request a new one.")
    case .exhausted:
      throw APIError(status: 401, code: .otpAttemptsExceeded, message: "Too many wrong codes; request a new one.")
    }
    if let existing = try await store.account(for: .phone(phone)) {
      guard try await !store.isDisabled(existing.account.id) else { throw APIError.accountDisabled }
      return try await issueToken(for: existing.account.id, isNew: false)
    }
    if let account = try await store.createAccount(
      id: UserID(Secrets.userID()), credential: .phone(phone), passwordHash: nil, now: now)
    {
      return try await issueToken(for: account.id, isNew: true)
    }
    // Another request created the account between the check and the insert.
    guard let existing = try await store.account(for: .phone(phone)) else {
      throw APIError(status: 500, code: .internal, message: "The account could not be created; try again.")
    }
    return try await issueToken(for: existing.account.id, isNew: false)
  }

  func register(_ body: EmailCredentials) async throws -> AuthSession {
    let email: String
    do {
      // Addresses are unique regardless of case: mail providers treat the local part case-insensitively.
      email = try EmailAddress.validate(body.email).lowercased()
    } catch {
      throw APIError(status: 400, code: .invalidEmail, message: error.description)
    }
    do {
      try PasswordRules.validate(body.password)
    } catch {
      throw APIError(status: 400, code: .invalidPassword, message: error.description)
    }
    let hash = try await environment.passwords.hash(body.password)
    guard
      let account = try await store.createAccount(
        id: UserID(Secrets.userID()), credential: .email(email), passwordHash: hash, now: environment.now())
    else {
      throw APIError(status: 409, code: .emailTaken, message: "This email already has an account; sign in instead.")
    }
    return try await issueToken(for: account.id, isNew: nil)
  }

  func login(_ body: EmailCredentials, address: String) async throws -> AuthSession {
    let user = try await environment.signIn(email: body.email, password: body.password, address: address)
    return try await issueToken(for: user, isNew: nil)
  }

  func logout(_ call: RouteCall<Void, NoBody>) async throws -> NoContent {
    if let hash = call.tokenHash {
      try await store.revokeToken(hash: hash)
      await live.disconnect(tokenHash: hash, reason: "signed out")
    }
    return NoContent()
  }

  private func issueToken(for user: UserID, isNew: Bool?) async throws -> AuthSession {
    let token = Secrets.token()
    let now = environment.now()
    let expiresAt = now + environment.tokenLifetime
    try await store.insertToken(hash: SecretHash.sha256(token), userID: user, createdAt: now, expiresAt: expiresAt)
    if let keep = ServerLimits.active(environment.limits.tokensPerAccount) {
      _ = try await store.revokeTokens(of: user, keepingNewest: keep, now: now)
    }
    return AuthSession(token: token, userId: user, expiresAt: expiresAt, isNew: isNew)
  }

  private func normalizedPhone(_ text: String) throws(APIError) -> String {
    do {
      return try PhoneNumber.normalize(text)
    } catch {
      throw APIError(status: 400, code: .invalidPhone, message: error.description)
    }
  }

  // MARK: Users and profiles

  func me(_ user: UserID) async throws -> Me {
    guard let account = try await store.account(user), let profile = try await store.profile(user) else {
      throw APIError.tokenInvalid
    }
    return Me(account: account, profile: profile, sharing: try await store.sharing(owner: user))
  }

  func updateProfile(_ user: UserID, _ update: ProfileUpdate) async throws -> Profile {
    guard var profile = try await store.profile(user) else { throw APIError.tokenInvalid }
    func text(_ value: String?, _ field: String, max: Int) throws(APIError) -> String?? {
      guard let value else { return .none }
      let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
      guard trimmed.count <= max else { throw .invalidRequest("'\(field)' can have at most \(max) characters.") }
      return .some(trimmed.isEmpty ? nil : trimmed)
    }
    if let avatar = try text(update.avatar, "avatar", max: 2048) { profile.avatar = avatar }
    if let name = try text(update.fullName, "fullName", max: 200) { profile.fullName = name }
    if let status = try text(update.status, "status", max: 500) { profile.status = status }
    if let birthday = update.birthday { profile.birthday = birthday }
    if let gender = update.gender { profile.gender = gender }
    for (name, audience) in update.audience ?? [:] {
      guard let field = ProfileField(rawValue: name) else {
        throw APIError.invalidRequest(
          "Unknown profile field '\(name)'; use \(ProfileField.allCases.map(\.rawValue).joined(separator: ", ")).")
      }
      profile.audience[field] = audience
    }
    try await store.saveProfile(profile)
    return profile
  }

  func userProfile(viewer: UserID, of user: UserID) async throws -> Profile {
    guard let profile = try await store.profile(user), let settings = try await store.privacySettings(owner: user),
      !settings.isBlacklisted(viewer)
    else { throw APIError.notFound("There is no such user.") }
    return profile.redacted(keeping: Sharing.visibleFields(to: viewer, of: settings, at: environment.now()))
  }

  func searchUsers(viewer: UserID, _ text: String) async throws -> UserSearchResult {
    let now = environment.now()
    if let wait = await environment.searchLimiter.take(viewer.rawValue, cost: 1, now: now) {
      throw APIError.rateLimited("Too many searches; try again in a minute.", retryAfterMilliseconds: wait)
    }
    let phone = try? PhoneNumber.normalize(text)
    var results: [Profile] = []
    for profile in try await store.searchProfiles(text: text, phone: phone, excluding: viewer, limit: 50) {
      guard let settings = try await store.privacySettings(owner: profile.userID), !settings.isBlacklisted(viewer)
      else { continue }
      let visible = Sharing.visibleFields(to: viewer, of: settings, at: now)
      // A name match must be on a name the viewer may see. A phone match is on a number the viewer already knows:
      // it finds the person unless they hid their number from everybody (audience `nobody`).
      let matchedPhone = phone != nil && profile.phone == phone && profile.audience(of: .phone) != .nobody
      guard matchedPhone || visible.contains(.fullName) else { continue }
      results.append(profile.redacted(keeping: visible))
    }
    return UserSearchResult(users: results)
  }

  // MARK: Groups

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
    await live.groupDeleted(id)
    try await live.enforce(owner: owner)
    return NoContent()
  }

  func changeMember(_ owner: UserID, _ ref: GroupMemberRef, add: Bool) async throws -> Group {
    var group = try await ownedGroup(owner, ref.groupID)
    if add {
      guard try await store.account(ref.userID) != nil else { throw APIError.notFound("There is no such user.") }
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
    var state = try await store.sharing(owner: owner)
    try change(&state, environment.now())
    try await store.saveSharing(state, owner: owner)
    try await live.enforce(owner: owner)
    return state
  }

  /// The people whose location `viewer` may see now, with their names where visible.
  func visibleUsers(viewer: UserID) async throws -> VisibleUsers {
    let now = environment.now()
    var people: [VisibleUsers.Person] = []
    for owner in Set(try await store.sharingCandidates(viewer: viewer)) where owner != viewer {
      guard let settings = try await store.privacySettings(owner: owner),
        Sharing.canSee(viewer, .location, of: settings, at: now)
      else { continue }
      let name =
        Sharing.canSee(viewer, .field(.fullName), of: settings, at: now)
        ? try await store.profile(owner)?.fullName : nil
      people.append(VisibleUsers.Person(userId: owner, fullName: name))
    }
    return VisibleUsers(users: people.sorted { $0.userId.rawValue < $1.userId.rawValue })
  }

  // MARK: Devices

  func enableOsmAnd(_ owner: UserID, _ device: DeviceID) async throws -> OsmAndAccess {
    let id = try FixIngest.checkedDeviceID(device.rawValue)
    let identifier = Secrets.token()
    let claim = try await store.enableOsmAnd(
      device: id, owner: owner, identifierHash: SecretHash.sha256(identifier), now: environment.now(),
      maxDevices: ServerLimits.active(environment.limits.devicesPerAccount))
    try FixIngest.check(claim, device: id)
    return OsmAndAccess(deviceId: id, identifier: identifier)
  }

  func disableOsmAnd(_ owner: UserID, _ device: DeviceID) async throws -> NoContent {
    guard try await store.disableOsmAnd(device: device, owner: owner) else {
      throw APIError.notFound("None of your devices called '\(echo(device.rawValue))' takes OsmAnd reports.")
    }
    return NoContent()
  }

  // MARK: Fixes and history

  func userLocation(viewer: UserID, of user: UserID) async throws -> UserLocation {
    let unavailable = APIError(
      status: 404, code: .locationUnavailable, message: "This user's location is unknown or not shared with you.")
    guard let settings = try await store.privacySettings(owner: user),
      Sharing.canSee(viewer, .location, of: settings, at: environment.now()),
      let fix = try await environment.lastFix(of: user)
    else { throw unavailable }
    if viewer == user { return UserLocation(userId: user, fix: fix) }
    return UserLocation(userId: user, fix: try await environment.deviceHandles.handles().redacted(fix, owner: user))
  }

  func history(_ user: UserID, _ query: HistoryQuery) async throws -> HistoryPage {
    let limit = query.limit ?? 100
    var before: HistoryCursor?
    if let text = query.cursor {
      guard let cursor = HistoryCursor(text: text) else {
        throw APIError.invalidRequest("'cursor' is not a cursor this server gave out.")
      }
      before = cursor
    }
    let filter = query.filter(now: Timestamp.date(environment.now()))
    let rows = try await store.history(owner: user, filter: filter, limit: limit + 1, before: before)
    let page = rows.prefix(limit)
    let next = rows.count > limit ? page.last?.cursor.text : nil
    return HistoryPage(fixes: page.map(\.fix), nextCursor: next)
  }

  func clusters(_ user: UserID, _ query: ClusterQuery) async throws -> HistoryClusters {
    let filter = query.history.filter(now: Timestamp.date(environment.now()))
    return HistoryClusters(
      precision: query.precision,
      clusters: try await store.clusters(owner: user, filter: filter, precision: query.precision, box: query.bbox))
  }
}

import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianSecrets
import MeridianStore
import MeridianStoreEngines
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
  /// One code per phone per ``ServerConfiguration/otpSpacingSeconds``: a window of one, so two codes to a number
  /// are always that far apart.
  public var otpPhoneSpacing: RateLimiter
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
  /// Reads of one share link's view per minute (keyed by the token's hash).
  public var sharedViewLimiter: RateLimiter
  /// Reads of share links' views per minute from one address (keyed by the client address).
  public var sharedViewAddressLimiter: RateLimiter
  /// Share links one account may make per hour (keyed by the account).
  public var shareLinkCreationLimiter: RateLimiter
  /// The handles viewers see instead of device ids.
  public var deviceHandles: DeviceHandleSource
  /// Where features queue events for webhooks (``WebhookOutbox``).
  public var webhooks: WebhookOutbox
  /// How long an uploaded image is kept though nothing refers to it, ms (`MERIDIAN_BLOB_GRACE_SECONDS`).
  public var blobGracePeriod: Int64
  /// Where uploaded images are (`POST /v1/blobs`): the one the polls' routes use.
  public var blobs: any BlobStore
  /// Password sign-in, registration and the OpenID provider (``SignInSettings``).
  public var signIn: SignInSettings
  /// What others see of a person's fixes (precision per audience, privacy zones), with the gazetteer's towns.
  var audience: FixAudience

  /// An environment from a configuration.
  public init(
    store: any MeridianStore, smsSender: any SMSSender, configuration: ServerConfiguration,
    now: @escaping @Sendable () -> Int64 = SteadyClock.system()
  ) {
    self.store = store
    self.smsSender = smsSender
    self.passwords = PasswordHasher(cost: UInt8(clamping: configuration.bcryptCost))
    self.now = now
    self.tokenLifetime = configuration.tokenLifetime * 1000
    self.blobGracePeriod = configuration.polls.blobGracePeriod
    self.signIn = configuration.signIn
    // MERIDIAN_BLOB_DIR when set; else the database's blob table (PostgreSQL: every node sees it); else `blobs`
    // next to the SQLite file. Built once: every feature uses this one.
    self.blobs = configuration.database.blobStore(for: store, directory: configuration.polls.blobDirectory)
    self.audience = FixAudience(gazetteer: GazetteerCache(store: store, now: now))
    // Every node on a shared database counts in it (the store's sharedLimits); one SQLite node, in memory.
    let shared = store.sharedLimits
    self.otpPhoneLimiter = RateLimiter(
      limit: configuration.otpPerPhonePerHour, window: 3_600_000, counters: .of(shared, purpose: "otp.phone"))
    self.otpAddressLimiter = RateLimiter(
      limit: configuration.otpPerAddressPerHour, window: 3_600_000, counters: .of(shared, purpose: "otp.address"))
    self.otpPhoneSpacing = RateLimiter(
      limit: configuration.otpSpacingSeconds > 0 ? 1 : 0, window: Int64(configuration.otpSpacingSeconds) * 1000,
      counters: .of(shared, purpose: "otp.spacing"))
    self.adminToken = configuration.adminToken
    let limits = configuration.limits
    self.limits = limits
    self.signInFailuresByAccount = FailureBackoff(
      freeFailures: limits.signInFailuresPerAccount, baseDelay: limits.signInFirstDelayMilliseconds,
      counters: .of(shared, purpose: "signin.account"))
    self.signInFailuresByAddress = FailureBackoff(
      freeFailures: limits.signInFailuresPerAddress, baseDelay: limits.signInFirstDelayMilliseconds,
      counters: .of(shared, purpose: "signin.address"))
    self.searchLimiter = RateLimiter(
      limit: limits.searchesPerAccountPerMinute, window: 60_000, counters: .of(shared, purpose: "search.account"))
    self.fixLimiter = RateLimiter(
      limit: limits.fixesPerAccountPerMinute, window: 60_000, counters: .of(shared, purpose: "fixes.account"))
    self.osmAndDeviceLimiter = RateLimiter(
      limit: limits.osmAndPerDevicePerMinute, window: 60_000, counters: .of(shared, purpose: "osmand.device"))
    self.osmAndAddressLimiter = RateLimiter(
      limit: limits.osmAndPerAddressPerMinute, window: 60_000, counters: .of(shared, purpose: "osmand.address"))
    self.sharedViewLimiter = RateLimiter(
      limit: limits.sharedViewsPerLinkPerMinute, window: 60_000, counters: .of(shared, purpose: "share.view"))
    self.sharedViewAddressLimiter = RateLimiter(
      limit: limits.sharedViewsPerAddressPerMinute, window: 60_000, counters: .of(shared, purpose: "share.view.address")
    )
    self.shareLinkCreationLimiter = RateLimiter(
      limit: limits.shareLinksCreatedPerAccountPerHour, window: 3_600_000,
      counters: .of(shared, purpose: "share.create"))
    self.deviceHandles = DeviceHandleSource(store: store)
    self.webhooks = WebhookOutbox(store: store)
  }

  /// The newest fix of `owner` that isn't dated after the server's clock: the person's current location as everyone
  /// sees it. A fix dated a little ahead (``ServerLimits/futureFixSeconds`` lets it in) becomes current when its time
  /// comes, so it can't stand in for where the person is now.
  func lastFix(of owner: UserID) async throws -> LocationFix? {
    try await store.lastFix(owner: owner, notAfter: now())
  }

  /// Checks a password sign-in's throttles before the password is checked (no bcrypt work for a throttled guess).
  /// - Throws: ``APIError`` `rate_limited` (429, `Retry-After`) while the account or the address must wait;
  ///   `StoreUnavailableError` (503) when the shared counters' database can't be reached.
  func checkSignInAllowed(account: String, address: String) async throws {
    let now = now()
    let accountWait = try await signInFailuresByAccount.wait(account, now: now) ?? 0
    let addressWait = try await signInFailuresByAddress.wait(address, now: now) ?? 0
    let wait = max(accountWait, addressWait)
    guard wait == 0 else {
      throw APIError.rateLimited(
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
    var found: (account: Account, passwordHash: String?)?
    if let email { found = try await store.account(for: .email(email)) }
    let matches = try await passwords.verify(password, against: found?.passwordHash)
    await recordSignIn(account: account, address: address, succeeded: matches)
    guard matches, let found else { throw failure }
    guard try await !store.isDisabled(found.account.id) else { throw APIError.accountDisabled }
    return found.account.id
  }

  /// A new session for `user`: a bearer token stored by its hash, valid ``tokenLifetime``; the account's oldest
  /// tokens beyond ``ServerLimits/tokensPerAccount`` are revoked. Every way of signing in ends here.
  func issueSession(for user: UserID, isNew: Bool?) async throws -> AuthSession {
    let token = Secrets.token()
    let now = now()
    let expiresAt = now + tokenLifetime
    try await store.insertToken(hash: SecretHash.sha256(token), userID: user, createdAt: now, expiresAt: expiresAt)
    if let keep = ServerLimits.active(limits.tokensPerAccount) {
      _ = try await store.revokeTokens(of: user, keepingNewest: keep, now: now)
    }
    return AuthSession(token: token, userId: user, expiresAt: expiresAt, isNew: isNew)
  }

  /// Throws 403 `registration_closed` unless new accounts are made (``SignInSettings/registrationOpen``).
  func checkRegistrationOpen() throws(APIError) {
    guard signIn.registrationOpen else {
      throw APIError(
        status: 403, code: .registrationClosed,
        message: "This server makes no new accounts; ask its operator to create yours or to open registration.")
    }
  }
}

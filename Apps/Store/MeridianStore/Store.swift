import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import Synchronization

/// Everything the server keeps, behind one interface so that a PostgreSQL implementation can replace
/// ``SQLiteStore`` without touching the routes.
///
/// Secrets arrive already hashed (``SecretHash``); times are UTC milliseconds. Every method is one transaction.
public protocol MeridianStore: MeridianAdminStore, MeridianSecurityStore, OperationsStore {
  /// A round trip to the database; throws when it does not answer.
  func checkHealth() async throws

  // MARK: Accounts and credentials

  /// Creates an account signing in with `credential` (and `passwordHash` for email), its empty profile, its
  /// standard groups and default sharing state. Returns nil when the credential already belongs to an account.
  func createAccount(id: UserID, credential: Credential, passwordHash: String?, now: Int64) async throws -> Account?
  /// The account signing in with `credential` and its password hash (email accounts).
  func account(for credential: Credential) async throws -> (account: Account, passwordHash: String?)?
  /// An account by id.
  func account(_ id: UserID) async throws -> Account?

  // MARK: Tokens

  /// Stores a token by its hash.
  func insertToken(hash: String, userID: UserID, createdAt: Int64, expiresAt: Int64) async throws
  /// The user of an unrevoked, unexpired token.
  func user(forTokenHash hash: String, now: Int64) async throws -> UserID?
  /// Revokes a token.
  func revokeToken(hash: String) async throws

  // MARK: One-time codes

  /// Replaces any code for `phone` with a new one.
  func replaceOTP(phone: String, codeHash: String, expiresAt: Int64, maxAttempts: Int, now: Int64) async throws
  /// Checks a code and counts the attempt; a valid code is consumed.
  func checkOTP(phone: String, codeHash: String, now: Int64) async throws -> OTPCheck

  // MARK: Profiles

  /// A user's full profile.
  func profile(_ userID: UserID) async throws -> Profile?
  /// Replaces a user's profile.
  func saveProfile(_ profile: Profile) async throws
  /// Profiles whose name contains `text` or whose phone equals `phone`, at most `limit`.
  func searchProfiles(text: String, phone: String?, excluding: UserID, limit: Int) async throws -> [Profile]

  // MARK: Groups and sharing

  /// The groups `owner` owns, with members.
  func groups(owner: UserID) async throws -> [Group]
  /// One group with members.
  func group(_ id: GroupID) async throws -> Group?
  /// Inserts or updates a group and replaces its members.
  func saveGroup(_ group: Group) async throws
  /// Deletes a group and its memberships.
  func deleteGroup(_ id: GroupID) async throws
  /// The owner's sharing switches.
  func sharing(owner: UserID) async throws -> SharingState
  /// Replaces the owner's sharing switches.
  func saveSharing(_ state: SharingState, owner: UserID) async throws
  /// Groups, field audiences and sharing of `owner`: the input of DomainKit's `Sharing.canSee`.
  func privacySettings(owner: UserID) async throws -> PrivacySettings?
  /// The users who may share their location with `viewer`: owners of groups (other than Blacklists) that have
  /// the viewer as a member, and owners with a direct grant to the viewer. A superset, without the viewer, sorted;
  /// `Sharing.canSee` decides.
  func sharingCandidates(viewer: UserID) async throws -> [UserID]

  // MARK: Devices and fixes

  /// The account `device` is registered to, if any.
  func deviceOwner(_ device: DeviceID) async throws -> UserID?
  /// Stores several requests' fixes in one durable transaction (group commit) and calls `completion` with one
  /// receipt per batch, in order, once it committed, or with the error (nothing was stored). A fix whose device and
  /// timestamp are already stored counts as a duplicate.
  ///
  /// Returns at once. ``FixWriter`` starts its next commit from `completion`, so a store should call it from its
  /// own writer thread: the SQLite store does, with no hop through Swift concurrency's thread pool, which is where
  /// a commit would otherwise wait behind the requests it serves.
  func insertFixes(
    _ batches: [FixInsertBatch], now: Int64,
    completion: @escaping @Sendable (Result<[FixReceipt], any Error>) -> Void)
  /// The newest fix of any of the user's devices dated no later than `notAfter` (a fix dated in the future is
  /// never anyone's last location).
  func lastFix(owner: UserID, notAfter: Int64) async throws -> LocationFix?
  /// The user's fixes matching `filter`, newest first, older than `before` (timestamp, rowid) when given.
  func history(owner: UserID, filter: HistoryFilter, limit: Int, before: HistoryCursor?) async throws
    -> [(fix: LocationFix, cursor: HistoryCursor)]
  /// Deletes the user's fixes matching `filter`; returns how many.
  func deleteHistory(owner: UserID, filter: HistoryFilter) async throws -> Int
  /// Count and centroid per geohash cell of `precision` characters.
  func clusters(owner: UserID, filter: HistoryFilter, precision: Int, box: ClusterBox?) async throws
    -> [HistoryCluster]

  // MARK: Venues and promotions

  /// Inserts venues or updates them by id (with their ratings); their geohash columns are computed here.
  func upsertVenues(_ venues: [VenueRecord]) async throws
  /// One venue, its name and description in `language` (else English, else the base value).
  func venue(_ id: PlaceID, language: String?) async throws -> Venue?
  /// The venues within `query.radius` metres of `query.center`, each with its distance, sorted and paged by
  /// DomainKit's `PlaceDirectory` rules.
  func nearbyVenues(_ query: VenueQuery) async throws -> Page<Venue>
  /// Inserts a promotion of a stored venue, or replaces the one with its id.
  func insertPromotion(_ promotion: Promotion) async throws
  /// Every stored promotion of a venue (running or not), by id.
  func promotions(venue: PlaceID) async throws -> [Promotion]
  /// One promotion.
  func promotion(_ id: PromotionID) async throws -> Promotion?
  /// Records that `promotions` were offered to `viewer` at `time`.
  func recordOffers(_ promotions: [PromotionID], to viewer: UserID, at time: Int64) async throws
  /// Whether `promotion` was ever offered to `user`.
  func wasOffered(_ promotion: PromotionID, to user: UserID) async throws -> Bool
  /// Redeems `promotion` for `user` at `time` if it was offered to them and they haven't redeemed it yet.
  func redeem(_ promotion: PromotionID, by user: UserID, at time: Int64) async throws -> RedemptionOutcome
  /// Offers and redemptions of each of a venue's promotions, by promotion id.
  func promotionActivity(venue: PlaceID) async throws -> [PromotionActivity]
  /// The owner's fixes within `radius` metres of `center` with timestamps in `from...to`, oldest first, split into
  /// runs of fixes that follow one another in the owner's whole history (so visit detection sees no false stays).
  func fixRuns(owner: UserID, near center: Coordinate, radius: Double, from: Int64, to: Int64) async throws
    -> [[LocationFix]]

  // MARK: Idempotency

  /// The stored answer for a user's idempotency key.
  func idempotentResponse(userID: UserID, key: String) async throws -> StoredResponse?
  /// Stores the answer for a key (first writer wins).
  func saveIdempotentResponse(_ response: StoredResponse, userID: UserID, key: String, now: Int64) async throws
}

/// The outcome of checking a one-time code.
public enum OTPCheck: Sendable, Hashable {
  /// The code matched and was consumed.
  case valid
  /// The code was wrong; this many attempts remain.
  case wrong(remaining: Int)
  /// No code, or it expired.
  case expired
  /// The attempts are used up.
  case exhausted
}

extension MeridianStore {
  /// ``insertFixes(_:now:completion:)``, awaited: for imports and tools that store their own batches. The server's
  /// requests go through ``FixWriter``, which shares commits between them.
  public func insertFixes(_ batches: [FixInsertBatch], now: Int64) async throws -> [FixReceipt] {
    try await withCheckedThrowingContinuation { continuation in
      insertFixes(batches, now: now) { continuation.resume(with: $0) }
    }
  }
}

/// One request's fixes for the group-commit writer.
public struct FixInsertBatch: Sendable {
  /// The owner.
  public var userID: UserID
  /// The reporting device.
  public var deviceID: DeviceID
  /// The validated fixes.
  public var fixes: [LocationFix]
  /// The request's `Idempotency-Key` and fingerprint: the answer (the receipt as JSON, status 200) is stored with
  /// the fixes in the same transaction, so it is never stored without them and costs no transaction of its own.
  public var idempotency: IdempotencyClaim?
  /// A batch.
  public init(userID: UserID, deviceID: DeviceID, fixes: [LocationFix], idempotency: IdempotencyClaim? = nil) {
    self.userID = userID
    self.deviceID = deviceID
    self.fixes = fixes
    self.idempotency = idempotency
  }
}

/// A request's `Idempotency-Key`, resolved by the handler itself in the transaction of its effect: the first request
/// with the key stores its answer there, a retry finds it there (and changes nothing), another body with the same key
/// is a conflict. Nothing is looked up or stored around the transaction.
public final class IdempotencyClaim: Sendable {
  /// What the transaction found.
  public enum Resolution: Sendable, Hashable {
    /// Not resolved yet (the transaction hasn't run, or failed).
    case pending
    /// First use of the key: the effect and its answer were stored.
    case stored
    /// The key was used before for this same request: the stored answer is returned, nothing else changed.
    case replayed
    /// The key was used before for a different request.
    case conflict
  }

  /// The key.
  public let key: String
  /// The request's fingerprint (method, path, body bytes).
  public let requestHash: String
  /// The fingerprint servers before 2026-11-24 stored (method, path, the body re-encoded as canonical JSON),
  /// computed only when a stored fingerprint differs from ``requestHash``: a client that retries a key from before
  /// an upgrade with a body spelled in another key order still gets its first answer.
  public let legacyRequestHash: @Sendable () -> String?
  private let state = Mutex(Resolution.pending)

  public init(key: String, requestHash: String, legacyRequestHash: @escaping @Sendable () -> String? = { nil }) {
    self.key = key
    self.requestHash = requestHash
    self.legacyRequestHash = legacyRequestHash
  }

  /// Whether `stored`, the fingerprint kept with the key, is this request's.
  public func matches(_ stored: String) -> Bool { stored == requestHash || stored == legacyRequestHash() }

  /// Records what the transaction found.
  public func resolve(_ resolution: Resolution) { state.withLock { $0 = resolution } }

  /// What the transaction found.
  public var resolution: Resolution { state.withLock { $0 } }
}

/// A position in the history: the fix's timestamp and its row, so that pages never skip or repeat.
public struct HistoryCursor: Sendable, Hashable {
  /// The fix's timestamp.
  public var timestamp: Int64
  /// The fix's row id (tie-break).
  public var row: Int64
  /// A cursor.
  public init(timestamp: Int64, row: Int64) {
    self.timestamp = timestamp
    self.row = row
  }
  /// `timestamp.row`, the wire form.
  public var text: String { "\(timestamp).\(row)" }
  /// Parses the wire form.
  public init?(text: String) {
    let parts = text.split(separator: ".")
    guard parts.count == 2, let timestamp = Int64(parts[0]), let row = Int64(parts[1]) else { return nil }
    self.init(timestamp: timestamp, row: row)
  }
}

/// A response remembered for an `Idempotency-Key`.
public struct StoredResponse: Sendable, Hashable {
  /// A fingerprint of the request (method, path, body bytes) so a reused key with another request is refused.
  public var requestHash: String
  /// The status sent.
  public var status: Int
  /// The body sent.
  public var body: Data
  /// A stored response.
  public init(requestHash: String, status: Int, body: Data) {
    self.requestHash = requestHash
    self.status = status
    self.body = body
  }
}

/// What ``MeridianStore/redeem(_:by:at:)`` did.
public enum RedemptionOutcome: Sendable, Hashable {
  /// Redeemed now.
  case redeemed
  /// The promotion was never offered to the user.
  case notOffered
  /// The user redeemed it before, at this time.
  case alreadyRedeemed(at: Int64)
}

/// How one promotion did: whom it was offered to and who redeemed it.
public struct PromotionActivity: Sendable, Hashable, Codable {
  /// The promotion.
  public var promotionID: PromotionID
  /// Users it was offered to.
  public var offeredUsers: Int
  /// Times it was offered, all users together.
  public var offers: Int
  /// Users who redeemed it.
  public var redeemed: Int

  /// Activity figures.
  public init(promotionID: PromotionID, offeredUsers: Int, offers: Int, redeemed: Int) {
    self.promotionID = promotionID
    self.offeredUsers = offeredUsers
    self.offers = offers
    self.redeemed = redeemed
  }
}

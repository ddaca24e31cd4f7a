import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianSecrets
import Synchronization

/// Everything the server keeps: one interface per product area, composed. Features depend on the areas they use;
/// only the server's composition picks an engine (``MeridianStoreSQLite`` today).
///
/// Secrets arrive already hashed (``SecretHash``); times are UTC milliseconds. Every method is one transaction; a
/// feature that must store several things at once does them in one ``StoreTransactions/write(_:)``.
public protocol MeridianStore: AccountStore, SocialStore, FixStore, VenueStore, IdempotencyStore, AdministrationStore,
  OperationsStore, PollStore, PlaceStore, GeofenceStore, GeofenceQueue, ProximityStore, GazetteerStore, AdvertiserStore,
  PromotionStatsStore,
  ApplicantStore, WebhookStore, ShareLinkStore, ImportJobStore, SingleSignOnStore, PrivacyZoneStore, StayStore,
  StoreTransactions, WriteFencing
{
  /// A round trip to the database; throws when it does not answer.
  func checkHealth() async throws
  /// The deployment's 32-byte random secret called `name`: created on first use, then the same for every server
  /// process on this database.
  func deploymentSecret(_ name: String) async throws -> Data
  /// The rate-limit and sign-in counters every node on this database shares, or nil when one process owns the
  /// database (SQLite): the server then keeps them in memory, with no database round trip.
  var sharedLimits: (any LimitStore)? { get }
  /// The live log shared by the server nodes on this store; nil (the default) for an engine that serves one process.
  var liveLog: (any LiveLog)? { get }
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

/// A stored one-time code as an engine reads it, its row locked for the check.
public struct StoredOneTimeCode: Sendable, Hashable {
  /// SHA-256 of the code (``SecretHash``).
  public var codeHash: String
  /// When it stops being valid, UTC ms.
  public var expiresAt: Int64
  /// Wrong guesses still allowed.
  public var attemptsLeft: Int

  /// A stored code.
  public init(codeHash: String, expiresAt: Int64, attemptsLeft: Int) {
    self.codeHash = codeHash
    self.expiresAt = expiresAt
    self.attemptsLeft = attemptsLeft
  }
}

/// One-time codes' primitives in one transaction (``StoreTransaction``).
public protocol OneTimeCodeTransaction: Sendable {
  /// The code stored for `phone`, nil when none; its row is held until the transaction ends, so that guesses sent to
  /// several nodes at once are counted one after another against the same attempts.
  func oneTimeCode(for phone: String) async throws -> StoredOneTimeCode?
  /// Removes the code of `phone`.
  func deleteOneTimeCode(for phone: String) async throws
  /// Takes one attempt from the code of `phone`.
  func spendOneTimeCodeAttempt(for phone: String) async throws
}

extension OneTimeCodeTransaction {
  /// Checks a guess of `phone`'s code by ``OneTimeCodeRule`` and stores what it changes.
  public func checkOTP(phone: String, codeHash: String, now: Int64) async throws -> OTPCheck {
    let (outcome, change) = OneTimeCodeRule.check(try await oneTimeCode(for: phone), codeHash: codeHash, now: now)
    switch change {
    case .keep: break
    case .delete: try await deleteOneTimeCode(for: phone)
    case .spendAttempt: try await spendOneTimeCodeAttempt(for: phone)
    }
    return outcome
  }
}

extension AccountStore where Self: StoreTransactions {
  public func checkOTP(phone: String, codeHash: String, now: Int64) async throws -> OTPCheck {
    try await write { tx in try await tx.checkOTP(phone: phone, codeHash: codeHash, now: now) }
  }
}

/// The one-time codes' rule, once for every engine: an expired code is removed and answers `expired`; a code whose
/// attempts are used up stays (so that a new one must be asked for) and answers `exhausted`; the right code is
/// consumed; a wrong guess spends an attempt. ``OneTimeCodeTransaction/checkOTP(phone:codeHash:now:)`` reads the row
/// (locked), asks ``check(_:codeHash:now:)`` and applies its change in the same transaction.
public enum OneTimeCodeRule {
  /// What a check does to the stored code.
  public enum Change: Sendable, Hashable {
    /// Nothing.
    case keep
    /// The code is removed (consumed or expired).
    case delete
    /// One attempt fewer.
    case spendAttempt
  }

  /// The outcome of guessing `codeHash` against `stored` (nil: no code) at `now`, and the change to store.
  public static func check(_ stored: StoredOneTimeCode?, codeHash: String, now: Int64) -> (
    outcome: OTPCheck, change: Change
  ) {
    guard let stored else { return (.expired, .keep) }
    if stored.expiresAt <= now { return (.expired, .delete) }
    if stored.attemptsLeft <= 0 { return (.exhausted, .keep) }
    if SecretHash.constantTimeEqual(stored.codeHash, codeHash) { return (.valid, .delete) }
    let remaining = stored.attemptsLeft - 1
    return (remaining <= 0 ? .exhausted : .wrong(remaining: remaining), .spendAttempt)
  }
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
  /// Whether the fixes go live (the live log, the fan-out): those that arrive do; an imported history file's do
  /// not (``HistoryBatchWriter``), whatever their kind.
  public var isLive: Bool
  /// A batch.
  public init(
    userID: UserID, deviceID: DeviceID, fixes: [LocationFix], idempotency: IdempotencyClaim? = nil, isLive: Bool = true
  ) {
    self.userID = userID
    self.deviceID = deviceID
    self.fixes = fixes
    self.idempotency = idempotency
    self.isLive = isLive
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
  private let state = Mutex(Resolution.pending)

  /// A claim of `key` for the request whose fingerprint is `requestHash`.
  public init(key: String, requestHash: String) {
    self.key = key
    self.requestHash = requestHash
  }

  /// Whether `stored`, the fingerprint kept with the key, is this request's.
  public func matches(_ stored: String) -> Bool { stored == requestHash }

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

import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// Accounts and sessions: credentials, bearer tokens (by their hash), one-time codes, and whether an operator
/// disabled the account.
public protocol AccountStore: Sendable {
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

  /// Whether the account exists and is disabled.
  func isDisabled(_ user: UserID) async throws -> Bool
  /// Revokes all but the newest `keep` unexpired tokens of `user`; returns how many it revoked.
  func revokeTokens(of user: UserID, keepingNewest keep: Int, now: Int64) async throws -> Int

  // MARK: Live only

  /// Whether the account keeps only its last position (live only); false for an unknown account.
  ///
  /// The rule, kept by every engine in the transaction that stores fixes (``FixStore/insertFixes(_:now:completion:)``)
  /// and in the one that takes fixes off the geofence queue: of the fixes a live-only account stored since it turned
  /// live only on, it keeps its last position — the newest fix not dated after the time it was received — any fix
  /// dated after that one (a clock ahead, due later), and those the geofence queue still waits to evaluate. Every
  /// other one is deleted, so no history builds up while the last position, the live updates and the geofences
  /// work as before. The history stored before live only was turned on stays unless the switch deleted it.
  func isLiveOnly(_ user: UserID) async throws -> Bool
  /// Turns live only on (at `now`, server time, unless it is on already) or off for `user`. With `deletingHistory`
  /// (turning it on) the rule above is applied to the whole history in the same transaction, so only the last
  /// position is left (and the fixes the geofences still wait for, until evaluated); without it the history stored
  /// so far stays. Returns how many fixes were deleted; nil when
  /// there is no such account.
  func setLiveOnly(_ user: UserID, _ liveOnly: Bool, deletingHistory: Bool, now: Int64) async throws -> Int?
}

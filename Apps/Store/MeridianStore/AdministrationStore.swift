import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// The operators' queries (the admin API's and `meridian-admin`'s): listings, counts, disabling and deleting a
/// whole user, tokens by hash prefix, statistics.
public protocol AdministrationStore: Sendable {
  /// The user whose id, email address or phone number (any spelling `PhoneNumber.normalize` accepts) is `text`.
  func findUser(_ text: String) async throws -> UserID?
  /// Users with their credentials and activity, oldest account first.
  func userSummaries(limit: Int, offset: Int) async throws -> [UserSummary]
  /// One user's summary, devices, usable tokens and groups; nil when there is no such user.
  func userDetail(_ id: UserID, now: Int64) async throws -> UserDetail?
  /// Disables or enables sign-in (a disabled user's tokens stop working at once); returns whether it changed.
  @discardableResult func setDisabled(_ id: UserID, _ disabled: Bool) async throws -> Bool
  /// Deletes every row of a user (with `dryRun`, only counts); returns rows per table.
  func deleteUser(_ id: UserID, dryRun: Bool, batchSize: Int) async throws -> [TableCount]
  /// Tokens, newest first: all of them, or one user's; only usable ones unless `includeInactive`.
  func tokens(user: UserID?, includeInactive: Bool, now: Int64) async throws -> [TokenSummary]
  /// The full hashes of the usable tokens whose hash starts with `prefix`.
  func tokenHashes(prefix: String, now: Int64) async throws -> [String]
  /// Revokes every usable token of `user`; returns how many.
  func revokeTokens(user: UserID, now: Int64) async throws -> Int
  /// Counts, fixes per UTC day for the last `days` days, and the size of the database files.
  func statistics(now: Int64, days: Int) async throws -> DatabaseStatistics
  /// The users who may have a fix within `radius` metres of `center` in `from...to` (by the geohash covering that
  /// ``fixRuns(owner:near:radius:from:to:)`` uses; it checks the exact distance).
  func usersSeen(near center: Coordinate, radius: Double, from: Int64, to: Int64) async throws -> [UserID]
}

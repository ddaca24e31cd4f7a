import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// Devices and fixes: device registration and OsmAnd identifiers, the group-commit insert, the last location,
/// history pages, deletion, clusters and the runs of fixes near a place.
public protocol FixStore: Sendable {
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
  /// How many calls of ``insertFixes(_:now:completion:)`` may be in flight at once, each its own transaction: 1 for
  /// an engine with one writer (SQLite), a small pool where commits can overlap (PostgreSQL: one commit's round trips
  /// and WAL flush overlap another's statements). ``FixWriter`` runs this many group commits at once.
  var fixCommitsInFlight: Int { get }
  /// The newest fix of any of the user's devices dated no later than `notAfter` (a fix dated in the future is
  /// never anyone's last location).
  func lastFix(owner: UserID, notAfter: Int64) async throws -> LocationFix?
  /// The user's fixes matching `filter`, newest first, older than `before` (timestamp, rowid) when given.
  func history(owner: UserID, filter: HistoryFilter, limit: Int, before: HistoryCursor?) async throws
    -> [(fix: LocationFix, cursor: HistoryCursor)]
  /// Deletes the user's fixes matching `filter`; returns how many.
  func deleteHistory(owner: UserID, filter: HistoryFilter) async throws -> Int
  /// Count and centroid per geohash cell of `precision` characters.
  func clusters(owner: UserID, filter: HistoryFilter, precision: Int, box: BoundingBox?) async throws
    -> [HistoryCluster]
  /// The owner's fixes matching `filter` inside `box` (edges included; `west > east` crosses the antimeridian),
  /// oldest first, at most `limit` of them (the map reads one more than it can draw to know it has too many), each
  /// with its device, time and position only (what a map draws; the other fields are nil). They are found through the
  /// `(user_id, geohash6)` index by ``HistoryCells/ranges(covering:maxLength:)`` and then sorted: the time grows
  /// with the fixes of the box, so the map asks only for a box it knows holds few.
  func fixPositions(owner: UserID, filter: HistoryFilter, box: BoundingBox, limit: Int) async throws -> [LocationFix]
  /// Count and mean position per geohash cell of `precision` (2…6) of the owner's fixes in the UTC hours or days
  /// `periods` (numbered from 1970 by `span`, ``HistoryCells/Span``), of the cells in one of the half-open text
  /// `ranges` (``HistoryCells/range(_:)`` of "" is every cell), the fullest first: read from the counts per `span`
  /// (``HistoryCells``), so the time grows with the cells and periods, not the fixes.
  func countedClusters(
    owner: UserID, precision: Int, span: HistoryCells.Span, periods: Range<Int64>,
    ranges: [(lower: String, upper: String)]
  ) async throws
    -> [HistoryCluster]
  /// The owner's fixes within `radius` metres of `center` with timestamps in `from...to`, oldest first, split into
  /// runs of fixes that follow one another in the owner's whole history (so visit detection sees no false stays).
  func fixRuns(owner: UserID, near center: Coordinate, radius: Double, from: Int64, to: Int64) async throws
    -> [[LocationFix]]

  /// The owner's registered devices, oldest first.
  func devices(owner: UserID) async throws -> [OwnedDevice]
  /// Registers `device` for `owner` unless it is another account's, or the owner already has `maxDevices` devices
  /// (nil: no limit).
  func claimDevice(_ device: DeviceID, owner: UserID, now: Int64, maxDevices: Int?) async throws -> DeviceClaim

  /// Makes `device` (registered for `owner` if new) accept OsmAnd reports carrying the identifier whose SHA-256 is
  /// `identifierHash`, replacing the identifier it had. Returns the claim: only `.claimed` enabled it.
  func enableOsmAnd(device: DeviceID, owner: UserID, identifierHash: String, now: Int64, maxDevices: Int?)
    async throws -> DeviceClaim
  /// Stops `device` of `owner` from accepting OsmAnd reports; returns whether it did.
  func disableOsmAnd(device: DeviceID, owner: UserID) async throws -> Bool
  /// The device and owner of the OsmAnd identifier whose SHA-256 is `identifierHash`, unless the owner is disabled.
  func osmAndDevice(identifierHash: String) async throws -> (device: DeviceID, owner: UserID)?
}

extension FixStore {
  /// One commit at a time.
  public var fixCommitsInFlight: Int { 1 }

  /// Registers `device` for `owner` if new, without a device quota; false when it belongs to someone else.
  public func claimDevice(_ device: DeviceID, owner: UserID, now: Int64) async throws -> Bool {
    try await claimDevice(device, owner: owner, now: now, maxDevices: nil) == .claimed
  }
}

/// What claiming a device for an account found.
public enum DeviceClaim: Sendable, Hashable {
  /// The device is the account's (registered now or before).
  case claimed
  /// The device is registered to another account.
  case otherOwner
  /// The device is new and the account already has as many devices as it may.
  case quotaExceeded(limit: Int)
}

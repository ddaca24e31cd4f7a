import DomainKit
import MeridianAPI

/// Stores an imported history file's fixes in batches as they are read — the second pass of every importer (the
/// server's upload and `meridian-admin history import`), so memory holds a few batches (``batchesInFlight`` and the
/// one being read) whatever the file's size. A fix already stored (same device and time) counts as a duplicate, so
/// importing a file again, or again after an import was killed part way, stores each point once. A fix inside one of
/// the user's privacy zones that store nothing is not stored from a file either (``PrivacyZone/stores(_:in:)``, the
/// rule of every fix that arrives), and counts as ``withheld``.
///
/// Up to ``batchesInFlight`` batches are stored while the next is read: ``add(_:)`` returns once the oldest of them
/// is in when that many are, so reading the file and storing it share the time instead of taking turns, and an
/// engine that commits several transactions at once (PostgreSQL) stores batches side by side (the counts lag behind
/// until ``flush()``). Batches may so commit out of file order, and a failed or killed import leave some whole
/// batches stored, not necessarily the first; importing the file again stores the rest. Batches the geofences
/// evaluate (``FixInsertBatch/isEvaluatedByGeofences``: a file's fixes not of kind `imported`) are the exception:
/// each starts once the one before it is in, since the monitor evaluates a person's fixes in the order they commit
/// and passes over those older than the last it evaluated. A batch being stored is never cancelled: when the writer
/// is dropped without its `flush()` (its caller threw, or was cancelled), the batches in flight complete on their
/// own, uncounted, and importing the file again counts them among the duplicates.
public struct HistoryBatchWriter: Sendable {
  /// The store written to.
  public let store: any MeridianStore
  /// The person whose history the file joins.
  public let user: UserID
  /// The device each fix is stored under.
  public let device: @Sendable (LocationFix) -> DeviceID
  /// The time the rows are stored at.
  public let now: Int64
  /// Fixes stored per transaction.
  public let batchSize: Int
  /// Batches being stored at most at once.
  public let batchesInFlight: Int
  /// New fixes stored so far.
  public private(set) var stored = 0
  /// Fixes that were stored already.
  public private(set) var duplicates = 0
  /// Fixes left out because they lie in one of the user's privacy zones that store nothing.
  public private(set) var withheld = 0
  /// The user's privacy zones that store nothing, read with the first fixes (an import's zones are those it began
  /// with).
  private var unstoredZones: [PrivacyZone]?
  private var pending: [LocationFix] = []
  /// The UTC days of the fixes handed to the store since the planner's statistics were last refreshed, and
  /// ``stored`` then.
  private var unanalyzed: Set<Int64> = []
  private var analyzedAt = 0
  private var pace: ImportPace
  /// The batches being stored, oldest first, and whether the geofences evaluate each.
  private var inFlight: [(task: Task<[FixReceipt], any Error>, evaluated: Bool)] = []

  /// A writer of `user`'s fixes under `device`, at most `rowsPerSecond` a second when given, with up to
  /// `batchesInFlight` batches being stored at once.
  public init(
    store: any MeridianStore, user: UserID, now: Int64, batchSize: Int = 1000, batchesInFlight: Int = 2,
    rowsPerSecond: Int? = nil, device: @escaping @Sendable (LocationFix) -> DeviceID
  ) {
    self.store = store
    self.user = user
    self.now = now
    self.batchSize = max(1, batchSize)
    self.batchesInFlight = max(1, batchesInFlight)
    self.device = device
    pace = ImportPace(rowsPerSecond: rowsPerSecond)
  }

  /// Takes `fixes` but those in a privacy zone that stores nothing; stores batches of exactly ``batchSize`` while that
  /// many are pending.
  public mutating func add(_ fixes: [LocationFix]) async throws {
    let zones: [PrivacyZone]
    if let read = unstoredZones {
      zones = read
    } else {
      zones = try await store.privacyZones(owner: user).filter { !$0.store }
      unstoredZones = zones
    }
    let kept = zones.isEmpty ? fixes : fixes.filter { PrivacyZone.stores($0, in: zones) }
    withheld += fixes.count - kept.count
    pending += kept
    while pending.count >= batchSize {
      let batch = Array(pending.prefix(batchSize))
      pending.removeFirst(batchSize)
      try await store(batch)
    }
  }

  /// Stores what is pending, and returns once every batch is in. When this writer has stored at least
  /// ``plannerStatisticsThreshold`` new fixes since it last did, it then refreshes the planner's statistics of the
  /// days (on PostgreSQL, the months) they fell in (``OperationsStore/refreshPlannerStatistics(after:)``); that
  /// refresh failing fails nothing (the fixes are stored, and the database's own upkeep analyzes them later).
  public mutating func flush() async throws {
    if !pending.isEmpty {
      let batch = pending
      pending.removeAll(keepingCapacity: true)
      try await store(batch)
    }
    while !inFlight.isEmpty { try await settleOldest() }
    if stored - analyzedAt >= Self.plannerStatisticsThreshold {
      try? await store.refreshPlannerStatistics(after: .history(days: unanalyzed))
      unanalyzed = []
      analyzedAt = stored
    }
  }

  /// New fixes stored after which ``flush()`` refreshes the planner's statistics.
  public static let plannerStatisticsThreshold = 10_000

  /// Starts storing `fixes` in one transaction, one insert per device, once fewer than ``batchesInFlight`` batches
  /// are being stored — and, when the geofences evaluate them, once no batch they evaluate is.
  private mutating func store(_ fixes: [LocationFix]) async throws {
    let count = fixes.count
    let device = self.device
    let batches = Dictionary(grouping: fixes, by: device).sorted { $0.key < $1.key }
      .map { FixInsertBatch(userID: user, deviceID: $0.key, fixes: $0.value, isLive: false) }
    let evaluated = batches.contains(where: \.isEvaluatedByGeofences)
    while inFlight.count >= batchesInFlight || (evaluated && inFlight.contains(where: \.evaluated)) {
      try await settleOldest()
    }
    var lastDay: Int64?
    for fix in fixes {
      let day = Timestamp.utcDay(fix.timestamp)
      if day != lastDay { unanalyzed.insert(day) }
      lastDay = day
    }
    let (store, now) = (self.store, self.now)
    inFlight.append((Task { try await store.insertFixes(batches, now: now) }, evaluated))
    try await pace.spend(count)
  }

  /// Waits for the oldest batch being stored and counts what it stored.
  private mutating func settleOldest() async throws {
    let receipts = try await inFlight.removeFirst().task.value
    for receipt in receipts {
      stored += receipt.accepted
      duplicates += receipt.duplicates
    }
  }
}

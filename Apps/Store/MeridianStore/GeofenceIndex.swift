import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import Synchronization

/// The geofences of the owners asked about, decoded once and kept in memory (one index per node), under GeoKit
/// geohash cells: the fences near a point are a few dictionary probes and box checks — no query, no JSON decode.
///
/// An owner's fences are read from the store (all of them, in one query with the other owners missing) on first use,
/// and again once they are older than `lifetime` milliseconds or after ``invalidate(owner:)`` /
/// ``invalidateAll()`` (a change, made on this node or heard of from another); the lifetime bounds how long a change
/// nobody told the index of goes unseen. An owner not asked about for twice the lifetime is forgotten.
///
/// A batch of fixes takes one ``Snapshot`` of its owners' fences, then asks it for each fix's fences by slot: no
/// lock, no string, no copy of a fence per fix.
///
/// ```swift
/// let index = GeofenceIndex(store: store, lifetime: 60_000)
/// let fences = try await index.snapshot(owners: owners, now: now)
/// for fix in fixes {
///   let point = HaversinePoint(fix.coordinate)
///   fences.forEachFence(near: fix.coordinate) { slot, fence in if fence.signedDistance(to: point) <= 0 { … } }
/// }
/// ```
public final class GeofenceIndex: Sendable {
  /// The loaded fences, each in a slot of its own (an `Int32`), so that a lookup compares integers and boxes and
  /// touches no string, and copies only the fences it returns.
  fileprivate struct State: Sendable {
    /// Each loaded owner's slots, and when they were read (nil: to be read again before the next lookup).
    var owners: [UserID: (slots: [Int32], loadedAt: Int64?)] = [:]
    /// Each owner ever loaded → a small number of its own (kept when its fences are forgotten).
    var ownerNumbers: [UserID: Int32] = [:]
    /// By slot: the fence (nil: a free slot), its shape decoded and prepared, its box, its owner's number and its
    /// cell keys.
    var items: [GeofenceItem?] = []
    var shapes: [PreparedGeofence?] = []
    var boxes: [BoundingBox] = []
    var ownerOf: [Int32] = []
    var keys: [[Int64]] = []
    var freeSlots: [Int32] = []
    /// The slot of each loaded fence.
    var slots: [GeofenceID: Int32] = [:]
    /// Cell key (``GeofenceIndex/cellKeys(covering:)``) → the fences whose box it covers, with what a lookup checks of
    /// them side by side (one pass over contiguous memory).
    var cells: [Int64: [CellEntry]] = [:]
    /// How many cells of each precision (bits) are indexed: a point is probed at those precisions only.
    var precisions: [Int: Int] = [:]
    /// The keys of ``precisions``, for the probes.
    var probedPrecisions: [Int] = []
    /// Counts invalidations: a load that overlapped one may hold what it was about, so it is not kept.
    var invalidations: UInt64 = 0
    /// When the owners nobody asked about were last looked for (once a lifetime, not on every load).
    var sweptAt: Int64?

    /// Forgets `owner`'s fences: one pass over each cell they were under, whatever the cells' sizes.
    mutating func remove(_ owner: UserID) {
      guard let loaded = owners.removeValue(forKey: owner) else { return }
      guard !loaded.slots.isEmpty else { return }
      var removed = [Bool](repeating: false, count: items.count)
      var touched = Set<Int64>()
      for slot in loaded.slots {
        let index = Int(slot)
        guard let item = items[index] else { continue }
        removed[index] = true
        for key in keys[index] {
          touched.insert(key)
          let bits = GeofenceIndex.precision(of: key)
          precisions[bits, default: 0] -= 1
          if precisions[bits] == 0 { precisions[bits] = nil }
        }
        slots[item.id] = nil
        items[index] = nil
        shapes[index] = nil
        keys[index] = []
        freeSlots.append(slot)
      }
      for key in touched {
        cells[key]?.removeAll { removed[Int($0.slot)] }
        if cells[key]?.isEmpty == true { cells[key] = nil }
      }
      probedPrecisions = precisions.keys.sorted()
    }

    mutating func insert(_ owner: UserID, _ fences: [GeofenceItem], at now: Int64?) {
      remove(owner)
      let number = ownerNumbers[owner] ?? Int32(ownerNumbers.count)
      ownerNumbers[owner] = number
      var owned: [Int32] = []
      // New slots in the order of the fences' places on a Z-order curve (their boxes' centres' geohashes), so that the
      // fences near one point have slots near each other: a batch's per-slot data (its states) stays in few cache
      // lines.
      let ordered = fences.map { item in
        let shape = item.shape.geofence
        return (item: item, shape: shape, place: GeofenceIndex.place(of: shape.boundingBox))
      }.sorted { $0.place < $1.place }
      for (item, decoded, _) in ordered where slots[item.id] == nil {
        let shape = PreparedGeofence(decoded)
        // A covering's cells are distinct and of one precision, so a point lies in at most one of a fence's cells:
        // a lookup finds each fence once.
        let fenceKeys = GeofenceIndex.cellKeys(covering: decoded.boundingBox)
        let slot: Int32
        if let free = freeSlots.popLast() {
          slot = free
          let index = Int(slot)
          (items[index], shapes[index], boxes[index], ownerOf[index], keys[index]) =
            (item, shape, decoded.boundingBox, number, fenceKeys)
        } else {
          slot = Int32(items.count)
          items.append(item)
          shapes.append(shape)
          boxes.append(decoded.boundingBox)
          ownerOf.append(number)
          keys.append(fenceKeys)
        }
        slots[item.id] = slot
        owned.append(slot)
        for key in fenceKeys {
          cells[key, default: []].append(CellEntry(slot: slot, owner: number, box: boxes[Int(slot)], fence: shape))
          precisions[GeofenceIndex.precision(of: key), default: 0] += 1
        }
      }
      owners[owner] = (owned, now)
      probedPrecisions = precisions.keys.sorted()
    }

    /// Calls `body` with the slot of each fence of the owners numbered `wanted` whose box contains `point`, once.
    func forEachFence(
      near point: Coordinate, wanted: OwnerNumbers, _ body: (Int32, PreparedGeofence) throws -> Void
    ) rethrows {
      guard let key = try? GeohashCell(point, bits: 64).value else { return }
      for bits in probedPrecisions {
        let cell = Int64(bitPattern: (1 << UInt64(bits)) | key >> UInt64(64 - bits))
        guard let inCell = cells[cell] else { continue }
        // Each entry read in place through the buffer: none is copied (a copy of an entry or of its shape is a value
        // witness call, a tenth of the time per fix).
        try inCell.withUnsafeBufferPointer { entries in
          for index in entries.indices where wanted.contains(entries[index].owner) && entries[index].box.contains(point)
          {
            try body(entries[index].slot, entries[index].fence)
          }
        }
      }
    }
  }

  /// A fence under a cell: its slot, its owner's number, its box and its shape — all a lookup reads, side by side (the
  /// shape there rather than by slot: measured, a lookup's reads by slot cost more than the copies they save).
  fileprivate struct CellEntry: Sendable {
    var slot: Int32
    var owner: Int32
    var box: BoundingBox
    var fence: PreparedGeofence
  }

  /// The numbers of the owners a lookup is about, as a bit set (owner numbers are small and dense).
  fileprivate struct OwnerNumbers: Sendable {
    private var words: [UInt64] = []

    init(_ numbers: [Int32]) {
      for number in numbers where number >= 0 {
        let word = Int(number) >> 6
        if word >= words.count { words += repeatElement(0, count: word + 1 - words.count) }
        words[word] |= 1 << UInt64(number & 63)
      }
    }

    func contains(_ number: Int32) -> Bool {
      let word = Int(number) >> 6
      return word < words.count && words[word] & (1 << UInt64(number & 63)) != 0
    }
  }

  private let state = Mutex(State())
  private let store: any GeofenceStore
  private let lifetime: Int64

  /// An index over `store`'s fences, each owner's kept `lifetime` milliseconds.
  public init(store: any GeofenceStore, lifetime: Int64 = 5_000) {
    self.store = store
    self.lifetime = lifetime
  }

  /// The fences of `owners` as the index holds them now (each owner's read first when not loaded or loaded longer
  /// than the lifetime ago): what a batch of fixes asks, point by point, without taking the index's lock again.
  public func snapshot(owners: [UserID], now: Int64) async throws -> Snapshot {
    try await load(owners, now: now)
    return state.withLock { state in
      Snapshot(state: state, owners: owners, wanted: OwnerNumbers(owners.compactMap { state.ownerNumbers[$0] }))
    }
  }

  /// The fences of some owners at one moment, each under a slot (an `Int32` below ``slotCount``) that means the same
  /// fence for as long as this snapshot lives: per-fence data of a batch can be kept in an array by slot.
  public struct Snapshot: Sendable {
    fileprivate let state: State
    fileprivate let owners: [UserID]
    fileprivate let wanted: OwnerNumbers

    /// One more than the largest slot.
    public var slotCount: Int { state.items.count }

    /// Whether the owners have no fence.
    public var isEmpty: Bool {
      !owners.contains { !(state.owners[$0]?.slots.isEmpty ?? true) }
    }

    /// Calls `body` with the slot and the decoded, prepared shape of each of the owners' fences whose bounding box
    /// contains `point`, once each, in no particular order.
    public func forEachFence(near point: Coordinate, _ body: (Int32, PreparedGeofence) throws -> Void) rethrows {
      try state.forEachFence(near: point, wanted: wanted, body)
    }

    /// The slots of the owners' fences whose bounding box contains `point`, in no particular order.
    public func slots(near point: Coordinate) -> [Int32] {
      var found: [Int32] = []
      forEachFence(near: point) { slot, _ in found.append(slot) }
      return found
    }

    /// The fence in `slot` (one ``slots(near:)`` or ``slot(of:)`` answered).
    public func fence(at slot: Int32) -> GeofenceItem { state.items[Int(slot)]! }

    /// The decoded, prepared shape of the fence in `slot`.
    public func shape(at slot: Int32) -> PreparedGeofence { state.shapes[Int(slot)]! }

    /// The slot of the fence `id`, when it is one of the owners'.
    public func slot(of id: GeofenceID) -> Int32? {
      guard let slot = state.slots[id], wanted.contains(state.ownerOf[Int(slot)]) else { return nil }
      return slot
    }
  }

  /// The fences of `owners` whose bounding box contains at least one of `points`, by id (the same answer as
  /// ``GeofenceStore/geofences(near:owners:)``, from memory).
  public func fences(near points: [Coordinate], owners: [UserID], now: Int64) async throws -> [GeofenceItem] {
    var found: [GeofenceID: GeofenceItem] = [:]
    for fences in try await fences(nearEach: points, owners: owners, now: now) {
      for fence in fences { found[fence.id] = fence }
    }
    return found.values.sorted { $0.id < $1.id }
  }

  /// For each of `points`, the fences of `owners` whose bounding box contains it, in no particular order.
  public func fences(nearEach points: [Coordinate], owners: [UserID], now: Int64) async throws -> [[GeofenceItem]] {
    guard !points.isEmpty, !owners.isEmpty else { return points.map { _ in [] } }
    let snapshot = try await snapshot(owners: owners, now: now)
    return points.map { point in snapshot.slots(near: point).map(snapshot.fence(at:)) }
  }

  /// The fences of `owners`, oldest first (by creation time, then id; from memory once loaded).
  public func fences(owners: [UserID], now: Int64) async throws -> [GeofenceItem] {
    try await load(owners, now: now)
    return state.withLock { state in
      Set(owners).flatMap { owner in (state.owners[owner]?.slots ?? []).compactMap { state.items[Int($0)] } }
    }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
  }

  /// The fences among `ids` that exist, by id: from memory when their owner is loaded, else from the store.
  public func fences(ids: [GeofenceID]) async throws -> [GeofenceItem] {
    guard !ids.isEmpty else { return [] }
    let (known, missing) = state.withLock { state in
      var known: [GeofenceItem] = []
      var missing: [GeofenceID] = []
      for id in ids {
        if let slot = state.slots[id], let fence = state.items[Int(slot)] {
          known.append(fence)
        } else {
          missing.append(id)
        }
      }
      return (known, missing)
    }
    let read = missing.isEmpty ? [] : try await store.geofences(ids: missing)
    return (known + read).sorted { $0.id < $1.id }
  }

  /// Forgets `owner`'s fences: the next lookup reads them again.
  public func invalidate(owner: UserID) {
    state.withLock { state in
      state.invalidations &+= 1
      state.remove(owner)
    }
  }

  /// Forgets every owner's fences.
  public func invalidateAll() {
    state.withLock { state in
      state.invalidations &+= 1
      state = State(invalidations: state.invalidations)
    }
  }

  /// Reads the fences of those of `owners` not loaded or loaded longer than the lifetime ago, in one query.
  private func load(_ owners: [UserID], now: Int64) async throws {
    let lifetime = lifetime
    let (stale, generation) = state.withLock { state -> ([UserID], UInt64) in
      func isStale(_ owner: UserID) -> Bool {
        guard let loadedAt = state.owners[owner]?.loadedAt else { return true }
        return now - loadedAt >= lifetime
      }
      guard owners.contains(where: isStale) else { return ([], state.invalidations) }
      return (Array(Set(owners.filter(isStale))), state.invalidations)
    }
    guard !stale.isEmpty else { return }
    let items = try await store.geofences(owners: stale)
    let byOwner = Dictionary(grouping: items, by: \.ownerId)
    state.withLock { state in
      // A change that overlapped the read may not be in it: what was read serves this lookup, marked expired.
      let loadedAt = state.invalidations == generation ? now : nil
      for owner in stale { state.insert(owner, byOwner[owner] ?? [], at: loadedAt) }
      // The owners nobody asked about for twice the lifetime (people who stopped sharing, accounts deleted) go: looked
      // for once a lifetime, so that a node with many owners doesn't walk them all on each owner's reload.
      if let sweptAt = state.sweptAt, now - sweptAt < lifetime { return }
      state.sweptAt = now
      let kept = Set(stale)
      let forgottenAfter = lifetime > Int64.max / 2 ? Int64.max : lifetime * 2
      let forgotten = state.owners.compactMap { owner, loaded -> UserID? in
        guard !kept.contains(owner) else { return nil }
        guard let loadedAt = loaded.loadedAt else { return owner }
        return now - loadedAt >= forgottenAfter ? owner : nil
      }
      for owner in forgotten { state.remove(owner) }
    }
  }

  /// The keys (`1 << bits | value`) of the geohash cells covering `box`: at most 16 cells (the store's
  /// ``GeofenceShape/coveringKeys`` takes 8) of a precision that is a multiple of 4 bits, so that a lookup probes few
  /// precisions (each probe is a cache miss or two; a coarser cell's extra fences are a sequential scan).
  static func cellKeys(covering box: BoundingBox) -> [Int64] {
    guard let covering = try? GeohashCovering(box: box, maxCells: 16, maxBits: 60) else { return [] }
    let bits = max(4, covering.bits & ~3)
    let shift = UInt64(covering.bits - bits)
    var keys: [Int64] = []
    for cell in covering.cells {
      guard let key = try? GeohashCell(value: cell.value >> shift, bits: bits).geofenceKey else { continue }
      if keys.last != key { keys.append(key) }  // the cells are sorted by value: a parent's children are adjacent
    }
    return keys
  }

  /// Where `box` lies on a Z-order curve: its centre's 64-bit geohash (0 for a box the geohash can't place).
  static func place(of box: BoundingBox) -> UInt64 {
    let longitude =
      box.west <= box.east ? (box.west + box.east) / 2 : Coordinate.normalizedLongitude((box.west + box.east + 360) / 2)
    return
      (try? GeohashCell(Coordinate(uncheckedLatitude: (box.south + box.north) / 2, longitude: longitude), bits: 64)
      .value) ?? 0
  }

  /// The precision (bits) of a cell key `1 << bits | value`.
  static func precision(of key: Int64) -> Int { 63 - UInt64(bitPattern: key).leadingZeroBitCount }
}

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
/// ``invalidateAll()`` (this node changed them); the lifetime bounds how long another node's change goes unseen.
///
/// ```swift
/// let index = GeofenceIndex(store: store, lifetime: 5_000)
/// let near = try await index.fences(near: fixes.map(\.coordinate), owners: owners, now: now)
/// ```
public final class GeofenceIndex: Sendable {
  /// The loaded fences, each in a slot of its own (an `Int32`), so that a lookup compares integers and boxes and
  /// touches no string, and copies only the fences it returns.
  private struct State {
    /// Each loaded owner's slots, and when they were read (nil: to be read again before the next lookup).
    var owners: [UserID: (slots: [Int32], loadedAt: Int64?)] = [:]
    /// Each owner ever loaded → a small number of its own (kept when its fences are forgotten).
    var ownerNumbers: [UserID: Int32] = [:]
    /// By slot: the fence (nil: a free slot), its box, its owner's number and its cell keys.
    var items: [GeofenceItem?] = []
    var boxes: [BoundingBox] = []
    var ownerOf: [Int32] = []
    var keys: [[Int64]] = []
    var freeSlots: [Int32] = []
    /// The slot of each loaded fence.
    var slots: [GeofenceID: Int32] = [:]
    /// Cell key (``GeofenceShape/coveringKeys``) → the slots of the fences whose box it covers.
    var cells: [Int64: [Int32]] = [:]
    /// How many cells of each precision (bits) are indexed: a point is probed at those precisions only.
    var precisions: [Int: Int] = [:]
    /// The keys of ``precisions``, for the probes.
    var probedPrecisions: [Int] = []
    /// Per slot, the last lookup that found it (``lookups``): a fence in several of a point's cells counts once.
    var seen: [UInt32] = []
    var lookups: UInt32 = 0
    /// Counts invalidations: a load that overlapped one may hold what it was about, so it is not kept.
    var invalidations: UInt64 = 0

    mutating func remove(_ owner: UserID) {
      guard let loaded = owners.removeValue(forKey: owner) else { return }
      for slot in loaded.slots {
        let index = Int(slot)
        guard let item = items[index] else { continue }
        for key in keys[index] {
          cells[key]?.removeAll { $0 == slot }
          if cells[key]?.isEmpty == true { cells[key] = nil }
          let bits = GeofenceIndex.precision(of: key)
          precisions[bits, default: 0] -= 1
          if precisions[bits] == 0 { precisions[bits] = nil }
        }
        slots[item.id] = nil
        items[index] = nil
        keys[index] = []
        freeSlots.append(slot)
      }
      probedPrecisions = precisions.keys.sorted()
    }

    mutating func insert(_ owner: UserID, _ fences: [GeofenceItem], at now: Int64?) {
      remove(owner)
      let number = ownerNumbers[owner] ?? Int32(ownerNumbers.count)
      ownerNumbers[owner] = number
      var owned: [Int32] = []
      for item in fences where slots[item.id] == nil {
        let box = item.shape.geofence.boundingBox
        let fenceKeys = item.shape.coveringKeys
        let slot: Int32
        if let free = freeSlots.popLast() {
          slot = free
          let index = Int(slot)
          (items[index], boxes[index], ownerOf[index], keys[index]) = (item, box, number, fenceKeys)
        } else {
          slot = Int32(items.count)
          items.append(item)
          boxes.append(box)
          ownerOf.append(number)
          keys.append(fenceKeys)
          seen.append(0)
        }
        slots[item.id] = slot
        owned.append(slot)
        for key in fenceKeys {
          cells[key, default: []].append(slot)
          precisions[GeofenceIndex.precision(of: key), default: 0] += 1
        }
      }
      owners[owner] = (owned, now)
      probedPrecisions = precisions.keys.sorted()
    }

    /// The slots of the fences of the owners numbered `wanted` whose box contains `point`, each once.
    mutating func slots(near point: Coordinate, wanted: OwnerNumbers) -> [Int32] {
      guard let key = try? GeohashCell(point, bits: 64).value else { return [] }
      lookups &+= 1
      if lookups == 0 {  // wrapped: no slot may look seen by this lookup
        for index in seen.indices { seen[index] = 0 }
        lookups = 1
      }
      var found: [Int32] = []
      for bits in probedPrecisions {
        let cell = Int64(bitPattern: (1 << UInt64(bits)) | key >> UInt64(64 - bits))
        guard let inCell = cells[cell] else { continue }
        for slot in inCell {
          let index = Int(slot)
          guard seen[index] != lookups else { continue }
          seen[index] = lookups
          guard wanted.contains(ownerOf[index]), boxes[index].contains(point) else { continue }
          found.append(slot)
        }
      }
      return found
    }
  }

  /// The numbers of the owners a lookup is about: a few compared one by one, more through a set.
  private struct OwnerNumbers {
    let few: [Int32]
    let many: Set<Int32>?

    init(_ numbers: [Int32]) {
      few = numbers
      many = numbers.count > 16 ? Set(numbers) : nil
    }

    func contains(_ number: Int32) -> Bool { many?.contains(number) ?? few.contains(number) }
  }

  private let state = Mutex(State())
  private let store: any GeofenceStore
  private let lifetime: Int64

  /// An index over `store`'s fences, each owner's kept `lifetime` milliseconds.
  public init(store: any GeofenceStore, lifetime: Int64 = 5_000) {
    self.store = store
    self.lifetime = lifetime
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
    try await load(owners, now: now)
    return state.withLock { state in
      let wanted = OwnerNumbers(owners.compactMap { state.ownerNumbers[$0] })
      return points.map { point in
        state.slots(near: point, wanted: wanted).compactMap { state.items[Int($0)] }
      }
    }
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
    }
  }

  /// The precision (bits) of a cell key `1 << bits | value`.
  static func precision(of key: Int64) -> Int { 63 - UInt64(bitPattern: key).leadingZeroBitCount }
}

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
  /// A fence with its decoded shape, its box and its cell keys.
  struct Indexed: Sendable {
    let item: GeofenceItem
    let box: BoundingBox
    let keys: [Int64]
  }

  private struct State {
    /// Each loaded owner's fences, and when they were read (nil: to be read again before the next lookup).
    var owners: [UserID: (ids: [GeofenceID], loadedAt: Int64?)] = [:]
    var fences: [GeofenceID: Indexed] = [:]
    /// Cell key (``GeofenceShape/coveringKeys``) → the fences whose box it covers.
    var cells: [Int64: [GeofenceID]] = [:]
    /// How many cells of each precision (bits) are indexed: a point is probed at those precisions only.
    var precisions: [Int: Int] = [:]
    /// Counts invalidations: a load that overlapped one may hold what it was about, so it is not kept.
    var invalidations: UInt64 = 0

    mutating func remove(_ owner: UserID) {
      guard let loaded = owners.removeValue(forKey: owner) else { return }
      for id in loaded.ids {
        guard let fence = fences.removeValue(forKey: id) else { continue }
        for key in fence.keys {
          cells[key]?.removeAll { $0 == id }
          if cells[key]?.isEmpty == true { cells[key] = nil }
          let bits = GeofenceIndex.precision(of: key)
          precisions[bits, default: 0] -= 1
          if precisions[bits] == 0 { precisions[bits] = nil }
        }
      }
    }

    mutating func insert(_ owner: UserID, _ items: [GeofenceItem], at now: Int64?) {
      remove(owner)
      var ids: [GeofenceID] = []
      for item in items where fences[item.id] == nil {
        let fence = Indexed(item: item, box: item.shape.geofence.boundingBox, keys: item.shape.coveringKeys)
        fences[item.id] = fence
        ids.append(item.id)
        for key in fence.keys {
          cells[key, default: []].append(item.id)
          precisions[GeofenceIndex.precision(of: key), default: 0] += 1
        }
      }
      owners[owner] = (ids, now)
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

  /// The fences of `owners` whose bounding box contains at least one of `points`, by id (the same answer as
  /// ``GeofenceStore/geofences(near:owners:)``, from memory).
  public func fences(near points: [Coordinate], owners: [UserID], now: Int64) async throws -> [GeofenceItem] {
    var found: [GeofenceID: GeofenceItem] = [:]
    for fences in try await fences(nearEach: points, owners: owners, now: now) {
      for fence in fences { found[fence.id] = fence }
    }
    return found.values.sorted { $0.id < $1.id }
  }

  /// For each of `points`, the fences of `owners` whose bounding box contains it, by id.
  public func fences(nearEach points: [Coordinate], owners: [UserID], now: Int64) async throws -> [[GeofenceItem]] {
    guard !points.isEmpty, !owners.isEmpty else { return points.map { _ in [] } }
    try await load(owners, now: now)
    let wanted = Set(owners)
    return state.withLock { state in
      let precisions = Array(state.precisions.keys)
      return points.map { point in
        guard let key = try? GeohashCell(point, bits: 64).value else { return [] }
        var found: [GeofenceID: GeofenceItem] = [:]
        for bits in precisions {
          let cell = Int64(bitPattern: (1 << UInt64(bits)) | key >> UInt64(64 - bits))
          for id in state.cells[cell] ?? [] where found[id] == nil {
            guard let fence = state.fences[id], wanted.contains(fence.item.ownerId), fence.box.contains(point)
            else { continue }
            found[id] = fence.item
          }
        }
        return found.values.sorted { $0.id < $1.id }
      }
    }
  }

  /// The fences of `owners`, oldest first (by creation time, then id; from memory once loaded).
  public func fences(owners: [UserID], now: Int64) async throws -> [GeofenceItem] {
    try await load(owners, now: now)
    return state.withLock { state in
      Set(owners).flatMap { owner in (state.owners[owner]?.ids ?? []).compactMap { state.fences[$0]?.item } }
    }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
  }

  /// The fences among `ids` that exist, by id: from memory when their owner is loaded, else from the store.
  public func fences(ids: [GeofenceID]) async throws -> [GeofenceItem] {
    guard !ids.isEmpty else { return [] }
    let (known, missing) = state.withLock { state in
      var known: [GeofenceItem] = []
      var missing: [GeofenceID] = []
      for id in ids {
        if let fence = state.fences[id] { known.append(fence.item) } else { missing.append(id) }
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
    let (stale, generation) = state.withLock { state in
      (
        Array(
          Set(
            owners.filter { owner in
              guard let loadedAt = state.owners[owner]?.loadedAt else { return true }
              return now - loadedAt >= lifetime
            })),
        state.invalidations
      )
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

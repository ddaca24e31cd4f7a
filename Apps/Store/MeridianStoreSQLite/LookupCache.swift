import DomainKit
import Foundation
import MeridianStore
import Synchronization

/// The lookups a ``SQLiteStore`` remembers, one set per database pool: every store value opened on the same file in
/// this process (PersistenceKit gives them the same pool) sees the same entries, so a change made through one of them
/// is seen by all.
final class StoreCaches: Sendable {
  /// Bearer token hash → its user and expiry, for 2 seconds (every request looks its token up). Revoking, disabling
  /// and deleting through the store drop the entries at once; the lifetime bounds changes made by another process.
  let tokens = LookupCache<String, (user: UserID, expiresAt: Int64)>(lifetime: 2_000)
  /// Device → owner, for a minute (a device never changes owner; deleting an account drops the entries).
  let devices = LookupCache<DeviceID, UserID>(lifetime: 60_000)

  private struct Entry {
    weak var pool: (any AnyObject & Sendable)?
    let caches: StoreCaches
  }

  /// The process-wide map from a pool to its caches (pools held weakly).
  private static let registry = Mutex<[ObjectIdentifier: Entry]>([:])

  /// The caches of `pool`, created on first use.
  static func shared(for pool: any AnyObject & Sendable) -> StoreCaches {
    registry.withLock { entries in
      if let entry = entries[ObjectIdentifier(pool)], entry.pool === pool { return entry.caches }
      entries = entries.filter { $0.value.pool != nil }
      let caches = StoreCaches()
      entries[ObjectIdentifier(pool)] = Entry(pool: pool, caches: caches)
      return caches
    }
  }
}

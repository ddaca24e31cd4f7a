import DomainKit
import Foundation

/// A small in-memory map whose entries expire after `lifetime` milliseconds, for lookups every request repeats
/// (bearer token → user, device → owner). Entries are dropped explicitly when this process changes what they say;
/// the lifetime bounds how long a change made by another process (the admin CLI) can go unseen.
final class LookupCache<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
  private let lock = NSLock()
  private var entries: [Key: (value: Value, storedAt: Int64)] = [:]
  /// Counts drops: a value loaded while one happened may be what the drop was about, so it is not stored.
  private var drops: UInt64 = 0
  private let lifetime: Int64
  private let capacity: Int

  /// A cache of at most `capacity` entries living `lifetime` milliseconds.
  init(lifetime: Int64, capacity: Int = 100_000) {
    self.lifetime = lifetime
    self.capacity = capacity
  }

  /// The value stored for `key`, unless it expired.
  func value(for key: Key, now: Int64) -> Value? {
    lock.withLock {
      guard let entry = entries[key], now - entry.storedAt < lifetime, now >= entry.storedAt else { return nil }
      return entry.value
    }
  }

  /// The value for `key`: the stored one unless it expired, else what `load` returns, which is stored unless an
  /// entry was dropped while it loaded (the load may have read the state the drop was about, such as a token just
  /// revoked, and must not bring it back).
  func value(for key: Key, now: Int64, load: () async throws -> Value?) async throws -> Value? {
    if let stored = value(for: key, now: now) { return stored }
    let before = lock.withLock { drops }
    guard let loaded = try await load() else { return nil }
    lock.withLock {
      guard drops == before else { return }
      if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
      entries[key] = (loaded, now)
    }
    return loaded
  }

  /// Drops `key`.
  func remove(_ key: Key) {
    lock.withLock {
      drops &+= 1
      entries.removeValue(forKey: key)
    }
  }

  /// Drops every entry whose value matches.
  func removeAll(where shouldRemove: (Value) -> Bool) {
    lock.withLock {
      drops &+= 1
      entries = entries.filter { !shouldRemove($0.value.value) }
    }
  }
}

/// The lookups a ``SQLiteStore`` remembers, one set per database pool: every store value opened on the same file in
/// this process (PersistenceKit gives them the same pool) sees the same entries, so a change made through one of them
/// is seen by all.
final class StoreCaches: Sendable {
  /// Bearer token hash → its user and expiry, for 2 seconds (every request looks its token up). Revoking, disabling
  /// and deleting through the store drop the entries at once; the lifetime bounds changes made by another process.
  let tokens = LookupCache<String, (user: UserID, expiresAt: Int64)>(lifetime: 2_000)
  /// Device → owner, for a minute (a device never changes owner; deleting an account drops the entries).
  let devices = LookupCache<DeviceID, UserID>(lifetime: 60_000)

  /// The process-wide map from a pool to its caches (pools held weakly).
  private final class Registry: @unchecked Sendable {
    private struct Entry {
      weak var pool: AnyObject?
      let caches: StoreCaches
    }
    private let lock = NSLock()
    private var entries: [ObjectIdentifier: Entry] = [:]

    func caches(for pool: AnyObject) -> StoreCaches {
      lock.withLock {
        if let entry = entries[ObjectIdentifier(pool)], entry.pool === pool { return entry.caches }
        entries = entries.filter { $0.value.pool != nil }
        let caches = StoreCaches()
        entries[ObjectIdentifier(pool)] = Entry(pool: pool, caches: caches)
        return caches
      }
    }
  }

  private static let registry = Registry()

  /// The caches of `pool`, created on first use.
  static func shared(for pool: AnyObject) -> StoreCaches { registry.caches(for: pool) }
}

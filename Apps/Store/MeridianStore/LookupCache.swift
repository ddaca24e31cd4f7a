import DomainKit
import Foundation
import Synchronization

/// A small in-memory map whose entries expire after `lifetime` milliseconds, for lookups every request repeats
/// (bearer token → user, device → owner). Entries are dropped explicitly when this process changes what they say;
/// the lifetime bounds how long a change made by another process (the admin CLI) can go unseen.
public final class LookupCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
  private struct State {
    var entries: [Key: (value: Value, storedAt: Int64)] = [:]
    /// Counts drops: a value loaded while one happened may be what the drop was about, so it is not stored.
    var drops: UInt64 = 0
  }
  private let state = Mutex(State())
  private let lifetime: Int64
  private let capacity: Int

  /// A cache of at most `capacity` entries living `lifetime` milliseconds.
  public init(lifetime: Int64, capacity: Int = 100_000) {
    self.lifetime = lifetime
    self.capacity = capacity
  }

  /// The value stored for `key`, unless it expired.
  public func value(for key: Key, now: Int64) -> Value? {
    state.withLock { state in
      guard let entry = state.entries[key], now - entry.storedAt < lifetime, now >= entry.storedAt else { return nil }
      return entry.value
    }
  }

  /// The value for `key`: the stored one unless it expired, else what `load` returns, which is stored unless an
  /// entry was dropped while it loaded (the load may have read the state the drop was about, such as a token just
  /// revoked, and must not bring it back).
  public func value(for key: Key, now: Int64, load: () async throws -> Value?) async throws -> Value? {
    if let stored = value(for: key, now: now) { return stored }
    let before = state.withLock { $0.drops }
    guard let loaded = try await load() else { return nil }
    state.withLock { state in
      guard state.drops == before else { return }
      if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
      state.entries[key] = (loaded, now)
    }
    return loaded
  }

  /// Stores `value` for `key` as of `now` (what this process just wrote): a load in progress meanwhile, which may
  /// have read what it replaces, does not overwrite it.
  public func store(_ value: Value, for key: Key, now: Int64) {
    state.withLock { state in
      state.drops &+= 1
      if state.entries.count >= capacity, state.entries[key] == nil { state.entries.removeAll(keepingCapacity: true) }
      state.entries[key] = (value, now)
    }
  }

  /// Drops `key`.
  public func remove(_ key: Key) {
    state.withLock { state in
      state.drops &+= 1
      state.entries.removeValue(forKey: key)
    }
  }

  /// Drops every entry whose value matches.
  public func removeAll(where shouldRemove: (Value) -> Bool) {
    state.withLock { state in
      state.drops &+= 1
      state.entries = state.entries.filter { !shouldRemove($0.value.value) }
    }
  }
}

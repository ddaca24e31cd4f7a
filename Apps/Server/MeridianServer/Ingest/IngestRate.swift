import Synchronization

/// Fixes accepted over the last minute (or another window), for the admin API's ingest rate: one count per second
/// in a ring, fed by ``FixWriter`` after each commit. Recording and reading cost a lock and a few additions.
public final class IngestRate: Sendable {
  /// The window, seconds.
  public let windowSeconds: Int
  private let slots: Mutex<[(second: Int64, fixes: Int)]>

  /// A counter over the last `windowSeconds` seconds.
  public init(windowSeconds: Int = 60) {
    self.windowSeconds = max(1, windowSeconds)
    slots = Mutex(Array(repeating: (second: Int64.min, fixes: 0), count: max(1, windowSeconds)))
  }

  /// Counts `fixes` accepted at `now` (UTC ms).
  public func record(_ fixes: Int, at now: Int64) {
    guard fixes > 0 else { return }
    let second = now / 1000
    let index = Int(second % Int64(windowSeconds))
    slots.withLock { slots in
      if slots[index].second != second { slots[index] = (second, 0) }
      slots[index].fixes += fixes
    }
  }

  /// The fixes accepted during the `windowSeconds` seconds up to and including `now`'s second.
  public func accepted(at now: Int64) -> Int {
    let second = now / 1000
    let window = Int64(windowSeconds)
    return slots.withLock { slots in
      slots.reduce(0) { total, slot in
        (second - window + 1...second).contains(slot.second) ? total + slot.fixes : total
      }
    }
  }
}

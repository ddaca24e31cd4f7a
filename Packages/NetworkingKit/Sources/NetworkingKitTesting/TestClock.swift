import Foundation
import NetworkingKit
import Synchronization

/// A clock for tests: time moves only when a test (or, in ``Mode/immediate`` mode, a sleep) moves it, and every sleep
/// is recorded, so waits can be asserted exactly without waiting for them.
public final class TestClock: Clock, Sendable {
  /// How sleeps behave.
  public enum Mode: Sendable {
    /// A sleep returns at once and moves the clock forward by its duration.
    case immediate
    /// A sleep suspends until ``advance(by:)`` passes its deadline, or the task is cancelled.
    case manual
  }

  /// A point in test time.
  public struct Instant: InstantProtocol, Sendable {
    /// The offset from the clock's start.
    public var offset: Duration

    /// Creates an instant.
    public init(offset: Duration) { self.offset = offset }

    /// The instant `duration` later.
    public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
    /// The duration from this instant to `other`.
    public func duration(to other: Instant) -> Duration { other.offset - offset }
    /// Orders instants.
    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
  }

  private struct Sleeper {
    let id: UInt64
    let deadline: Instant
    let continuation: CheckedContinuation<Void, any Error>
  }

  private struct State {
    var now = Instant(offset: .zero)
    var sleeps: [Duration] = []
    var sleepers: [Sleeper] = []
    var nextID: UInt64 = 0
  }

  private let state = Mutex(State())
  /// How sleeps behave.
  public let mode: Mode

  /// Creates a clock at offset zero.
  public init(mode: Mode = .immediate) { self.mode = mode }

  /// The current instant.
  public var now: Instant { state.withLock { $0.now } }
  /// The smallest meaningful interval.
  public var minimumResolution: Duration { .zero }
  /// Every duration slept so far, in order.
  public var sleeps: [Duration] { state.withLock { $0.sleeps } }
  /// How many sleeps are suspended now (manual mode).
  public var pendingSleeps: Int { state.withLock { $0.sleepers.count } }

  /// Sleeps until `deadline` in test time.
  public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    try Task.checkCancellation()
    let id: UInt64? = state.withLock { state in
      state.sleeps.append(state.now.duration(to: deadline))
      if mode == .immediate {
        state.now = max(state.now, deadline)
        return nil
      }
      state.nextID += 1
      return state.nextID
    }
    guard let id else { return }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let resumeNow: Bool = state.withLock { state in
          if deadline <= state.now { return true }
          state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
          return false
        }
        if resumeNow { continuation.resume() }
      }
    } onCancel: {
      let sleeper: Sleeper? = state.withLock { state in
        guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
        return state.sleepers.remove(at: index)
      }
      sleeper?.continuation.resume(throwing: CancellationError())
    }
  }

  /// Moves time forward and wakes every sleep whose deadline has come.
  public func advance(by duration: Duration) {
    let due: [Sleeper] = state.withLock { state in
      state.now = state.now.advanced(by: duration)
      let now = state.now
      let due = state.sleepers.filter { $0.deadline <= now }
      state.sleepers.removeAll { $0.deadline <= now }
      return due
    }
    for sleeper in due { sleeper.continuation.resume() }
  }
}

extension RandomSource {
  /// A reproducible source (SplitMix64) for tests.
  public static func seeded(_ seed: UInt64) -> RandomSource {
    let generator = SplitMix64(seed: seed)
    return RandomSource { Double(generator.next() >> 11) / Double(1 << 53) }
  }

  /// A source that always returns `value` (e.g. `0.5`), for asserting exact backoffs.
  public static func constant(_ value: Double) -> RandomSource {
    RandomSource { value }
  }
}

/// SplitMix64 behind a lock, so that a seeded ``RandomSource`` can be shared by concurrent requests.
private final class SplitMix64: Sendable {
  private let state: Mutex<UInt64>

  init(seed: UInt64) { state = Mutex(seed) }

  func next() -> UInt64 {
    state.withLock { state in
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
  }
}

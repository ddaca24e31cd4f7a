import NetworkingKit
import Synchronization

/// Collects ``AttemptEvent``s; pass ``record(_:)`` as ``NetworkClient/Configuration/onAttempt``.
public final class AttemptRecorder: Sendable {
  private let storage = Mutex<[AttemptEvent]>([])

  /// Creates an empty recorder.
  public init() {}

  /// Appends an event.
  @Sendable public func record(_ event: AttemptEvent) {
    storage.withLock { $0.append(event) }
  }

  /// Every event so far, in order.
  public var events: [AttemptEvent] { storage.withLock { $0 } }
}

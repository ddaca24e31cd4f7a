import NetworkingKit

/// Collects ``AttemptEvent``s; pass ``record(_:)`` as ``NetworkClient/Configuration/onAttempt``.
public final class AttemptRecorder: Sendable {
  private let storage = Locked<[AttemptEvent]>([])

  /// Creates an empty recorder.
  public init() {}

  /// Appends an event.
  @Sendable public func record(_ event: AttemptEvent) {
    storage.withLock { $0.append(event) }
  }

  /// Every event so far, in order.
  public var events: [AttemptEvent] { storage.withLock { $0 } }
}

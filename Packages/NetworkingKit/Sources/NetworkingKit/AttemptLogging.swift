import Logging

extension AttemptEvent {
  /// A handler for ``NetworkClient/Configuration/onAttempt`` that logs every attempt with swift-log: an attempt that
  /// is retried or fails at `.notice`, a success at `.debug`. The metadata carries method, path template, host,
  /// attempt, outcome, decision, delay and idempotency key.
  public static func logger(_ logger: Logger) -> @Sendable (AttemptEvent) -> Void {
    { event in
      var metadata: Logger.Metadata = [
        "http.method": "\(event.method.rawValue)",
        "http.route": "\(event.pathTemplate)",
        "http.host": "\(event.authority)",
        "attempt": "\(event.attempt)",
        "outcome": "\(event.outcome)",
        "decision": "\(event.decision)",
      ]
      if let delay = event.delay { metadata["delay"] = "\(delay)" }
      if let key = event.idempotencyKey { metadata["idempotency_key"] = "\(key)" }
      let succeeded: Bool
      if case .status(let code) = event.outcome, (200..<300).contains(code) {
        succeeded = true
      } else {
        succeeded = false
      }
      logger.log(level: succeeded ? .debug : .notice, "\(event)", metadata: metadata)
    }
  }
}

import Logging
import MeridianAPI
import MeridianMQTT
import MeridianStore

/// `GET /health`: 200 when the database answers within its health deadline and the fix writer moves (no upload has
/// waited for its commit longer than ``writerStallLimit``); else 503 `unavailable` with `Retry-After`, saying which
/// in words (the operator's log gets the cause). With an MQTT broker configured, its link is reported as `mqtt`: a
/// link that is down makes the status `degraded`, still 200 (the node serves HTTP; the client reconnects by itself).
struct HealthCheck: Sendable {
  let store: any MeridianStore
  let writer: FixWriter
  /// The longest an upload may wait for its commit before the node reports itself unhealthy.
  let writerStallLimit: Duration
  let logger: Logger
  /// The MQTT client, when the server has a broker.
  var mqtt: MQTTClient? = nil

  /// The status, or the 503 that says what does not answer.
  func check() async throws(APIError) -> HealthStatus {
    do {
      try await store.checkHealth()
    } catch {
      logger.warning("health check: the database does not answer", metadata: ["error": "\(error)"])
      throw .databaseUnavailable("The database does not answer; retry shortly.")
    }
    if let wait = writer.oldestWait(), wait > writerStallLimit {
      logger.warning("health check: the fix writer does not move", metadata: ["waiting": "\(wait)"])
      let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
      throw .databaseUnavailable(
        "Uploads have waited \(Int(seconds.rounded(.up))) s for the database to store them; retry shortly.")
    }
    guard let mqtt else { return HealthStatus(status: "ok", database: "ok") }
    switch mqtt.state {
    case .connected:
      return HealthStatus(status: "ok", database: "ok", mqtt: "ok")
    case .connecting(let lastError):
      return HealthStatus(status: "degraded", database: "ok", mqtt: "down: " + (lastError ?? "connecting"))
    case .stopped:
      return HealthStatus(status: "degraded", database: "ok", mqtt: "down: stopped")
    }
  }
}

extension APIError {
  /// 503 `unavailable` with `Retry-After: 2`: the database can't be reached or did not answer in time.
  static func databaseUnavailable(
    _ message: String = "The database is unavailable; nothing was stored. Retry in a few seconds."
  ) -> APIError {
    APIError(status: 503, code: .unavailable, message: message, retryAfterSeconds: 2)
  }
}

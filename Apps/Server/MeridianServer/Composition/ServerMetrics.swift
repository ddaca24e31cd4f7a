import Hummingbird
import MeridianAPI
import MeridianStore
import NIOCore
import Prometheus
import Synchronization

/// The server's Prometheus metrics, on a registry the server owns (no global bootstrap, so tests can run several
/// servers in one process). `GET /metrics` emits it in the text exposition format.
public struct ServerMetrics: Sendable {
  /// The registry `GET /metrics` emits.
  public let registry: PrometheusCollectorRegistry
  /// Fixes stored.
  let fixesAccepted: Counter
  /// Fixes received again (same device and timestamp) and not stored.
  let fixesDuplicate: Counter
  /// Requests answered from the idempotency store: client retries the server had already processed.
  let idempotentReplays: Counter
  /// Requests handed to one group commit.
  let commitRequests: ValueHistogram
  /// Live events published to channels.
  let liveEvents: Counter
  /// Commits whose live events were dropped because the fan-out fell too far behind.
  let liveCommitsDropped: Counter
  /// Open live (WebSocket) connections, sampled when `/metrics` is read.
  let liveConnections: Gauge
  /// Entries of the geofence queue waiting for evaluation (uploads), sampled when `/metrics` is read.
  let geofenceBacklog: Gauge
  /// How long the oldest waiting entry of the geofence queue has waited (0 when none waits), sampled when `/metrics`
  /// is read.
  let geofenceLag: Gauge
  /// Fixes the geofence monitor evaluated, each once, by the commit that stored its evaluation (one evaluated before,
  /// by another node or before a restart, is skipped and not counted); the fixes of people no fence concerns are
  /// counted as their node takes them from the queue (again if they are taken again).
  let geofenceFixesEvaluated: Counter
  /// Geofence events the monitor stored (arrivals, departures, dwells).
  let geofenceEvents: Counter
  /// Reads that may lag served by the streaming replica, and by the primary instead (the reader's own write not yet
  /// replayed, or the replica down), since the server started; sampled when `/metrics` is read, absent without one.
  let replicaReads: Gauge
  let replicaReadsOnPrimary: Gauge
  /// Each route's request counter and duration histogram, made on its first request (making them looks the name and
  /// labels up in the registry, which costs more than counting).
  private let requestMetrics = RequestMetricsCache()

  /// Metrics on `registry`.
  public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
    self.registry = registry
    fixesAccepted = registry.makeCounter(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "fixes_accepted", unitName: "total", helpText: "Fixes stored."))
    fixesDuplicate = registry.makeCounter(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "fixes_duplicate", unitName: "total",
        helpText: "Fixes already stored (same device and timestamp)."))
    idempotentReplays = registry.makeCounter(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "idempotent_replays", unitName: "total",
        helpText: "Requests answered again for a repeated Idempotency-Key (client retries seen)."))
    commitRequests = registry.makeValueHistogram(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "commit_requests", unitName: "count",
        helpText: "Requests stored by one group commit."),
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    liveEvents = registry.makeCounter(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "live_events", unitName: "total",
        helpText: "Live location events published to channels (each reaches every allowed subscriber)."))
    liveCommitsDropped = registry.makeCounter(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "live_commits_dropped", unitName: "total",
        helpText: "Commits whose live events were dropped because the fan-out fell behind (the fixes are stored)."))
    liveConnections = registry.makeGauge(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "live", unitName: "connections",
        helpText: "Open live (WebSocket) connections."))
    geofenceBacklog = registry.makeGauge(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "geofence_backlog", unitName: "entries",
        helpText: "Uploads stored and waiting for geofence evaluation (the store's queue, shared by every node)."))
    geofenceLag = registry.makeGauge(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "geofence_lag", unitName: "seconds",
        helpText: "How long the oldest upload waiting for geofence evaluation has waited (0 when none waits)."))
    geofenceFixesEvaluated = registry.makeCounter(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "geofence_fixes_evaluated", unitName: "total",
        helpText: "Fixes taken from the geofence queue and evaluated against the fences that concern their person."))
    geofenceEvents = registry.makeCounter(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "geofence_events", unitName: "total",
        helpText: "Geofence events (arrivals, departures, dwells) the server's evaluation stored."))
    replicaReads = registry.makeGauge(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "replica_reads", unitName: "total",
        helpText: "Reads that may lag served by the streaming replica (MERIDIAN_DATABASE_REPLICA_URL)."))
    replicaReadsOnPrimary = registry.makeGauge(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "replica_reads_on_primary", unitName: "total",
        helpText: "Reads that may lag served by the primary: the reader's write not yet replayed, or the replica down.")
    )
  }

  /// Samples where the reads that may lag went (``replicaReads``); nothing without a replica.
  func sampleReplicaReads(_ store: any WriteFencing) {
    guard let reads = store.laggingReads else { return }
    replicaReads.set(Double(reads.replica))
    replicaReadsOnPrimary.set(Double(reads.primary))
  }

  /// Samples the geofence queue's size and age into ``geofenceBacklog`` and ``geofenceLag``; a store that does not
  /// answer leaves them as they were.
  func sampleGeofenceQueue(_ queue: any GeofenceQueue, now: Int64) async {
    guard let backlog = try? await queue.geofenceQueueBacklog() else { return }
    geofenceBacklog.set(Double(backlog.entries))
    geofenceLag.set(backlog.oldestQueuedAt.map { Double(max(0, now - $0)) / 1000 } ?? 0)
  }

  /// Counts one answered request.
  func recordRequest(method: String, route: String, status: Int, duration: Duration) {
    let key = RequestMetricsCache.Key(method: method, route: route, status: status)
    let handles = requestMetrics.handles(for: key) { makeRequestMetrics(key) }
    handles.count.increment()
    handles.duration.record(duration)
  }

  private func makeRequestMetrics(_ key: RequestMetricsCache.Key) -> RequestMetricsCache.Handles {
    let (method, route, status) = (key.method, key.route, key.status)
    let count = registry.makeCounter(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "http_requests", unitName: "total", helpText: "HTTP requests answered."),
      labels: [("method", method), ("route", route), ("status", String(status))])
    let duration = registry.makeDurationHistogram(
      descriptor: MetricNameDescriptor(
        namespace: "meridian", metricName: "http_request_duration", unitName: "seconds",
        helpText: "Time to answer HTTP requests."),
      labels: [("method", method), ("route", route)],
      buckets: [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
      ])
    return RequestMetricsCache.Handles(count: count, duration: duration)
  }

  /// The exposition text.
  func exposition() -> ByteBuffer {
    ByteBuffer(bytes: registry.emitToBuffer())
  }
}

/// The request metrics already made, by method, route and status.
private final class RequestMetricsCache: Sendable {
  struct Key: Hashable, Sendable {
    let method: String
    let route: String
    let status: Int
  }
  struct Handles: Sendable {
    let count: Counter
    let duration: DurationHistogram
  }
  private let made = Mutex<[Key: Handles]>([:])

  /// The handles for `key`, made by `make` the first time.
  func handles(for key: Key, make: () -> Handles) -> Handles {
    if let handles = made.withLock({ $0[key] }) { return handles }
    let handles = make()  // the registry returns the same metric if another request made it meanwhile
    made.withLock { $0[key] = handles }
    return handles
  }
}

/// Records every request's route, status and duration (outside the error middleware, so errors count with their
/// envelope's status).
struct MetricsMiddleware: RouterMiddleware {
  typealias Context = MeridianRequestContext
  let metrics: ServerMetrics

  func handle(
    _ request: Request, context: Context, next: (Request, Context) async throws -> Response
  ) async throws -> Response {
    let start = ContinuousClock.now
    let response = try await next(request, context)
    metrics.recordRequest(
      method: request.method.rawValue, route: context.endpointPath ?? "unmatched", status: response.status.code,
      duration: ContinuousClock.now - start)
    return response
  }
}

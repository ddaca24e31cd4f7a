import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import ServiceLifecycle
import Synchronization

/// The group-commit writer: requests hand their fixes over and wait; the writer stores everything that queued up
/// since its last commit in one durable transaction and then answers every waiting request.
///
/// Commits are chained on the store's writer thread: the first request to find the writer idle starts a commit, and
/// each commit's completion answers its requests and starts the next one with whatever queued meanwhile. No task of
/// Swift concurrency's shared pool sits in that loop, so a commit never waits behind the requests it serves.
///
/// Run it as a service in the same `ServiceGroup` as the HTTP server, after it in the list, so that on SIGTERM the
/// server drains its in-flight requests first and the writer commits what they handed over before it stops.
public final class FixWriter: Service, Sendable {
  private struct Job: Sendable {
    let batch: FixInsertBatch
    let continuation: CheckedContinuation<FixReceipt, any Error>
    /// When the request handed it over.
    let since: ContinuousClock.Instant
  }

  /// The jobs waiting for a commit and whether one is running, behind a lock: a request appends without a task or
  /// an actor hop.
  private final class Queue: Sendable {
    private struct State {
      var jobs: [Job] = []
      var committing = false
      /// When the oldest job of the running commit was handed over.
      var committingSince: ContinuousClock.Instant?
      var closed = false
      var idleWaiters: [CheckedContinuation<Void, Never>] = []

      /// The next commit's jobs: the oldest `limit` of those queued.
      mutating func takeNext(_ limit: Int) -> [Job] {
        committingSince = jobs.first?.since
        guard jobs.count > limit else {
          defer { jobs.removeAll(keepingCapacity: true) }
          return jobs
        }
        defer { jobs.removeFirst(limit) }
        return Array(jobs.prefix(limit))
      }
    }

    private let state = Mutex(State())
    private let maxJobsPerCommit: Int

    init(maxJobsPerCommit: Int) { self.maxJobsPerCommit = max(1, maxJobsPerCommit) }

    /// What a request's hand-over led to.
    enum Admission {
      /// Refused: the writer has stopped.
      case refused
      /// Queued behind the running commit, which starts the next one.
      case queued
      /// The writer was idle: the caller starts the commit of these jobs.
      case commit([Job])
    }

    func append(_ job: Job) -> Admission {
      state.withLock { state in
        guard !state.closed else { return .refused }
        state.jobs.append(job)
        guard !state.committing else { return .queued }
        state.committing = true
        return .commit(state.takeNext(maxJobsPerCommit))
      }
    }

    /// After a commit: the next commit's jobs, or nil when none queued (the writer is idle again).
    func next() -> [Job]? {
      let (next, waiters): ([Job]?, [CheckedContinuation<Void, Never>]) = state.withLock { state in
        if !state.jobs.isEmpty { return (state.takeNext(maxJobsPerCommit), []) }
        state.committing = false
        state.committingSince = nil
        defer { state.idleWaiters.removeAll() }
        return (nil, state.idleWaiters)
      }
      for waiter in waiters { waiter.resume() }
      return next
    }

    /// When the oldest request not answered yet handed its job over (queued, or in the running commit).
    var oldestWaitingSince: ContinuousClock.Instant? {
      state.withLock { $0.committingSince ?? $0.jobs.first?.since }
    }

    /// Refuses new jobs; returns once the queued ones are committed.
    func close() async {
      await withCheckedContinuation { waiter in
        let idle = state.withLock { state in
          state.closed = true
          if state.committing { state.idleWaiters.append(waiter) }
          return !state.committing
        }
        if idle { waiter.resume() }
      }
    }
  }

  private let store: any MeridianStore
  private let metrics: ServerMetrics
  /// Fixes accepted over the last minute (the admin API's ingest rate).
  public let ingestRate = IngestRate()
  private let logger: Logger
  private let queue: Queue
  /// Each commit's newly stored batches with their receipts, in commit order, after the requests were answered;
  /// it ends after the writer's last commit. The live fan-out reads it (one reader); unread, it keeps only the
  /// newest ``commitBacklog`` commits, so a commit never waits for its readers (`meridian_live_commits_dropped_total`
  /// counts the commits it had to drop).
  public let commits: AsyncStream<CommittedFixes>
  private let commitsContinuation: AsyncStream<CommittedFixes>.Continuation
  /// Commits kept for a slow or absent reader of ``commits``.
  public static let commitBacklog = 4096

  /// A writer storing into `store`, at most `maxJobsPerCommit` requests per transaction.
  public init(store: any MeridianStore, metrics: ServerMetrics, logger: Logger, maxJobsPerCommit: Int = 512) {
    self.store = store
    self.metrics = metrics
    self.logger = logger
    queue = Queue(maxJobsPerCommit: maxJobsPerCommit)
    (commits, commitsContinuation) = AsyncStream.makeStream(
      of: CommittedFixes.self, bufferingPolicy: .bufferingNewest(Self.commitBacklog))
  }

  /// Stores `batch` and returns its receipt once the transaction holding it has committed.
  /// - Throws: ``APIError`` `unavailable` when the writer has stopped (shutdown); the database's error if the
  ///   commit failed (nothing of the batch was stored).
  public func submit(_ batch: FixInsertBatch) async throws -> FixReceipt {
    try await withCheckedThrowingContinuation { continuation in
      switch queue.append(Job(batch: batch, continuation: continuation, since: .now)) {
      case .queued: break
      case .commit(let jobs): commit(jobs)
      case .refused:
        continuation.resume(
          throwing: APIError(status: 503, code: .unavailable, message: "The server is shutting down; retry shortly."))
      }
    }
  }

  /// How long the oldest request handed over and not answered yet has waited (nil when none waits): a writer that
  /// moves answers within a commit or two, so `GET /health` reports a node whose writer waits longer as unhealthy.
  public func oldestWait(now: ContinuousClock.Instant = .now) -> Duration? {
    queue.oldestWaitingSince.map { now - $0 }
  }

  /// Commits until graceful shutdown (or cancellation), then refuses new batches, commits what is still queued and
  /// ends ``commits``.
  public func run() async throws {
    try? await gracefulShutdown()
    await queue.close()
    commitsContinuation.finish()
  }

  /// Stores `jobs` in one transaction; its completion answers them and commits the jobs queued meanwhile.
  private func commit(_ jobs: [Job]) {
    let now = Timestamp.milliseconds(Date())
    store.insertFixes(jobs.map(\.batch), now: now) { result in
      self.finish(jobs, result, now: now)
      if let next = self.queue.next() { self.commit(next) }
    }
  }

  /// Answers the requests of one commit and hands its new fixes to the live fan-out.
  private func finish(_ jobs: [Job], _ result: Result<[FixReceipt], any Error>, now: Int64) {
    let receipts: [FixReceipt]
    switch result {
    case .success(let value): receipts = value
    case .failure(let error):
      logger.error("Fix commit failed", metadata: ["error": "\(error)", "requests": "\(jobs.count)"])
      for job in jobs { job.continuation.resume(throwing: error) }
      return
    }
    metrics.commitRequests.record(Double(jobs.count))
    var stored = CommittedFixes(batches: [], receipts: [])
    for (job, receipt) in zip(jobs, receipts) {
      switch job.batch.idempotency?.resolution {
      case .conflict?:
        job.continuation.resume(
          throwing: APIError(
            status: 422, code: .idempotencyConflict,
            message: "This Idempotency-Key was already used for a different request; use a new key."))
      case .replayed?:
        metrics.idempotentReplays.increment()
        job.continuation.resume(returning: receipt)
      default:
        metrics.fixesAccepted.increment(by: Int64(receipt.accepted))
        metrics.fixesDuplicate.increment(by: Int64(receipt.duplicates))
        stored.batches.append(job.batch)
        stored.receipts.append(receipt)
        job.continuation.resume(returning: receipt)
      }
    }
    ingestRate.record(stored.receipts.reduce(0) { $0 + $1.accepted }, at: now)
    if !stored.batches.isEmpty, case .dropped = commitsContinuation.yield(stored) {
      metrics.liveCommitsDropped.increment()
    }
  }
}

/// One commit's newly stored batches (not replays or conflicts) and their receipts, in the same order.
public struct CommittedFixes: Sendable {
  /// The batches.
  public fileprivate(set) var batches: [FixInsertBatch]
  /// The receipts.
  public fileprivate(set) var receipts: [FixReceipt]
}

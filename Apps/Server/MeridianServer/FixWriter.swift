import DomainKit
import Foundation
import Logging
import MeridianAPI
import ServiceLifecycle

/// The group-commit writer: requests hand their fixes over and wait; the writer stores everything that queued up
/// since its last commit in one durable transaction and then answers every waiting request.
///
/// Run it as a service in the same `ServiceGroup` as the HTTP server, after it in the list, so that on SIGTERM the
/// server drains its in-flight requests first and the writer commits what they handed over before it stops.
public final class FixWriter: Service, Sendable {
  private struct Job: Sendable {
    let batch: FixInsertBatch
    let continuation: CheckedContinuation<FixReceipt, any Error>
  }

  /// The jobs handed over since the last commit, behind a lock: a request appends without a task or an actor hop.
  private final class Queue: @unchecked Sendable {
    private let lock = NSLock()
    private var jobs: [Job] = []
    private var closed = false

    func append(_ job: Job) -> Bool {
      lock.withLock {
        guard !closed else { return false }
        jobs.append(job)
        return true
      }
    }

    func takeAll() -> [Job] {
      lock.withLock {
        defer { jobs.removeAll(keepingCapacity: true) }
        return jobs
      }
    }

    func close() -> [Job] {
      lock.withLock {
        closed = true
        defer { jobs.removeAll() }
        return jobs
      }
    }
  }

  private let store: any MeridianStore
  private let metrics: ServerMetrics
  /// Fixes accepted over the last minute (the admin API's ingest rate).
  public let ingestRate = IngestRate()
  private let logger: Logger
  private let queue = Queue()
  private let signal: AsyncStream<Void>
  private let signalContinuation: AsyncStream<Void>.Continuation
  /// The largest number of requests committed together, to bound one transaction.
  private let maxJobsPerCommit: Int
  /// Each commit's newly stored batches with their receipts, in commit order, after the requests were answered;
  /// it ends after the writer's last commit. The live fan-out reads it (one reader); unread, it keeps only the
  /// newest ``commitBacklog`` commits, so a commit never waits for its readers (`meridian_live_commits_dropped_total`
  /// counts the commits it had to drop).
  public let commits: AsyncStream<CommittedFixes>
  private let commitsContinuation: AsyncStream<CommittedFixes>.Continuation
  /// Commits kept for a slow or absent reader of ``commits``.
  public static let commitBacklog = 4096

  /// A writer storing into `store`.
  public init(store: any MeridianStore, metrics: ServerMetrics, logger: Logger, maxJobsPerCommit: Int = 512) {
    self.store = store
    self.metrics = metrics
    self.logger = logger
    self.maxJobsPerCommit = maxJobsPerCommit
    (signal, signalContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    (commits, commitsContinuation) = AsyncStream.makeStream(
      of: CommittedFixes.self, bufferingPolicy: .bufferingNewest(Self.commitBacklog))
  }

  /// Stores `batch` and returns its receipt once the transaction holding it has committed.
  /// - Throws: ``APIError`` `unavailable` when the writer has stopped (shutdown); the database's error if the
  ///   commit failed (nothing of the batch was stored).
  public func submit(_ batch: FixInsertBatch) async throws -> FixReceipt {
    try await withCheckedThrowingContinuation { continuation in
      if queue.append(Job(batch: batch, continuation: continuation)) {
        signalContinuation.yield()
      } else {
        continuation.resume(
          throwing: APIError(status: 503, code: .unavailable, message: "The server is shutting down; retry shortly."))
      }
    }
  }

  /// Commits until graceful shutdown, then commits what is still queued, refuses new batches and ends ``commits``.
  public func run() async throws {
    await withGracefulShutdownHandler {
      for await _ in signal {
        await commit(queue.takeAll())
      }
    } onGracefulShutdown: {
      self.signalContinuation.finish()
    }
    await commit(queue.close())
    commitsContinuation.finish()
  }

  private func commit(_ jobs: [Job]) async {
    var start = jobs.startIndex
    while start < jobs.endIndex {
      let end = min(start + maxJobsPerCommit, jobs.endIndex)
      let slice = jobs[start..<end]
      do {
        let now = Timestamp.milliseconds(Date())
        let receipts = try await store.insertFixes(slice.map(\.batch), now: now)
        metrics.commitRequests.record(Double(slice.count))
        var stored: [(batch: FixInsertBatch, receipt: FixReceipt)] = []
        for (job, receipt) in zip(slice, receipts) {
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
            stored.append((job.batch, receipt))
            job.continuation.resume(returning: receipt)
          }
        }
        ingestRate.record(stored.reduce(0) { $0 + $1.receipt.accepted }, at: now)
        if !stored.isEmpty,
          case .dropped = commitsContinuation.yield(
            CommittedFixes(batches: stored.map(\.batch), receipts: stored.map(\.receipt)))
        {
          metrics.liveCommitsDropped.increment()
        }
      } catch {
        logger.error("Fix commit failed", metadata: ["error": "\(error)", "requests": "\(slice.count)"])
        for job in slice { job.continuation.resume(throwing: error) }
      }
      start = end
    }
  }
}

/// One commit's newly stored batches (not replays or conflicts) and their receipts, in the same order.
public struct CommittedFixes: Sendable {
  /// The batches.
  public let batches: [FixInsertBatch]
  /// Their receipts.
  public let receipts: [FixReceipt]
}

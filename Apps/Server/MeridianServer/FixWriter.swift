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

  private actor Queue {
    var jobs: [Job] = []
    var closed = false

    func append(_ job: Job) -> Bool {
      guard !closed else { return false }
      jobs.append(job)
      return true
    }

    func takeAll() -> [Job] {
      defer { jobs.removeAll(keepingCapacity: true) }
      return jobs
    }

    func close() -> [Job] {
      closed = true
      return takeAll()
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
  /// Called with every commit's batches and receipts, in commit order, off the commit path.
  private let onCommit: (@Sendable ([FixInsertBatch], [FixReceipt]) async -> Void)?
  private let committed: AsyncStream<([FixInsertBatch], [FixReceipt])>
  private let committedContinuation: AsyncStream<([FixInsertBatch], [FixReceipt])>.Continuation

  /// A writer storing into `store`.
  ///
  /// - Parameter onCommit: receives each commit's batches and receipts after the requests were answered (the live
  ///   fan-out), in commit order, on a task of its own so that it never delays a commit.
  public init(
    store: any MeridianStore, metrics: ServerMetrics, logger: Logger, maxJobsPerCommit: Int = 512,
    onCommit: (@Sendable ([FixInsertBatch], [FixReceipt]) async -> Void)? = nil
  ) {
    self.store = store
    self.metrics = metrics
    self.logger = logger
    self.maxJobsPerCommit = maxJobsPerCommit
    self.onCommit = onCommit
    (signal, signalContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    (committed, committedContinuation) = AsyncStream.makeStream(of: ([FixInsertBatch], [FixReceipt]).self)
  }

  /// Stores `batch` and returns its receipt once the transaction holding it has committed.
  /// - Throws: ``APIError`` `unavailable` when the writer has stopped (shutdown); the database's error if the
  ///   commit failed (nothing of the batch was stored).
  public func submit(_ batch: FixInsertBatch) async throws -> FixReceipt {
    try await withCheckedThrowingContinuation { continuation in
      Task {
        if await queue.append(Job(batch: batch, continuation: continuation)) {
          signalContinuation.yield()
        } else {
          continuation.resume(
            throwing: APIError(status: 503, code: .unavailable, message: "The server is shutting down; retry shortly."))
        }
      }
    }
  }

  /// Commits until graceful shutdown, then commits what is still queued and refuses new batches.
  public func run() async throws {
    let onCommit = self.onCommit
    let committed = self.committed
    let fanOut = Task {
      for await (batches, receipts) in committed { await onCommit?(batches, receipts) }
    }
    await withGracefulShutdownHandler {
      for await _ in signal {
        await commit(await queue.takeAll())
      }
    } onGracefulShutdown: {
      self.signalContinuation.finish()
    }
    await commit(await queue.close())
    committedContinuation.finish()
    await fanOut.value
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
        if onCommit != nil { committedContinuation.yield((stored.map(\.batch), stored.map(\.receipt))) }
      } catch {
        logger.error("Fix commit failed", metadata: ["error": "\(error)", "requests": "\(slice.count)"])
        for job in slice { job.continuation.resume(throwing: error) }
      }
      start = end
    }
  }
}

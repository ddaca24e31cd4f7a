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
/// Up to the store's ``FixStore/fixCommitsInFlight`` commits run at once (1 on SQLite, a small pool on PostgreSQL),
/// each its own transaction. Commits are chained on the store's writer thread: a request that finds a commit slot
/// free starts a commit, and each commit's completion answers its requests and starts the next one in its slot with
/// whatever queued meanwhile. No task of Swift concurrency's shared pool sits in that loop, so a commit never waits
/// behind the requests it serves. Requests of one commit are stored together; two requests running at once may be
/// committed in either order (a store with a shared live log numbers its entries in commit order).
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
      /// The running commits, by number, each with when its oldest job was handed over.
      var running: [Int: ContinuousClock.Instant] = [:]
      var nextNumber = 0
      var closed = false
      var idleWaiters: [CheckedContinuation<Void, Never>] = []

      /// Starts a commit of the oldest jobs queued: at most `limit`, and as many as ``GroupCommitSize`` lets one
      /// commit take.
      mutating func start(_ limit: Int, maximumFixes: Int) -> Commit {
        defer { nextNumber += 1 }
        running[nextNumber] = jobs.first?.since
        let taken = GroupCommitSize.taken(from: jobs, maximumCount: limit, maximumFixes: maximumFixes) {
          $0.batch.fixes.count
        }
        guard jobs.count > taken else {
          defer { jobs.removeAll(keepingCapacity: true) }
          return Commit(number: nextNumber, jobs: jobs)
        }
        defer { jobs.removeFirst(taken) }
        return Commit(number: nextNumber, jobs: Array(jobs.prefix(taken)))
      }
    }

    private let state = Mutex(State())
    private let maxJobsPerCommit: Int
    private let maxFixesPerCommit: Int
    private let maxCommitsInFlight: Int

    init(maxJobsPerCommit: Int, maxFixesPerCommit: Int, maxCommitsInFlight: Int) {
      self.maxJobsPerCommit = max(1, maxJobsPerCommit)
      self.maxFixesPerCommit = max(1, maxFixesPerCommit)
      self.maxCommitsInFlight = max(1, maxCommitsInFlight)
    }

    /// How many commits run now.
    var commitsInFlight: Int { state.withLock { $0.running.count } }

    /// What a request's hand-over led to.
    enum Admission {
      /// Refused: the writer has stopped.
      case refused
      /// Queued behind the running commits, one of which starts the next one.
      case queued
      /// A commit slot was free: the caller starts this commit.
      case commit(Commit)
    }

    func append(_ job: Job) -> Admission {
      state.withLock { state in
        guard !state.closed else { return .refused }
        state.jobs.append(job)
        guard state.running.count < maxCommitsInFlight else { return .queued }
        return .commit(state.start(maxJobsPerCommit, maximumFixes: maxFixesPerCommit))
      }
    }

    /// After the commit `number`: the next commit in its slot, or nil when none queued (the slot is free again).
    func next(after number: Int) -> Commit? {
      let (next, waiters): (Commit?, [CheckedContinuation<Void, Never>]) = state.withLock { state in
        state.running[number] = nil
        if !state.jobs.isEmpty { return (state.start(maxJobsPerCommit, maximumFixes: maxFixesPerCommit), []) }
        guard state.running.isEmpty else { return (nil, []) }
        defer { state.idleWaiters.removeAll() }
        return (nil, state.idleWaiters)
      }
      for waiter in waiters { waiter.resume() }
      return next
    }

    /// When the oldest request not answered yet handed its job over (queued, or in a running commit).
    var oldestWaitingSince: ContinuousClock.Instant? {
      state.withLock { state in
        (state.running.values + state.jobs.prefix(1).map(\.since)).min()
      }
    }

    /// Refuses new jobs; returns once the queued ones are committed.
    func close() async {
      await withCheckedContinuation { waiter in
        let idle = state.withLock { state in
          state.closed = true
          if !state.running.isEmpty { state.idleWaiters.append(waiter) }
          return state.running.isEmpty
        }
        if idle { waiter.resume() }
      }
    }
  }

  /// One commit's jobs and its number among the running ones.
  private struct Commit: Sendable {
    let number: Int
    let jobs: [Job]
  }

  private let store: any MeridianStore
  private let metrics: ServerMetrics
  /// Fixes accepted over the last minute (the admin API's ingest rate).
  public let ingestRate = IngestRate()
  private let logger: Logger
  /// The time of each commit (the fixes' receipt, their geofence queue entry), UTC milliseconds.
  private let now: @Sendable () -> Int64
  private let queue: Queue
  /// Each commit's newly stored batches with their receipts, in commit order, after the requests were answered;
  /// it ends after the writer's last commit. The live fan-out reads it (one reader). At most ``commitBacklog``
  /// commits wait unread: the next commit starts only once the reader took one, so a slow reader holds the uploads
  /// back (`GET /health` reports the writer's wait) and never loses a commit. A reader that stops reading (its task
  /// cancelled, at a forced shutdown) no longer holds the writer: what it would have read is dropped and counted
  /// (`meridian_live_commits_dropped_total`).
  public let commits: AsyncStream<CommittedFixes>
  private let channel: CommitChannel
  /// Commits waiting for the reader of ``commits`` before the writer waits for it.
  public static let commitBacklog = 4096

  /// A writer storing into `store`, at most `maxJobsPerCommit` requests and `maxFixesPerCommit` fixes per
  /// transaction (one larger request alone: ``GroupCommitSize``), `commitsInFlight`
  /// transactions at once (the store's ``FixStore/fixCommitsInFlight`` when nil) and `commitBacklog` commits unread in
  /// ``commits``, stamping each commit with the time `now` reads.
  public init(
    store: any MeridianStore, metrics: ServerMetrics, logger: Logger, maxJobsPerCommit: Int = 512,
    maxFixesPerCommit: Int = GroupCommitSize.maximumFixes, commitsInFlight: Int? = nil,
    commitBacklog: Int = FixWriter.commitBacklog,
    now: @escaping @Sendable () -> Int64 = Timestamp.systemClock
  ) {
    self.store = store
    self.now = now
    self.metrics = metrics
    self.logger = logger
    queue = Queue(
      maxJobsPerCommit: maxJobsPerCommit, maxFixesPerCommit: maxFixesPerCommit,
      maxCommitsInFlight: commitsInFlight ?? store.fixCommitsInFlight)
    let channel = CommitChannel(capacity: commitBacklog)
    self.channel = channel
    commits = AsyncStream(unfolding: { await channel.next() })
  }

  /// Stores `batch` and returns its receipt once the transaction holding it has committed.
  /// - Throws: ``APIError`` `unavailable` when the writer has stopped (shutdown); the database's error if the
  ///   commit failed (nothing of the batch was stored).
  public func submit(_ batch: FixInsertBatch) async throws -> FixReceipt {
    try await withCheckedThrowingContinuation { continuation in
      switch queue.append(Job(batch: batch, continuation: continuation, since: .now)) {
      case .queued: break
      case .commit(let next): commit(next)
      case .refused:
        continuation.resume(
          throwing: APIError(status: 503, code: .unavailable, message: "The server is shutting down; retry shortly."))
      }
    }
  }

  /// How many commits run now (at most the store's ``FixStore/fixCommitsInFlight``).
  public var commitsInFlight: Int { queue.commitsInFlight }

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
    channel.finish()
  }

  /// Stores the commit's jobs in one transaction; its completion answers them, hands the new fixes to the reader of
  /// ``commits`` and — once there is room for them — commits the jobs queued meanwhile in the same slot.
  private func commit(_ commit: Commit) {
    let now = self.now()
    let jobs = commit.jobs
    store.insertFixes(jobs.map(\.batch), now: now) { result in
      let proceed: @Sendable () -> Void = {
        if let next = self.queue.next(after: commit.number) { self.commit(next) }
      }
      guard let stored = self.finish(jobs, result, now: now), !stored.batches.isEmpty else { return proceed() }
      if !self.channel.send(stored, then: proceed) { self.metrics.liveCommitsDropped.increment() }
    }
  }

  /// Answers the requests of one commit; returns its newly stored batches (nil when the commit failed).
  private func finish(_ jobs: [Job], _ result: Result<[FixReceipt], any Error>, now: Int64) -> CommittedFixes? {
    let receipts: [FixReceipt]
    switch result {
    case .success(let value): receipts = value
    case .failure(let error):
      logger.error("Fix commit failed", metadata: ["error": "\(error)", "requests": "\(jobs.count)"])
      for job in jobs { job.continuation.resume(throwing: error) }
      return nil
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
    return stored
  }
}

/// The writer's commits on their way to their one reader, at most `capacity` unread: a commit beyond that waits, and
/// the writer's slot with it, until the reader takes one (with several commits in flight, each slot waits its turn). A reader whose task is cancelled stops holding the writer: later
/// commits are dropped (``send(_:then:)`` answers false).
final class CommitChannel: Sendable {
  private struct State {
    var unread: [CommittedFixes] = []
    var reader: CheckedContinuation<CommittedFixes?, Never>?
    /// The writer slots' continuations waiting for room, oldest first: one per commit beyond the capacity.
    var held: [@Sendable () -> Void] = []
    var finished = false
    var readerGone = false
  }

  private let state = Mutex(State())
  private let capacity: Int

  init(capacity: Int) { self.capacity = max(1, capacity) }

  /// Hands `commit` to the reader and runs `then` at once when there is room for it, else once the reader took
  /// one; false when the reader is gone (dropped, `then` run at once).
  func send(_ commit: CommittedFixes, then proceed: @escaping @Sendable () -> Void) -> Bool {
    enum Action {
      case hand(CheckedContinuation<CommittedFixes?, Never>)
      case proceed
      case hold
      case drop
    }
    let action = state.withLock { state -> Action in
      if state.readerGone { return .drop }
      if let reader = state.reader {
        state.reader = nil
        return .hand(reader)
      }
      state.unread.append(commit)
      guard state.unread.count > capacity else { return .proceed }
      state.held.append(proceed)
      return .hold
    }
    switch action {
    case .hand(let reader):
      reader.resume(returning: commit)
      proceed()
    case .proceed: proceed()
    case .hold: break
    case .drop:
      proceed()
      return false
    }
    return true
  }

  /// Ends the commits: the reader gets nil once it has read the rest.
  func finish() {
    let reader = state.withLock { state in
      state.finished = true
      defer { state.reader = nil }
      return state.reader
    }
    reader?.resume(returning: nil)
  }

  /// The oldest unread commit, waiting for one; nil once finished and read, or when the calling task is cancelled
  /// (the reader is gone from then on).
  func next() async -> CommittedFixes? {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<CommittedFixes?, Never>) in
        let (taken, released): (CommittedFixes??, (@Sendable () -> Void)?) = state.withLock { state in
          if !state.unread.isEmpty {
            // Each held slot's commit is one beyond the capacity: a read makes room for the oldest.
            return (state.unread.removeFirst(), state.held.isEmpty ? nil : state.held.removeFirst())
          }
          if state.finished || state.readerGone || Task.isCancelled { return (.some(nil), nil) }
          state.reader = continuation
          return (nil, nil)
        }
        if let taken { continuation.resume(returning: taken) }
        released?()
      }
    } onCancel: {
      let (reader, released) = state.withLock { state in
        state.readerGone = true
        defer {
          state.reader = nil
          state.held = []
        }
        return (state.reader, state.held)
      }
      reader?.resume(returning: nil)
      for proceed in released { proceed() }
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

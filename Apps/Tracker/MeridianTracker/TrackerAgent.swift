import DomainKit
import Foundation
import Logging
import MeridianTrackerStore
import NetworkingKit
import Synchronization

/// The device agent: takes fixes from a source, records every one locally, queues those the reporting policy sends,
/// and uploads the queue in the background until the source ends and the queue is empty.
///
/// When the server can't be reached, fixes keep being recorded and queued; the uploader retries with exponential
/// backoff (1 s doubling to 30 s) and catches up when the server is back. Once the source has ended, it gives up
/// after ``giveUpAfter`` without progress (the fixes stay queued for the next run).
public struct TrackerAgent: Sendable {
  /// The local history and outbox.
  public let store: TrackerStore
  /// The uploader.
  public let uploader: Uploader
  /// The reporting policy's starting state.
  public let policy: ReportingPolicy
  /// Where progress goes.
  public let logger: Logger
  /// How long uploads may keep failing once the source has ended before ``run(_:track:onFix:)`` gives up with
  /// ``TrackerError/uploadFailed(_:)``; nil retries until cancelled.
  public var giveUpAfter: Duration?

  /// An agent.
  public init(
    store: TrackerStore, uploader: Uploader, policy: ReportingPolicy, logger: Logger, giveUpAfter: Duration? = nil
  ) {
    self.store = store
    self.uploader = uploader
    self.policy = policy
    self.logger = logger
    self.giveUpAfter = giveUpAfter
  }

  /// The earliest time the server accepts: 2000-01-01T00:00:00Z.
  public static let earliestAccepted: Int64 = 946_684_800_000
  /// How far ahead of its clock the server accepts a fix, milliseconds.
  public static let futureAccepted: Int64 = 5 * 60_000

  /// What a run did.
  public struct Summary: Sendable, Hashable {
    /// Fixes from the source.
    public var received = 0
    /// Fixes newly stored in the local history.
    public var recorded = 0
    /// Fixes the local history held already (a track replayed before); nothing changed for them.
    public var duplicates = 0
    /// Of the recorded fixes, those queued for upload (the policy sent them).
    public var queued = 0
    /// Fixes the server acknowledged during the run.
    public var uploaded = 0
    /// Of those, fixes sent over the live socket.
    public var uploadedOverSocket = 0
    /// The run was cancelled (Ctrl-C) before the source ended or the queue was empty.
    public var interrupted = false
  }

  /// What happened to one fix.
  public enum Outcome: Sendable, Hashable {
    /// Recorded and queued for upload.
    case queued
    /// Recorded but not sent, for this reason (the reporting policy's, or a time the server refuses).
    case kept(String)
    /// The local history holds a fix with this time already; nothing changed.
    case duplicate
  }

  /// Runs until `fixes` ends and everything queued is uploaded, or until cancelled (the summary then says
  /// `interrupted`; queued fixes stay queued for the next run).
  ///
  /// - Parameters:
  ///   - track: for a whole track being replayed, whether a fix is one of its fixes as placed
  ///     (``TrackReplay/contains(_:)``). The policy then judges the track on its own: it resumes from the last sent
  ///     fix only when that fix is one of the track's (an interrupted replay of it), so that a track placed over the
  ///     times of another one is still sent whole. Without it the policy resumes from the last sent fix, as after a
  ///     restart.
  ///   - onFix: called after each fix is recorded, with what happened to it.
  /// - Throws: the source's error; ``TrackerError/tokenRejected``, ``TrackerError/uploadRefused(_:)``, or
  ///   ``TrackerError/uploadFailed(_:)`` after ``giveUpAfter``. Uploading stops first in every case.
  public func run(
    _ fixes: AsyncThrowingStream<LocationFix, any Error>, track: (@Sendable (LocationFix) -> Bool)? = nil,
    onFix: @escaping @Sendable (LocationFix, Outcome) -> Void = { _, _ in }
  ) async throws -> Summary {
    let wake = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    let sourceEnded = SourceEnd()
    var policy = self.policy
    if policy.lastSent == nil, let text = try await store.value(TrackerStore.lastSentKey),
      let last = try? JSONDecoder().decode(LocationFix.self, from: Data(text.utf8)),
      track?(last) ?? true
    {
      policy = ReportingPolicy(
        appState: policy.appState, profile: policy.profile, minimumInterval: policy.minimumInterval, lastSent: last)
    }
    enum Part: Sendable {
      case source(Summary)
      case uploads(total: Int, overSocket: Int)
    }
    var summary = Summary()
    // The agent's state for `status` says "stopped" however the run ends; saved also when cancelled (the database
    // refuses work of a cancelled task).
    let store = self.store
    func stopped() async throws {
      let saving = Task {
        try await ConnectionReport(state: .stopped, since: Timestamp.milliseconds(Date())).save(to: store)
      }
      try await saving.result.get()
    }
    do {
      try await withThrowingTaskGroup(of: Part.self) { group in
        group.addTask { [policy] in
          defer {
            sourceEnded.mark()
            wake.continuation.finish()
          }
          return .source(try await record(fixes, policy: policy, wake: wake.continuation, onFix: onFix))
        }
        group.addTask {
          let totals = try await uploadLoop(wake: wake.stream, sourceEnded: sourceEnded)
          return .uploads(total: totals.total, overSocket: totals.overSocket)
        }
        // The first failure of either part cancels the other and is rethrown.
        for try await part in group {
          switch part {
          case .source(let recorded):
            let uploaded = summary.uploaded
            let overSocket = summary.uploadedOverSocket
            summary = recorded
            (summary.uploaded, summary.uploadedOverSocket) = (uploaded, overSocket)
          case .uploads(let total, let overSocket):
            (summary.uploaded, summary.uploadedOverSocket) = (total, overSocket)
          }
        }
      }
    } catch {
      try? await stopped()
      throw error
    }
    summary.interrupted = Task.isCancelled
    try await stopped()
    return summary
  }

  /// Records every fix of `fixes` (until it ends or the task is cancelled), queueing those `policy` sends.
  private func record(
    _ fixes: AsyncThrowingStream<LocationFix, any Error>, policy: ReportingPolicy,
    wake: AsyncStream<Void>.Continuation, onFix: @Sendable (LocationFix, Outcome) -> Void
  ) async throws -> Summary {
    var policy = policy
    var summary = Summary()
    do {
      try await record(fixes, policy: &policy, into: &summary, wake: wake, onFix: onFix)
    } catch {
      // Cancelled (Ctrl-C): what was recorded stays recorded and queued.
      if Task.isCancelled { return summary }
      throw error
    }
    return summary
  }

  private func record(
    _ fixes: AsyncThrowingStream<LocationFix, any Error>, policy: inout ReportingPolicy, into summary: inout Summary,
    wake: AsyncStream<Void>.Continuation, onFix: @Sendable (LocationFix, Outcome) -> Void
  ) async throws {
    for try await fix in fixes {
      summary.received += 1
      let now = Timestamp.milliseconds(Date())
      var refusal: String?
      if fix.timestamp < Self.earliestAccepted {
        refusal = "dated before 2000-01-01, which the server refuses"
      } else if fix.timestamp > now + Self.futureAccepted {
        refusal = "dated more than 5 minutes ahead of this device's clock, which the server refuses"
      }
      let decision = refusal == nil ? policy.evaluate(fix) : .send
      let outcome: Outcome
      switch try await store.record(fix, send: refusal == nil && decision == .send, now: now) {
      case .duplicate:
        summary.duplicates += 1
        outcome = .duplicate
      case .stored(let queued):
        summary.recorded += 1
        if queued {
          _ = policy.decide(fix)
          summary.queued += 1
          wake.yield()
          outcome = .queued
        } else if let refusal {
          outcome = .kept(refusal)
        } else if case .skip(let reason) = decision {
          outcome = .kept(reason.description)
        } else {
          outcome = .kept("not sent")
        }
      }
      onFix(fix, outcome)
    }
  }

  /// When the source ended, shared between the recording and the uploading parts.
  final class SourceEnd: Sendable {
    private let instant = Mutex<ContinuousClock.Instant?>(nil)
    func mark() { instant.withLock { $0 = $0 ?? .now } }
    var value: ContinuousClock.Instant? { instant.withLock { $0 } }
  }

  /// Drains the outbox whenever woken, and once more after the wake-ups end; retries failures with backoff, and gives
  /// up ``giveUpAfter`` after the later of the source's end and the last progress.
  private func uploadLoop(wake: AsyncStream<Void>, sourceEnded: SourceEnd) async throws -> (
    total: Int, overSocket: Int
  ) {
    var uploaded = 0
    var overSocket = 0
    var failures = 0
    var iterator = wake.makeAsyncIterator()
    var finished = false
    var lastProgress = ContinuousClock.now
    var reported: ConnectionReport.State?
    /// Keeps the connection's state in the store for `status` (written when it changes) and logs the change.
    func report(_ state: ConnectionReport.State, detail: String? = nil) async {
      guard state != reported else { return }
      reported = state
      try? await ConnectionReport(state: state, since: Timestamp.milliseconds(Date()), detail: detail).save(to: store)
      switch state {
      case .live: logger.info("uploading over the live socket")
      case .http: logger.info("uploading over HTTP")
      case .offline, .stopped: break
      }
    }
    while true {
      if !finished, failures == 0 {
        finished = await iterator.next() == nil
      }
      if Task.isCancelled { return (uploaded, overSocket) }
      var progress = Uploader.Progress()
      var failure: (any Error)?
      do {
        try await uploader.drain(into: &progress)
      } catch {
        failure = error
      }
      // What was acknowledged counts, also before a failure.
      uploaded += progress.acknowledged
      overSocket += progress.overSocket
      if progress.acknowledged > 0 {
        lastProgress = .now
        logger.debug("uploaded", metadata: ["fixes": "\(progress.acknowledged)", "total": "\(uploaded)"])
      }
      guard let failure else {
        await report(await uploader.live?.isConnected == true ? .live : .http)
        failures = 0
        if finished { return (uploaded, overSocket) }
        continue
      }
      if let error = failure as? TrackerError { throw error }
      if Task.isCancelled || failure is CancellationError { return (uploaded, overSocket) }
      // A link that fails now and then but gets batches through is retried soon; only failing outright backs off.
      failures = progress.acknowledged > 0 ? 1 : failures + 1
      await report(.offline, detail: "\(failure)")
      var delay = Duration.seconds(min(30.0, pow(2, Double(min(failures - 1, 5)))))
      if let wait = (failure as? NetworkingError)?.retryAfter { delay = max(delay, wait) }
      if let giveUpAfter, let ended = sourceEnded.value {
        let deadline = max(ended, lastProgress) + giveUpAfter
        if deadline <= .now { throw TrackerError.uploadFailed(Self.describe(failure)) }
        delay = min(delay, deadline - .now)
      }
      logger.warning(
        "upload failed; fixes stay queued",
        metadata: ["error": "\(failure)", "retry_in_s": "\(delay.components.seconds)"])
      // The wait ends early when the source ends, so that the give-up time counts from then.
      let endedBefore = sourceEnded.value != nil
      let until = ContinuousClock.now + delay
      do {
        while ContinuousClock.now < until, endedBefore || sourceEnded.value == nil || giveUpAfter == nil {
          try await Task.sleep(for: min(.milliseconds(100), until - .now))
        }
      } catch {
        return (uploaded, overSocket)
      }
    }
  }

  /// An upload failure as a short phrase.
  static func describe(_ error: any Error) -> String {
    guard let error = error as? NetworkingError else { return "\(error)" }
    if let transport = error.transportError {
      return transport.isUnreachable
        ? "the server can't be reached (\(transport))" : "the connection failed (\(transport))"
    }
    if let server = error.serverError { return "the server answered \(server)" }
    return "\(error)"
  }
}

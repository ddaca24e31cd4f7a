import DomainKit
import Foundation
import Logging
import MeridianStoreSQLite
import NetworkingKit

/// The device agent: takes fixes from a source, records every one locally, queues those the reporting policy sends,
/// and uploads the queue in the background until the source ends and the queue is empty.
///
/// When the server can't be reached, fixes keep being recorded and queued; the uploader retries with exponential
/// backoff (1 s doubling to 30 s) and catches up when the server is back.
public struct TrackerAgent: Sendable {
  /// The local history and outbox.
  public let store: TrackerStore
  /// The uploader.
  public let uploader: Uploader
  /// The reporting policy's starting state.
  public let policy: ReportingPolicy
  /// Where progress goes.
  public let logger: Logger

  /// An agent.
  public init(store: TrackerStore, uploader: Uploader, policy: ReportingPolicy, logger: Logger) {
    self.store = store
    self.uploader = uploader
    self.policy = policy
    self.logger = logger
  }

  /// What a run did.
  public struct Summary: Sendable, Hashable {
    /// Fixes from the source.
    public var received = 0
    /// Fixes newly stored in the local history.
    public var recorded = 0
    /// Of those, fixes queued for upload (the policy sent them).
    public var queued = 0
    /// Fixes the server acknowledged during the run.
    public var uploaded = 0
    /// Of those, fixes sent over the live socket.
    public var uploadedOverSocket = 0
  }

  /// Runs until `fixes` ends and everything queued is uploaded (or until cancelled: queued fixes stay queued).
  ///
  /// - Parameter onFix: called after each fix is recorded, with the policy's decision.
  public func run(
    _ fixes: AsyncThrowingStream<LocationFix, any Error>,
    onFix: @escaping @Sendable (LocationFix, ReportingDecision) -> Void = { _, _ in }
  ) async throws -> Summary {
    let wake = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    let uploads = Task { try await uploadLoop(wake: wake.stream) }
    var summary = Summary()
    var policy = self.policy
    if policy.lastSent == nil, let last = try await store.value(TrackerStore.lastSentKey) {
      policy = ReportingPolicy(
        appState: policy.appState, profile: policy.profile, minimumInterval: policy.minimumInterval,
        lastSent: try? JSONDecoder().decode(LocationFix.self, from: Data(last.utf8)))
    }
    do {
      for try await fix in fixes {
        summary.received += 1
        let decision = policy.decide(fix)
        let send = decision == .send
        if case .stored(let queued) = try await store.record(fix, send: send, now: Timestamp.milliseconds(Date())) {
          summary.recorded += 1
          if queued {
            summary.queued += 1
            wake.continuation.yield()
          }
        }
        onFix(fix, decision)
      }
    } catch {
      uploads.cancel()
      throw error
    }
    wake.continuation.finish()
    (summary.uploaded, summary.uploadedOverSocket) = try await uploads.value
    try await ConnectionReport(state: .stopped, since: Timestamp.milliseconds(Date())).save(to: store)
    return summary
  }

  /// Drains the outbox whenever woken, and once more after the wake-ups end; retries failures with backoff.
  private func uploadLoop(wake: AsyncStream<Void>) async throws -> (total: Int, overSocket: Int) {
    var uploaded = 0
    var overSocket = 0
    var failures = 0
    var iterator = wake.makeAsyncIterator()
    var finished = false
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
      do {
        let progress = try await uploader.drain()
        uploaded += progress.acknowledged
        overSocket += progress.overSocket
        if progress.acknowledged > 0 {
          logger.debug("uploaded", metadata: ["fixes": "\(progress.acknowledged)", "total": "\(uploaded)"])
        }
        await report(await uploader.live?.isConnected == true ? .live : .http)
        failures = 0
        if finished { return (uploaded, overSocket) }
      } catch let error as TrackerError {
        throw error
      } catch is CancellationError {
        return (uploaded, overSocket)
      } catch {
        failures += 1
        await report(.offline, detail: "\(error)")
        let delay = min(30.0, pow(2, Double(min(failures - 1, 5))))
        logger.warning(
          "upload failed; fixes stay queued", metadata: ["error": "\(error)", "retry_in_s": "\(Int(delay))"])
        try await Task.sleep(for: .seconds(delay))
      }
    }
  }
}

import Logging
import MeridianStore
import ServiceLifecycle

/// Deletes, every ``PollSettings/blobSweepInterval``, the stored images nothing refers to that were last uploaded
/// at least the grace period ago (never when the interval is 0) (``BlobStore/sweepUnreferenced(in:now:gracePeriod:dryRun:pageSize:)``): uploads
/// never attached, and releases a newer upload of the same bytes kept for a while. The first sweep runs one interval
/// after start. Nodes sharing a database may sweep at the same time: every deletion re-checks its blob.
struct BlobSweepService: Service {
  let blobs: any BlobStore
  let store: any PollStore
  /// Milliseconds between sweeps.
  let interval: Int64
  let gracePeriod: Int64
  let now: @Sendable () -> Int64
  let logger: Logger

  func run() async throws {
    guard interval > 0 else {
      try? await gracefulShutdown()
      return
    }
    await cancelWhenGracefulShutdown {
      while !Task.isCancelled {
        do {
          try await Task.sleep(for: .milliseconds(interval))
        } catch {
          return
        }
        await sweep()
      }
    }
    try? await gracefulShutdown()
  }

  /// One sweep, logged; a failure is logged and the next interval tries again.
  func sweep() async {
    do {
      let result = try await blobs.sweepUnreferenced(in: store, now: now(), gracePeriod: gracePeriod)
      logger.info(
        "blob sweep", metadata: ["examined": "\(result.examined)", "deleted": "\(result.unreferenced.count)"])
    } catch is CancellationError {
      return
    } catch {
      logger.warning("blob sweep failed; trying again at the next interval", metadata: ["error": "\(error)"])
    }
  }
}

import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import NetworkingKit

/// `POST /v1/history/imports` and its progress: the upload is answered `202` with a job as soon as its body is
/// spooled, and the import (``HistoryImport/importFile(_:user:progress:)``: checked, then stored in batches) goes on
/// in the background, writing the job's state to the store at least every second — so any node answers
/// `GET /v1/history/imports/{id}`, and a job whose node stopped is seen as ``HistoryImportJob/State/interrupted``
/// once it has not reported for ``staleAfter``.
struct HistoryImportJobs: Sendable {
  let importer: HistoryImport
  var store: any MeridianStore { importer.environment.store }
  /// A running job that has not reported for this long (ms) is interrupted: its node stopped.
  static let staleAfter: Int64 = 60_000
  /// A running job's state is written at most this often, and on every change of state.
  static let reportEvery = Duration.seconds(1)

  /// Creates the job of the file spooled in `file` (`bytes` long) and starts importing it; returns the job.
  func start(_ file: ImportSpool, bytes: Int, user: UserID, logger: Logger) async throws -> HistoryImportJob {
    let now = importer.environment.now()
    let job = HistoryImportJob(
      id: "imp_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""), state: .checking,
      bytes: bytes, createdAt: now, updatedAt: now)
    try await save(job, owner: user)
    Task { await run(job, file, user: user, logger: logger) }
    return job
  }

  /// Imports the file, reporting into `job`, and stores how it ended.
  func run(_ job: HistoryImportJob, _ file: ImportSpool, user: UserID, logger: Logger) async {
    let reporter = Reporter(job: job, clock: importer.environment.now)
    var job = job
    do {
      let summary = try await importer.importFile(file, user: user) { progress in
        guard let state = await reporter.take(progress) else { return }
        try? await save(state, owner: user)
      }
      job = await reporter.job
      job.state = .done
      job.summary = summary
      job.read = summary.read
      job.stored = summary.stored
      job.duplicates = summary.duplicates
      job.bytesRead = job.bytes
    } catch {
      job = await reporter.job
      job.state = .failed
      let refusal: APIError
      switch error {
      case let error as APIError: refusal = error
      case is StoreUnavailableError:
        refusal = APIError(
          status: 503, code: .unavailable,
          message: "The database stopped answering during the import; upload the file again to store the rest.")
      default:
        logger.error("History import failed", metadata: ["job": "\(job.id)", "error": "\(error)"])
        refusal = APIError(
          status: 500, code: .internal,
          message: "The import failed on the server; upload the file again to store the rest.")
      }
      job.error = refusal.envelope.error
    }
    // The end is written even if the database is away for a while: up to a minute, then the job reads interrupted.
    for attempt in 0..<30 {
      do {
        job.updatedAt = importer.environment.now()
        try await save(job, owner: user)
        return
      } catch {
        try? await Task.sleep(for: .milliseconds(min(5_000, 250 << attempt)))
      }
    }
    logger.error("History import's end could not be stored", metadata: ["job": "\(job.id)"])
  }

  /// The owner's job `id`, as it stands now.
  func job(_ id: String, owner: UserID) async throws -> HistoryImportJob {
    guard let record = try await store.importJob(id: id, owner: owner) else {
      throw APIError.notFound("You have no history import with this id.")
    }
    return try decode(record)
  }

  /// The owner's last jobs, newest first.
  func list(_ owner: UserID) async throws -> HistoryImportJobList {
    HistoryImportJobList(items: try await store.importJobs(owner: owner, limit: 20).map(decode))
  }

  /// A stored job, interrupted when it runs but has not reported for ``staleAfter``.
  func decode(_ record: ImportJobRecord) throws -> HistoryImportJob {
    var job = try JSONDecoder().decode(HistoryImportJob.self, from: Data(record.document.utf8))
    if job.state == .checking || job.state == .storing,
      importer.environment.now() - record.updatedAt > Self.staleAfter
    {
      job.state = .interrupted
    }
    return job
  }

  func save(_ job: HistoryImportJob, owner: UserID) async throws {
    let document = String(decoding: try JSONEncoder().encode(job), as: UTF8.self)
    try await store.saveImportJob(
      ImportJobRecord(id: job.id, owner: owner, document: document, createdAt: job.createdAt, updatedAt: job.updatedAt))
  }

  /// The job's state as the import reports it, handed out for storing at most every ``reportEvery`` and on every
  /// change of state.
  actor Reporter {
    private(set) var job: HistoryImportJob
    private var reported = ContinuousClock.now
    private let clock: @Sendable () -> Int64

    init(job: HistoryImportJob, clock: @escaping @Sendable () -> Int64) {
      self.job = job
      self.clock = clock
    }

    /// Takes `progress`; returns the job to store when it is due.
    func take(_ progress: HistoryImport.Progress) -> HistoryImportJob? {
      let state: HistoryImportJob.State = progress.storing ? .storing : .checking
      let changed = state != job.state
      job.state = state
      job.format = progress.format.rawValue
      job.bytesRead = progress.bytesRead
      job.read = progress.read
      job.stored = progress.stored
      job.duplicates = progress.duplicates
      let now = ContinuousClock.now
      guard changed || now - reported >= HistoryImportJobs.reportEvery else { return nil }
      reported = now
      job.updatedAt = clock()
      return job
    }
  }
}

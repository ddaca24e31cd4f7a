import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import MeridianStoreSQLite
import MeridianTestSupport
import Testing

@testable import MeridianServer

/// A job whose node stopped (no report for a minute) reads `interrupted`, with what it had done; a running job that
/// reports reads as it is, and an ended one stays ended however old.
@Suite struct HistoryImportJobStateTests {
  @Test func aRunningJobThatStopsReportingReadsInterrupted() async throws {
    let file = TemporaryDatabaseFile()
    defer { file.remove() }
    let store = try SQLiteStore.open(at: file.path)
    let anna = try #require(
      try await store.createAccount(
        id: UserID("anna"), credential: .email("anna@example.com"), passwordHash: nil, now: 1))
    let clock = TestClock(start: 1_800_000_000_000)
    let environment = ServerEnvironment(
      store: store, smsSender: LogSMSSender(logger: Logger(label: "import-job-tests")),
      configuration: ServerConfiguration(), now: { clock.now })
    let jobs = HistoryImportJobs(importer: HistoryImport(environment: environment, maximumBytes: 1 << 20))
    let running = HistoryImportJob(
      id: "imp_1", state: .storing, format: "csv", bytes: 1_000, bytesRead: 400, read: 40, stored: 30, duplicates: 10,
      createdAt: clock.now, updatedAt: clock.now)
    try await jobs.save(running, owner: anna.id)
    let ended = HistoryImportJob(
      id: "imp_2", state: .done, bytes: 10, createdAt: clock.now, updatedAt: clock.now)
    try await jobs.save(ended, owner: anna.id)

    clock.advance(HistoryImportJobs.staleAfter)
    #expect(try await jobs.job("imp_1", owner: anna.id) == running)
    clock.advance(1)
    var interrupted = running
    interrupted.state = .interrupted
    #expect(try await jobs.job("imp_1", owner: anna.id) == interrupted)
    #expect(try await jobs.list(anna.id).items.map(\.state) == [.done, .interrupted])  // newest first, then by id
    #expect(try await jobs.job("imp_2", owner: anna.id).state == .done)
    await #expect(throws: APIError.self) { _ = try await jobs.job("imp_1", owner: UserID("boris")) }
  }
}

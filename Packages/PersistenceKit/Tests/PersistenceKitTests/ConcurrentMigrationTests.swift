import Foundation
import GRDB
import PersistenceKit
import Testing

/// Two real processes migrate the same file at once (`persistencekit-migrate-probe`, built with the tests).
@Suite struct ConcurrentMigrationTests {
  static func probeURL() throws -> URL {
    var directories: [URL] = []
    // The resource bundle and the test binary both live in the build products directory.
    directories.append(Bundle.module.bundleURL.deletingLastPathComponent())
    if let executable = Bundle.main.executableURL { directories.append(executable.deletingLastPathComponent()) }
    for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
      directories.append(bundle.bundleURL.deletingLastPathComponent())
    }
    for directory in directories {
      let candidate = directory.appendingPathComponent("persistencekit-migrate-probe")
      if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "persistencekit-migrate-probe"])
  }

  struct Run {
    var status: Int32
    var output: String
    var error: String
  }

  static func launch(
    _ probe: URL,
    database: String,
    delayMilliseconds: Int = 400,
    busyTimeout: Double = 30
  ) throws -> (Process, Pipe, Pipe) {
    let process = Process()
    process.executableURL = probe
    process.arguments = [database, String(delayMilliseconds), String(busyTimeout)]
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    return (process, output, error)
  }

  static func finish(_ launched: (Process, Pipe, Pipe)) -> Run {
    let (process, output, error) = launched
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Run(
      status: process.terminationStatus,
      output: String(decoding: outputData, as: UTF8.self),
      error: String(decoding: errorData, as: UTF8.self)
    )
  }

  @Test func twoProcessesNeverApplyAMigrationTwice() throws {
    let probe = try Self.probeURL()
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path("shared.sqlite")

    for round in 0..<2 {
      let roundPath = round == 0 ? path : directory.path("shared-\(round).sqlite")
      let first = try Self.launch(probe, database: roundPath)
      let second = try Self.launch(probe, database: roundPath)
      let runs = [Self.finish(first), Self.finish(second)]
      for run in runs { #expect(run.status == 0, "probe failed: \(run.error)") }

      let applied = runs.flatMap { $0.output.split(separator: "\n").filter { $0.hasPrefix("applied ") } }
      #expect(applied.count == 4, "each migration applied exactly once in total: \(runs.map(\.output))")
      #expect(Set(applied).count == 4)

      let database = try SQLiteDatabase.open(at: roundPath)
      try database.read { db throws in
        #expect(try String.fetchAll(db, sql: "SELECT source FROM counter ORDER BY id") == ["002", "003", "004"])
        #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM persistencekit_migrations") == 4)
      }
      #expect(try database.integrityCheck().isOK)
      try database.close()
    }
  }

  /// The number of ledger rows, 0 while the file or the table doesn't exist or is locked.
  static func ledgerCount(_ path: String) -> Int {
    guard let database = try? SQLiteDatabase.open(at: path, options: DatabaseOptions(busyTimeout: 0.01)) else {
      return 0
    }
    defer { try? database.close() }
    let count: Int?? = try? database.read { db in
      try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM persistencekit_migrations")
    }
    return (count ?? nil) ?? 0
  }

  @Test func aProcessThatCannotWaitFailsCleanly() async throws {
    let probe = try Self.probeURL()
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path("impatient.sqlite")

    // The first process holds the write lock for about 1.5 s in each slow migration.
    let patient = try Self.launch(probe, database: path, delayMilliseconds: 1500)
    // Wait until it is inside a migration (the ledger has its first row).
    var started = false
    for _ in 0..<100 where !started {
      try await Task.sleep(for: .milliseconds(50))
      started = Self.ledgerCount(path) >= 1
    }
    #expect(started)
    let impatient = Self.finish(try Self.launch(probe, database: path, delayMilliseconds: 0, busyTimeout: 0.2))
    #expect(impatient.status == 75)
    #expect(impatient.error.contains("locked") || impatient.error.contains("busy"), "\(impatient.error)")
    #expect(!impatient.output.contains("applied"))

    let first = Self.finish(patient)
    #expect(first.status == 0, "\(first.error)")
    #expect(first.output.split(separator: "\n").filter { $0.hasPrefix("applied ") }.count == 4)

    // Retrying later finds everything done.
    let retry = Self.finish(try Self.launch(probe, database: path, delayMilliseconds: 0))
    #expect(retry.status == 0)
    #expect(retry.output.split(separator: "\n").filter { $0.hasPrefix("skipped ") }.count == 4)
  }
}

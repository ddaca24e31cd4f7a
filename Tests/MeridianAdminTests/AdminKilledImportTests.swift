import DomainKit
import Foundation
import MeridianAdmin
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import MeridianTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `kill -9` of `meridian-admin` during `history import` and `geo import` (issue 42 §4): the same import run again
/// afterwards stores every point exactly once, and `db check` finds the database intact. Each kill waits for its
/// point in the database (a first batch stored, half the file, a file staged in part), on SQLite and PostgreSQL.
@Suite("meridian-admin imports killed with kill -9")
struct AdminKilledImportTests {
  /// Starts `meridian-admin ARGUMENTS` on `database`, waits until `reached` says the import got to its point (polled
  /// every 25 ms, at most 60 s), sends SIGKILL and returns what `reached` saw last; nil when the run ended first.
  ///
  /// The paced imports' steps are 200 ms (gazetteer) and 1 s (history) apart, so 25 ms finds each point in time. Polled
  /// every 2 ms, the store's statistics read ran back to back and took a core of CPU for the whole test.
  static func kill(
    _ arguments: [String], database: String, at point: String, when reached: () async throws -> String?
  ) async throws -> String? {
    let executable = try #require(adminExecutable, "meridian-admin is not built; run swift build --build-tests")
    var environment = ProcessInfo.processInfo.environment
    environment["MERIDIAN_DATABASE"] = nil
    environment["MERIDIAN_DATABASE_URL"] = nil
    let child = try ChildProcess(executable, arguments + ["--database", database], environment: environment)
    let deadline = ContinuousClock.now + .seconds(60)
    while child.isRunning && ContinuousClock.now < deadline {
      if let seen = try await reached() {
        child.terminate(with: SIGKILL)
        let status = await child.wait()
        return status == SIGKILL ? seen : nil
      }
      try await Task.sleep(for: .milliseconds(25))
    }
    child.terminate(with: SIGKILL)
    _ = await child.wait()
    Issue.record("meridian-admin did not reach \(point): \(child.output.value)")
    return nil
  }

  /// Runs `body` with the database (a SQLite path or a PostgreSQL URL), a sandbox and the store on `engine`.
  static func withDatabase(
    _ engine: String, _ body: (_ database: String, AdminSandbox, any MeridianStore) async throws -> Void
  ) async throws {
    if engine == "sqlite" {
      let sandbox = try AdminSandbox()
      try await body(sandbox.database, sandbox, try sandbox.store())
      return
    }
    try await PostgresTestDatabase.with { database in
      let store = try await PostgresStore.open(url: database.url, maximumConnections: 2, timeouts: .tests)
      do {
        try await body(database.url, try AdminSandbox(), store)
      } catch {
        await store.close()
        throw error
      }
      await store.close()
    }
  }

  static func fixCount(_ store: any MeridianStore) async throws -> Int {
    try await store.statistics(now: Timestamp.milliseconds(Date()), days: 1).fixes
  }

  // Paced at 1,000 fixes a second (--rows-per-second), so batches are 1 s apart and the second half of the file
  // takes 15 s: unpaced, a quiet machine's SQLite stored the 30,000 points before the poller saw the second kill
  // point; at 5,000 a second, a machine at a load of 19 did too, and at 2,000 a CI run beside a release build (the
  // poller saw 24,000 and the import ended before the kill).
  @Test(arguments: ["sqlite", "postgres"])
  func aKilledHistoryImportRunAgainStoresEveryPointOnce(_ engine: String) async throws {
    try await Self.withDatabase(engine) { database, sandbox, store in
      func admin(_ arguments: [String]) async throws -> AdminRun {
        try await sandbox.admin(arguments, database: database)
      }
      _ = try await seedUser(store, email: "anna@example.com")
      // 30 storage batches of 1,000 (HistoryTransfer.importBatch), one device.
      let points = 30_000
      var csv = "time,lat,lon,device\n"
      for index in 0..<points {
        csv += "\(Timestamp.formatISO8601(1_704_067_200_000 + Int64(index) * 1000)),50.45,30.52,anna-gps\n"
      }
      let file = sandbox.path("track.csv")
      try csv.write(toFile: file, atomically: true, encoding: .utf8)
      let arguments = ["history", "import", "--user", "anna@example.com", file]
      for (threshold, point) in [(1, "after the first batch"), (points / 2, "past half the file")] {
        let seen = try await Self.kill(arguments + ["--rows-per-second", "1000"], database: database, at: point) {
          let stored = try await Self.fixCount(store)
          return stored >= threshold ? "\(stored) fixes stored" : nil
        }
        let after = try await Self.fixCount(store)
        print("[\(engine)] history import, kill -9 \(point): \(seen ?? "ended first"), \(after) after the kill")
        #expect(seen != nil && after < points, "the import ended before the kill \(point)")
        #expect(after % 1000 == 0, "a batch stored in part: \(after)")
      }
      let before = try await Self.fixCount(store)
      let run = try await admin(arguments + ["--json"])
      #expect(run.status == 0, "\(run)")
      let output = try run.object()
      print(
        "[\(engine)] history import run again: \(output["accepted"] ?? "?") new, \(output["duplicates"] ?? "?") kept")
      #expect(output["read"] as? Int == points)
      #expect(output["accepted"] as? Int == points - before)
      #expect(output["duplicates"] as? Int == before)
      #expect(try await Self.fixCount(store) == points)
      let check = try await admin(["db", "check"])
      #expect(check.status == 0, "\(check)")
    }
  }

  // Paced at 100 rows a second (--rows-per-second) in batches of 20, with 300 more alternate names (of places the
  // extract does not have, so they change nothing), so the alternate names take 3 s after the cities' commit:
  // unpaced, a quiet machine committed both before the poller saw the moment between; paced with the extract's 12
  // names, a machine at a load of 19 did too.
  @Test(arguments: ["sqlite", "postgres"])
  func aKilledGazetteerImportRunAgainEndsWithTheWholeGazetteer(_ engine: String) async throws {
    try await Self.withDatabase(engine) { database, sandbox, store in
      func admin(_ arguments: [String]) async throws -> AdminRun {
        try await sandbox.admin(arguments, database: database)
      }
      _ = try await store.dataLanguages()
      // Batches of 20 rows: the cities file is over 100 staged batches, the alternate names 16.
      let extract = URL(fileURLWithPath: sandbox.path("extract"))
      try FileManager.default.copyItem(at: GeoImportTests.extract, to: extract)
      let alternateNames = extract.appendingPathComponent("alternateNamesV2.txt")
      let padding = (1...300).map { "\(90_000_000 + $0)\t\(990_000_000 + $0)\ten\tNowhere \($0)\t\t\t\t\t\t\n" }
      try (String(contentsOf: alternateNames, encoding: .utf8) + padding.joined()).write(
        to: alternateNames, atomically: true, encoding: .utf8)
      let arguments = ["geo", "import", extract.path, "--batch-size", "20"]
      let paced = arguments + ["--rows-per-second", "100"]
      // Killed with the cities file staged in part, then once it is committed and the alternate names are not.
      let points: [(String, String, String?)] = [
        ("cities500.txt", "with the cities file staged in part", nil),
        ("alternateNamesV2.txt", "with the cities committed, the alternate names not", "cities500.txt"),
      ]
      for (file, point, committed) in points {
        let seen = try await Self.kill(paced, database: database, at: point) {
          let files = try await store.gazetteerFiles()
          guard let state = files.first(where: { $0.file == file }), state.completedAt == nil,
            committed.map({ name in files.contains { $0.file == name && $0.completedAt != nil } })
              ?? (state.stagedThrough > 0)
          else { return nil }
          return "\(file) staged through line \(state.stagedThrough)"
        }
        print("[\(engine)] geo import, kill -9 \(point): \(seen ?? "ended first")")
        #expect(seen != nil, "the import ended before the kill \(point)")
      }
      let run = try await admin(arguments + ["--json"])
      #expect(run.status == 0, "\(run)")
      let summary = try JSONDecoder().decode(GazetteerImportSummary.self, from: Data(run.stdout.utf8))
      print("[\(engine)] geo import run again: \(summary.files.map { "\($0.file) \($0.status.rawValue)" })")
      #expect(summary.files.prefix(4).allSatisfy { $0.status == .unchanged })
      #expect(summary.files.last?.status != .unchanged)
      #expect(summary.counts == GeoImportTests.extractCounts)
      let names = try await store.gazetteerNames(areas: [], localities: [706_483], languages: ["uk"])
      #expect(names.localities[706_483] == "Харків")
      let check = try await admin(["db", "check"])
      #expect(check.status == 0, "\(check)")
    }
  }
}

/// A gazetteer import stopped between two files — right after a newer dump's cities file was committed, before the
/// alternate names were begun — as `kill -9` at that moment stops it. The alternate names were skipped as unchanged
/// when it ran again, leaving the names the cities file picks by script.
@Suite("A gazetteer import stopped between files")
struct GazetteerStoppedBetweenFilesTests {
  /// A store that fails every call to change it once `file` is committed: the import killed right then.
  struct StopsAfterCommit: GazetteerStore {
    let store: any MeridianStore
    let file: String
    let committed = Flag()
    struct Stop: Error {}

    final class Flag: Sendable {
      let value = Mutex(false)
    }

    func beginGazetteerFile(_ file: String, digest: String, restart: Bool, now: Int64) async throws
      -> GazetteerFileProgress
    {
      if committed.value.withLock({ $0 }) { throw Stop() }
      return try await store.beginGazetteerFile(file, digest: digest, restart: restart, now: now)
    }
    func stageGazetteerRows(_ rows: [GazetteerStagedRow], file: String, through line: Int) async throws {
      if committed.value.withLock({ $0 }) { throw Stop() }
      try await store.stageGazetteerRows(rows, file: file, through: line)
    }
    func commitGazetteerFile(_ file: String, now: Int64) async throws -> Int {
      if committed.value.withLock({ $0 }) { throw Stop() }
      let rows = try await store.commitGazetteerFile(file, now: now)
      if file == self.file { committed.value.withLock { $0 = true } }
      return rows
    }
    func gazetteerFiles() async throws -> [GazetteerFileState] { try await store.gazetteerFiles() }
    func gazetteerCounts() async throws -> GazetteerCounts { try await store.gazetteerCounts() }
    func gazetteerLocalities() async throws -> [GazetteerLocality] { try await store.gazetteerLocalities() }
    func gazetteerNames(areas: [String], localities: [Int64], languages: [String]) async throws -> GazetteerNames {
      try await store.gazetteerNames(areas: areas, localities: localities, languages: languages)
    }
    func gazetteerTranslations(area: String?, locality: Int64?) async throws -> [String: String] {
      try await store.gazetteerTranslations(area: area, locality: locality)
    }
  }

  /// Every place's name in each of the database's languages.
  static func names(_ store: any MeridianStore) async throws -> [String: [Int64: String]] {
    let ids = try await store.gazetteerLocalities().map(\.geonameID)
    var names: [String: [Int64: String]] = [:]
    for language in try await store.dataLanguages() {
      names[language] = try await store.gazetteerNames(areas: [], localities: ids, languages: [language]).localities
    }
    return names
  }

  /// The names are those of an import that was never stopped: the alternate names, applied after the newer cities
  /// file, win over the names the cities file picks by script.
  @Test(arguments: StoreEngine.all)
  func theAlternateNamesAreAppliedAgainAfterANewerCitiesFileWhoseImportStoppedBeforeThem(_ engine: StoreEngine)
    async throws
  {
    let sandbox = try AdminSandbox()
    let dump = try GeoImportTests.copyOfExtract(in: sandbox)
    let cities = dump.appendingPathComponent("cities500.txt")
    // The newer cities file gives Kharkiv one Cyrillic alternate name, which the script picker takes for Russian
    // and Ukrainian until the alternate names' labelled Харьков and Харків replace it.
    let newer = try String(contentsOf: cities, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
      .map { line in
        guard line.hasPrefix("706483\t") else { return String(line) }
        var fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        fields[3] = "Харьковград"
        return fields.joined(separator: "\t")
      }.joined(separator: "\n")
    try await engine.with { reference in
      let languages = try await reference.dataLanguages()
      try newer.write(to: cities, atomically: true, encoding: .utf8)
      _ = try await GazetteerImporter(store: reference, languages: languages).importDirectory(dump, now: 1)
      let expected = try await Self.names(reference)
      try await engine.with { store in
        try FileManager.default.removeItem(at: dump)
        _ = try GeoImportTests.copyOfExtract(in: sandbox)
        _ = try await GazetteerImporter(store: store, languages: languages).importDirectory(dump, now: 1)
        try newer.write(to: cities, atomically: true, encoding: .utf8)
        let stopped = GazetteerImporter(
          store: StopsAfterCommit(store: store, file: "cities500.txt"), languages: languages)
        await #expect(throws: StopsAfterCommit.Stop.self) { try await stopped.importDirectory(dump, now: 2) }
        let again = try await GazetteerImporter(store: store, languages: languages).importDirectory(dump, now: 3)
        print("[\(engine)] run again: \(again.files.map { "\($0.file) \($0.status.rawValue)" })")
        #expect(again.files.map(\.status) == [.unchanged, .unchanged, .unchanged, .unchanged, .imported])
        let names = try await Self.names(store)
        let differing = names.flatMap { language, byID in
          byID.filter { expected[language]?[$0.key] != $0.value }.map { "\(language) \($0.key): \($0.value)" }
        }
        #expect(differing.isEmpty, "\(differing.count) names differ: \(differing.prefix(10))")
      }
    }
  }
}

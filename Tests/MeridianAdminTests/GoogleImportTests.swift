import DomainKit
import Foundation
import MeridianStore
import MeridianStorePostgres
import MeridianStoreTesting
import Testing

/// `meridian-admin history import` of Google's exports, told apart by content (the files are renamed so their
/// names say nothing), on SQLite and PostgreSQL: each merges without duplicates and says what it read; a bad file
/// names what is wrong and stores nothing.
@Suite("meridian-admin history import of Google exports")
struct GoogleImportTests {
  /// DomainKit's hand-written Google fixtures.
  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Packages/DomainKit/Tests/DomainKitTests/Fixtures/google")

  /// Runs `body` with an admin runner and the store on `engine`'s database.
  static func withEngine(
    _ engine: String,
    _ body: (_ admin: ([String]) async throws -> AdminRun, AdminSandbox, any MeridianStore) async throws -> Void
  ) async throws {
    if engine == "sqlite" {
      let sandbox = try AdminSandbox()
      try await body({ try await sandbox.admin($0) }, sandbox, try sandbox.store())
      return
    }
    try await PostgresTestDatabase.with { database in
      let sandbox = try AdminSandbox()
      let store = try await PostgresStore.open(url: database.url, maximumConnections: 4, timeouts: .tests)
      do {
        try await body({ try await sandbox.admin($0, database: database.url) }, sandbox, store)
      } catch {
        await store.close()
        throw error
      }
      await store.close()
    }
  }

  @Test(arguments: ["sqlite", "postgres"])
  func everyShapeImportsByContentWithoutDuplicates(_ engine: String) async throws {
    try await Self.withEngine(engine) { admin, sandbox, store in
      let anna = try await seedUser(store, email: "anna@example.com")
      // name in the export → (shape, fixes read, new, the same time twice in the file)
      let files: [(String, String, Int, Int, Int)] = [
        ("2024_MARCH.json", "semanticHistory", 7, 5, 2),
        ("Timeline.json", "androidTimeline", 8, 7, 1),
        ("location-history.json", "iosTimeline", 7, 4, 3),
      ]
      for (index, (name, shape, read, accepted, duplicates)) in files.enumerated() {
        let file = sandbox.path("export-\(index).dat")
        try FileManager.default.copyItem(atPath: Self.fixtures.appendingPathComponent(name).path, toPath: file)
        let run = try await admin(["history", "import", "--user", anna.rawValue, file, "--json"])
        #expect(run.status == 0, "\(run)")
        let output = try run.object()
        #expect(output["read"] as? Int == read, "\(name): \(run)")
        #expect(output["accepted"] as? Int == accepted, "\(name): \(run)")
        #expect(output["duplicates"] as? Int == duplicates, "\(name): \(run)")
        #expect((output["google"] as? [String: Any])?["shape"] as? String == shape, "\(name): \(run)")
        let again = try await admin(["history", "import", "--user", anna.rawValue, file, "--json"])
        #expect(try again.object()["accepted"] as? Int == 0, "\(name): \(again)")
      }
      let android = try await admin(["history", "import", "--user", anna.rawValue, sandbox.path("export-1.dat")])
      #expect(android.stdout.contains("2 path points left out where raw positions cover the period"), "\(android)")
      let stored = try await store.history(owner: anna, filter: HistoryFilter(), limit: 1000, before: nil)
      #expect(stored.count == 16)
      // The visits stay visits: two in March, one in May, one in June.
      #expect(VisitDetector().visits(in: stored.map(\.fix).sorted { $0.timestamp < $1.timestamp }).count == 4)

      // Bad files: truncated, an E7 out of range, a wrong type. Each names the problem; nothing is stored.
      let timeline = try Data(contentsOf: Self.fixtures.appendingPathComponent("Timeline.json"))
      let bad: [(Data, String)] = [
        (timeline.prefix(timeline.count * 2 / 3), "not valid JSON"),
        (
          Data(
            #"{"timelineObjects": [{"placeVisit": {"location": {"latitudeE7": 955000000, "longitudeE7": 1}, "duration": {"startTimestamp": "2025-03-01T06:00:00Z"}}}]}"#
              .utf8), "timelineObjects[0].latitude"
        ),
        (Data(#"[{"startTime": "2025-06-10T07:00:00Z", "timelinePath": 7}]"#.utf8), "expected an array"),
      ]
      for (index, (content, message)) in bad.enumerated() {
        let file = sandbox.path("bad-\(index).json")
        try content.write(to: URL(fileURLWithPath: file))
        let run = try await admin(["history", "import", "--user", anna.rawValue, file, "--format", "google"])
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains(message) && run.stderr.contains("Nothing was imported"), "\(run.stderr)")
      }
      #expect(try await store.history(owner: anna, filter: HistoryFilter(), limit: 1000, before: nil).count == 16)
    }
  }
}

import DomainKit
import Foundation
import MeridianTestSupport
import MeridianTracker
import Testing

/// `meridian-tracker history import` of Google's exports, told apart by content: every shape, under names that say
/// nothing, merges into the local history without duplicates, and a bad file names what is wrong and stores nothing.
@Suite("Tracker history import of Google exports")
struct TrackerGoogleImportTests {
  /// DomainKit's hand-written Google fixtures.
  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Packages/DomainKit/Tests/DomainKitTests/Fixtures/google")

  @Test func everyShapeIsDetectedByContentAndImportsOnce() async throws {
    try await TrackerHistoryTests.withDirectory { directory in
      let store = try await TrackerHistoryTests.store(directory, fixes: [])
      let shapes: [(String, GoogleExportShape)] = [
        ("2024_MARCH.json", .semanticHistory), ("Timeline.json", .androidTimeline),
        ("location-history.json", .iosTimeline),
      ]
      var stored = 0
      for (index, (name, shape)) in shapes.enumerated() {
        let file = directory.appendingPathComponent("export-\(index).dat")
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent(name), to: file)
        #expect(HistoryFormat.detect(file) == .google, "\(name)")
        let first = try HistoryImporter(store: store).importFileReportingSkipped(file, format: .google)
        #expect(first.google?.shape == shape, "\(name)")
        #expect(first.merged.new > 0, "\(name): \(first)")
        stored += first.merged.new
        let again = try HistoryImporter(store: store).importFile(file, format: .google)
        #expect(again.new == 0 && again.duplicates == first.merged.new + first.merged.duplicates, "\(name): \(again)")
      }
      let fixes = try store.fixes(matching: HistoryFilter(), newestFirst: false)
      #expect(fixes.count == stored && stored == 16)
      #expect(fixes.contains { $0.kind == .visit })

      // The other formats are still told apart by content, whatever the name; Records.json is Takeout's reader's.
      let documents: [(String, HistoryFormat)] = [
        (#"{"locations": []}"#, .takeout), ("<?xml version=\"1.0\"?><gpx/>", .gpx),
        (#"{"type": "FeatureCollection", "features": []}"#, .geojson),
      ]
      for (content, format) in documents {
        let file = directory.appendingPathComponent("unnamed.txt")
        try Data(content.utf8).write(to: file)
        #expect(HistoryFormat.detect(file) == format, "\(content)")
      }

      // A truncated export is refused with its reason, and nothing is stored.
      let timeline = try Data(contentsOf: Self.fixtures.appendingPathComponent("Timeline.json"))
      let truncated = directory.appendingPathComponent("truncated.json")
      try timeline.prefix(timeline.count * 2 / 3).write(to: truncated)
      #expect(HistoryFormat.detect(truncated) == .google)
      let error = #expect(throws: TrackerError.self) {
        try HistoryImporter(store: store).importFile(truncated, format: .google)
      }
      #expect(error.map { "\($0)".contains("nothing was imported") } == true, "\(String(describing: error))")
      #expect(try store.fixes(matching: HistoryFilter(), newestFirst: false).count == stored)
    }
  }

  @Test func theCommandDetectsAGoogleExportAndSaysWhatItRead() async throws {
    try await TrackerHistoryTests.withDirectory { directory in
      let state = directory.appendingPathComponent("state").path
      let file = directory.appendingPathComponent("whatever.bin")
      try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("Timeline.json"), to: file)
      let run = try await TrackerHistoryTests.tracker(["history", "import", file.path, "--state", state])
      #expect(run.status == 0, "\(run)")
      #expect(run.output.contains("androidTimeline:"), "\(run.output)")
      #expect(run.output.contains("2 path points left out where raw positions cover the period"), "\(run.output)")
      let json = try await TrackerHistoryTests.tracker(["history", "import", file.path, "--state", state, "--json"])
      let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
      #expect(object?["new"] as? Int == 0, "\(json)")
      #expect((object?["google"] as? [String: Any])?["shape"] as? String == "androidTimeline", "\(json)")
    }
  }
}

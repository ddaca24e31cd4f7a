import DomainKit
import DomainKitTesting
import Foundation
import GRDB
import GeoKit
import Logging
import MeridianTestSupport
import MeridianTracker
import MeridianTrackerStore
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// The tracker's local history (filters, clusters, visits, export and import) and its simulated and gpsd sources.
@Suite("Tracker history and sources")
struct TrackerHistoryTests {
  // MARK: - Fixtures

  /// A temporary directory, removed afterwards.
  static func withDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tracker-history-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
  }

  static let base: Int64 = 1_790_000_000_000  // 2026-09-21T13:33:20Z

  /// 600 fixes an hour apart around four cities, of every kind, some without accuracy, with altitude, speed and
  /// course; one at the Wikipedia geohash example point (57.64911, 10.40744 → u4pruydqqvj).
  static func sampleFixes() throws -> [LocationFix] {
    var random = SplitMix64(seed: 42)
    let centres = [(50.45, 30.52), (48.85, 2.35), (40.71, -74.0), (-33.87, 151.21)]
    var fixes = try (0..<600).map { index in
      let centre = centres[index % 4]
      return try LocationFix(
        timestamp: base + Int64(index) * 3_600_000 + Int64(random.next() % 1000),
        latitude: centre.0 + (Double.random(in: 0..<1, using: &random) - 0.5) * 0.6,
        longitude: centre.1 + (Double.random(in: 0..<1, using: &random) - 0.5) * 0.6,
        horizontalAccuracy: index % 7 == 0 ? nil : (Double.random(in: 0..<1, using: &random) * 300).rounded(),
        altitude: (Double.random(in: 0..<1, using: &random) * 300).rounded(),
        speed: (Double.random(in: 0..<1, using: &random) * 20).rounded(),
        course: (Double.random(in: 0..<1, using: &random) * 359).rounded(), kind: FixKind.allCases[(index / 4) % 4])
    }
    fixes[1] = try LocationFix(
      timestamp: fixes[1].timestamp, latitude: 57.64911, longitude: 10.40744, horizontalAccuracy: 3)
    return fixes
  }

  /// A store holding `fixes`, recorded through the agent's own path (`record`).
  static func store(_ directory: URL, name: String = "history", fixes: [LocationFix]) async throws -> TrackerStore {
    let store = try TrackerStore.open(at: directory.appendingPathComponent("\(name).sqlite").path)
    for fix in fixes { try await store.record(fix, send: false, now: fix.timestamp) }
    return store
  }

  /// Both nil, or both present and within `tolerance`.
  static func close(_ a: Double?, _ b: Double?, _ tolerance: Double) -> Bool {
    switch (a, b) {
    case (nil, nil): true
    case (let a?, let b?): abs(a - b) <= tolerance
    default: false
    }
  }

  // MARK: - Filters

  @Test func filtersMatchDomainKitsRuleNewestFirst() async throws {
    try await Self.withDirectory { directory in
      let fixes = try Self.sampleFixes()
      let store = try await Self.store(directory, fixes: fixes)
      let filters = [
        HistoryFilter(),
        HistoryFilter(range: TimeRange(start: Self.base + 100 * 3_600_000, end: Self.base + 200 * 3_600_000)),
        HistoryFilter(minimumAccuracy: 50),
        HistoryFilter(kinds: [.visit]),
        HistoryFilter(kinds: [.imported, .photo]),
        HistoryFilter(
          range: TimeRange(start: Self.base + 50 * 3_600_000, end: nil), minimumAccuracy: 150, kinds: [.movement]),
        HistoryFilter(range: TimeRange(start: nil, end: Self.base)),
      ]
      for filter in filters {
        let expected = fixes.filter(filter.matches).sorted { $0.timestamp > $1.timestamp }
        #expect(try store.fixes(matching: filter) == expected, "\(filter)")
        #expect(try store.count(matching: filter) == expected.count)
        #expect(try store.fixes(matching: filter, limit: 7) == Array(expected.prefix(7)))
        #expect(try store.fixes(matching: filter, newestFirst: false) == expected.reversed())
        var paged: [LocationFix] = []
        try store.forEachPage(matching: filter, pageSize: 13) { paged += $0 }
        #expect(paged == expected.reversed())
      }
      // Fixes without an accuracy pass an accuracy limit; fixes worse than it don't.
      let strict = try store.fixes(matching: HistoryFilter(minimumAccuracy: 0))
      #expect(strict.allSatisfy { $0.horizontalAccuracy == nil || $0.horizontalAccuracy == 0 })
      #expect(strict.contains { $0.horizontalAccuracy == nil })
    }
  }

  @Test func presetsAndTimesBecomeRanges() throws {
    let kyiv = try #require(TimeZone(identifier: "Europe/Kyiv"))
    let now = Timestamp.date(try #require(Timestamp.parseISO8601("2026-11-24T10:00:00Z")))
    // Kyiv is UTC+2 in November: local midnight is 22:00 UTC the day before.
    let midnight = try #require(Timestamp.parseISO8601("2026-11-23T22:00:00Z"))
    let day: Int64 = 86_400_000
    #expect(
      try HistoryPeriod.range(preset: "today", now: now, timeZone: kyiv)
        == TimeRange(start: midnight, end: midnight + day))
    #expect(
      try HistoryPeriod.range(preset: "yesterday", now: now, timeZone: kyiv)
        == TimeRange(start: midnight - day, end: midnight))
    for name in ["last7Days", "last-7-days", "LAST_7_DAYS"] {
      #expect(
        try HistoryPeriod.range(preset: name, now: now, timeZone: kyiv)
          == TimeRange(start: midnight - 6 * day, end: midnight + day))
    }
    #expect(
      try HistoryPeriod.range(preset: "last30Days", now: now, timeZone: kyiv)
        == TimeRange(start: midnight - 29 * day, end: midnight + day))
    #expect(
      try HistoryPeriod.range(preset: "thisMonth", now: now, timeZone: kyiv)
        == TimeRange(start: Timestamp.parseISO8601("2026-10-31T22:00:00Z"), end: midnight + 7 * day))
    #expect(try HistoryPeriod.range(preset: "allTime", now: now, timeZone: kyiv) == TimeRange(start: nil, end: nil))
    #expect(throws: TrackerError.self) { try HistoryPeriod.range(preset: "fortnight", now: now, timeZone: kyiv) }

    #expect(try HistoryPeriod.time("1790000000000", timeZone: kyiv) == 1_790_000_000_000)
    #expect(try HistoryPeriod.time("2026-11-24T08:30:00+02:00", timeZone: kyiv) == midnight + day / 24 * 8 + 1_800_000)
    #expect(try HistoryPeriod.time("2026-11-24", timeZone: kyiv) == midnight)
    #expect(throws: TrackerError.self) { try HistoryPeriod.time("2026-02-30", timeZone: kyiv) }
    #expect(throws: TrackerError.self) { try HistoryPeriod.time("yesterday-ish", timeZone: kyiv) }
    #expect(throws: TrackerError.self) {
      try HistoryPeriod.range(preset: "today", from: "2026-11-01", to: nil, timeZone: kyiv)
    }
    #expect(throws: TrackerError.self) {
      try HistoryPeriod.range(preset: nil, from: "2026-11-02", to: "2026-11-01", timeZone: kyiv)
    }
  }

  @Test func theMigrationAddsTheQueryIndexes() async throws {
    try await Self.withDirectory { directory in
      let store = try await Self.store(directory, fixes: [])
      let indexes = try await store.database.read { db in
        try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'fixes'")
      }
      for name in ["fixes_kind_timestamp", "fixes_geohash2", "fixes_geohash3", "fixes_geohash4", "fixes_geohash5"] {
        #expect(indexes.contains(name))
      }
      let identifiers = TrackerStore.migrator.migrations.map(\.identifier)
      #expect(identifiers == ["2026-11-24 history and outbox", "2026-11-24 history query indexes"])
      // Opening an existing file again applies nothing twice.
      _ = try TrackerStore.open(at: directory.appendingPathComponent("history.sqlite").path)
    }
  }

  // MARK: - Clusters

  @Test func clustersEqualABruteForceGrouping() async throws {
    try await Self.withDirectory { directory in
      let fixes = try Self.sampleFixes()
      let store = try await Self.store(directory, fixes: fixes)
      let filters = [HistoryFilter(), HistoryFilter(minimumAccuracy: 100, kinds: [.movement, .visit])]
      for filter in filters {
        for precision in 2...6 {
          var groups: [String: [LocationFix]] = [:]
          for fix in fixes where filter.matches(fix) {
            groups[try Geohash.encode(fix.coordinate, precision: precision), default: []].append(fix)
          }
          let clusters = try store.clusters(precision: precision, matching: filter)
          #expect(clusters.count == groups.count)
          #expect(clusters.map(\.count).reduce(0, +) == fixes.filter(filter.matches).count)
          #expect(zip(clusters, clusters.dropFirst()).allSatisfy { $0.count >= $1.count })
          for cluster in clusters {
            let members = try #require(groups[cluster.cell], "no brute-force group \(cluster.cell)")
            #expect(cluster.count == members.count)
            let latitude = members.map(\.latitude).reduce(0, +) / Double(members.count)
            let longitude = members.map(\.longitude).reduce(0, +) / Double(members.count)
            #expect(abs(cluster.latitude - latitude) < 1e-9 && abs(cluster.longitude - longitude) < 1e-9)
            #expect(cluster.first == members.map(\.timestamp).min() && cluster.last == members.map(\.timestamp).max())
            let box = try Geohash.decode(cluster.cell).box
            #expect(box.contains(Coordinate(uncheckedLatitude: cluster.latitude, longitude: cluster.longitude)))
          }
        }
      }
      // The published example: 57.64911, 10.40744 is in u4pru at precision 5.
      let cell = try store.clusters(precision: 5, matching: HistoryFilter()).first { $0.cell.hasPrefix("u4pr") }
      #expect(cell?.cell == "u4pru")
      #expect(throws: LocalHistoryError.precision(7)) { try store.clusters(precision: 7, matching: HistoryFilter()) }
    }
  }

  // MARK: - Visits

  @Test func visitsAreTheStaysOfTheFilteredHistory() async throws {
    try await Self.withDirectory { directory in
      // 20 min at a café, a 1 km walk (6 min), 10 min at a shop, a walk, 2 min at a crossing (too short); a fix a
      // minute. Walking fixes are 167 m apart, so no stay reaches into a walk.
      let start = Self.base
      var fixes: [LocationFix] = []
      var minute: Int64 = 0
      func stay(_ latitude: Double, _ longitude: Double, minutes: Int, kind: FixKind = .movement) throws {
        for index in 0...minutes {
          let wobble = Double(index % 3) * 0.000_05  // ~5 m
          fixes.append(
            try LocationFix(
              timestamp: start + minute * 60_000, latitude: latitude + wobble, longitude: longitude,
              horizontalAccuracy: 10, kind: kind))
          minute += 1
        }
      }
      func walk(from: (Double, Double), to: (Double, Double), minutes: Int) throws {
        for index in 1..<minutes {
          let t = Double(index) / Double(minutes)
          fixes.append(
            try LocationFix(
              timestamp: start + minute * 60_000, latitude: from.0 + (to.0 - from.0) * t,
              longitude: from.1 + (to.1 - from.1) * t, horizontalAccuracy: 10))
          minute += 1
        }
      }
      let cafe = (50.4501, 30.5234)
      let shop = (50.4591, 30.5234)  // 1 km north
      let crossing = (50.4681, 30.5234)
      try stay(cafe.0, cafe.1, minutes: 20)
      let shopArrival = start + (minute + 5) * 60_000
      try walk(from: cafe, to: shop, minutes: 6)
      try stay(shop.0, shop.1, minutes: 10, kind: .visit)
      try walk(from: shop, to: crossing, minutes: 6)
      try stay(crossing.0, crossing.1, minutes: 2)
      let store = try await Self.store(directory, fixes: fixes)

      let visits = try store.visits(matching: HistoryFilter())
      #expect(visits.count == 2)
      #expect(visits.first?.arrival == start && visits.first?.departure == start + 20 * 60_000)
      #expect(visits.first?.fixCount == 21)
      #expect(
        try #require(visits.first).location.haversineDistance(
          to: Coordinate(uncheckedLatitude: cafe.0, longitude: cafe.1)) < 10)
      #expect(visits.last?.arrival == shopArrival && visits.last?.departure == shopArrival + 10 * 60_000)
      #expect(
        try #require(visits.last).location.haversineDistance(
          to: Coordinate(uncheckedLatitude: shop.0, longitude: shop.1)) < 10)
      #expect(visits == VisitDetector().visits(in: fixes))

      // Filters apply before detection: from the shop on, only the shop is a visit; its fixes alone are one too.
      let later = try store.visits(matching: HistoryFilter(range: TimeRange(start: shopArrival, end: nil)))
      #expect(later.count == 1 && later.first?.arrival == shopArrival)
      #expect(try store.visits(matching: HistoryFilter(kinds: [.visit])).map(\.fixCount) == [11])
      #expect(try store.visits(matching: HistoryFilter(), detector: VisitDetector(minimumDuration: 60_000)).count == 3)
    }
  }

  // MARK: - Export and import

  @Test(arguments: [HistoryFormat.gpx, .csv, .geojson])
  func exportThenImportRoundTripsWithoutDuplicates(_ format: HistoryFormat) async throws {
    try await Self.withDirectory { directory in
      let fixes = try Self.sampleFixes()
      let source = try await Self.store(directory, name: "source", fixes: fixes)
      let file = directory.appendingPathComponent("export.\(format.rawValue)")
      #expect(HistoryFormat.guess(for: file) == format)
      var reports: [TransferProgress] = []
      do {
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        var stream = FileOutputStream(handle)
        let written = try HistoryExporter(store: source, pageSize: 64, progressInterval: 100)
          .export(matching: HistoryFilter(), format: format, to: &stream) { reports.append($0) }
        stream.flush()
        try handle.close()
        #expect(written == fixes.count)
      }
      #expect(reports.map(\.fixes) == [128, 256, 320, 448, 512, 600])
      #expect(reports.last?.fraction == 1)

      // Into an empty history: everything is new, nothing is queued.
      let target = try await Self.store(directory, name: "target", fixes: [])
      let importer = HistoryImporter(store: target, batchSize: 50)
      let first = try importer.importFile(file, format: format)
      #expect(first == MergeResult(new: fixes.count, duplicates: 0, queued: 0))
      #expect(try await target.counts() == (history: fixes.count, queued: 0))
      let imported = try target.fixes(matching: HistoryFilter(), newestFirst: false)
      #expect(imported.map(\.timestamp) == fixes.map(\.timestamp))
      for (original, copy) in zip(fixes, imported) {
        #expect(abs(original.latitude - copy.latitude) < 1e-7 && abs(original.longitude - copy.longitude) < 1e-7)
        #expect(Self.close(original.altitude, copy.altitude, 0.01) && Self.close(original.speed, copy.speed, 0.001))
        #expect(Self.close(original.course, copy.course, 0.01))
        if format != .gpx {  // GPX has no accuracy or kind: those become unknown and `imported`
          #expect(copy.horizontalAccuracy == original.horizontalAccuracy && copy.kind == original.kind)
        } else {
          #expect(copy.kind == .imported && copy.horizontalAccuracy == nil)
        }
      }
      // Again, and into the history it came from: all duplicates, nothing changes.
      #expect(try importer.importFile(file, format: format) == MergeResult(new: 0, duplicates: fixes.count))
      let back = try HistoryImporter(store: source).importFile(file, format: format)
      #expect(back == MergeResult(new: 0, duplicates: fixes.count))
      #expect(try await source.counts() == (history: fixes.count, queued: 0))
      #expect(try source.fixes(matching: HistoryFilter()) == fixes.reversed())

      // An overlapping history gets only the missing half, queued for upload when asked.
      let partial = try await Self.store(directory, name: "partial", fixes: Array(fixes.prefix(250)))
      let merged = try HistoryImporter(store: partial, upload: true).importFile(file, format: format)
      #expect(merged == MergeResult(new: 350, duplicates: 250, queued: 350))
      #expect(try await partial.counts() == (history: 600, queued: 350))
      #expect(try await partial.pending(limit: 1000).map(\.fix.timestamp) == fixes.suffix(350).map(\.timestamp))
    }
  }

  @Test func aFilteredExportHoldsOnlyTheMatchingFixes() async throws {
    try await Self.withDirectory { directory in
      let fixes = try Self.sampleFixes()
      let store = try await Self.store(directory, fixes: fixes)
      let filter = HistoryFilter(
        range: TimeRange(start: Self.base + 10 * 3_600_000, end: Self.base + 300 * 3_600_000), minimumAccuracy: 100,
        kinds: [.movement, .photo])
      var csv = ""
      try HistoryExporter(store: store).export(matching: filter, format: .csv, to: &csv)
      #expect(try CSVReader.read(csv).map(\.timestamp) == fixes.filter(filter.matches).map(\.timestamp))
      var geojson = ""
      try HistoryExporter(store: store).export(matching: HistoryFilter(kinds: [.photo]), format: .geojson, to: &geojson)
      #expect(try GeoJSON.read(data: Data(geojson.utf8)).count == fixes.filter { $0.kind == .photo }.count)
      var empty = ""
      try HistoryExporter(store: store).export(
        matching: HistoryFilter(range: TimeRange(start: 0, end: 1)), format: .gpx, to: &empty)
      #expect(try GPX.read(data: Data(empty.utf8)).isEmpty)
      #expect(throws: TrackerError.self) {
        try HistoryExporter(store: store).export(matching: HistoryFilter(), format: .takeout, to: &empty)
      }
    }
  }

  @Test func aGoogleTakeoutFileIsImportedOnce() async throws {
    try await Self.withDirectory { directory in
      // Both time fields Google has used, a nested activity to skip, and a wrapped negative E7 longitude.
      let records = """
        {
          "locations": [{
            "latitudeE7": 504501000,
            "longitudeE7": 305234000,
            "accuracy": 12,
            "altitude": 170,
            "activity": [{"activity": [{"type": "STILL", "confidence": 100}], "timestampMs": "1700000000000"}],
            "timestampMs": "1700000000000"
          }, {
            "latitudeE7": 504502000,
            "longitudeE7": 305235000,
            "accuracy": 8,
            "velocity": 1,
            "heading": 90,
            "timestamp": "2023-11-14T22:13:30.000Z"
          }, {
            "latitudeE7": 407128000,
            "longitudeE7": 3554907296,
            "accuracy": 1500,
            "timestamp": "2023-11-15T08:00:00Z"
          }]
        }
        """
      let file = directory.appendingPathComponent("Records.json")
      try Data(records.utf8).write(to: file)
      #expect(HistoryFormat.guess(for: file) == .takeout)
      let store = try await Self.store(directory, fixes: [])
      let result = try HistoryImporter(store: store).importFile(file, format: .takeout)
      #expect(result == MergeResult(new: 3, duplicates: 0, queued: 0))
      let fixes = try store.fixes(matching: HistoryFilter(), newestFirst: false)
      #expect(fixes.map(\.timestamp) == [1_700_000_000_000, 1_700_000_010_000, 1_700_035_200_000])
      #expect(fixes.map(\.latitude) == [50.4501, 50.4502, 40.7128])
      #expect(abs(fixes[2].longitude - (-74.006)) < 1e-9)
      #expect(fixes.allSatisfy { $0.kind == .imported })
      #expect(fixes[1].speed == 1 && fixes[1].course == 90 && fixes[0].altitude == 170)
      #expect(try store.fixes(matching: HistoryFilter(minimumAccuracy: 100)).count == 2)
      #expect(try HistoryImporter(store: store).importFile(file, format: .takeout) == MergeResult(duplicates: 3))
      #expect(try await store.counts().queued == 0)

      // A broken file names the record and the field (a record without a time is skipped, not broken).
      try Data(#"{"locations":[{"latitudeE7":1,"longitudeE7":2,"timestamp":"yesterday"}]}"#.utf8).write(to: file)
      let error = #expect(throws: TrackerError.self) {
        try HistoryImporter(store: store).importFile(file, format: .takeout)
      }
      #expect(error.map { "\($0)".contains("locations[0].timestamp") } == true)
    }
  }

  // MARK: - The commands

  /// Runs the built `meridian-tracker` with `arguments`; returns its exit status, standard output and error.
  static func tracker(_ arguments: [String]) async throws -> (status: Int32, output: String, error: String) {
    let executable = try #require(builtExecutable("meridian-tracker"), "build meridian-tracker first")
    let child = try ChildProcess(executable, arguments)
    let status = await child.wait()
    return (status, child.standardOutput.value, child.standardError.value)
  }

  @Test func theHistoryCommandsImportListClusterAndExport() async throws {
    try await Self.withDirectory { directory in
      let state = directory.appendingPathComponent("state").path
      let track = exampleFile("kyiv-walk.gpx").path
      let expected = try FixSource.read(exampleFile("kyiv-walk.gpx"), format: .gpx)

      let first = try await Self.tracker(["history", "import", track, "--state", state, "--json", "--progress"])
      #expect(first.status == 0, "\(first.error)")
      #expect(
        try JSONDecoder().decode(MergeResult.self, from: Data(first.output.utf8)) == MergeResult(new: expected.count))
      // The progress bar: the whole file's bytes and the points (a rate and the time left once a tenth of a second
      // has passed).
      let bar = first.error.split(separator: "\n").last.map(String.init) ?? ""
      #expect(bar.hasPrefix("imported [####################] 100 % · "), "\(first.error)")
      #expect(bar.contains("\(expected.count.formatted()) points"), "\(bar)")
      let again = try await Self.tracker(["history", "import", track, "--state", state])
      #expect(again.output.contains("0 new fixes, \(expected.count) duplicates skipped"))

      let list = try await Self.tracker(["history", "list", "--state", state, "--limit", "3", "--json", "--array"])
      let listed = try JSONDecoder().decode([LocationFix].self, from: Data(list.output.utf8))
      #expect(listed.map(\.timestamp) == expected.suffix(3).reversed().map(\.timestamp))

      let clusters = try await Self.tracker(["history", "clusters", "--state", state, "--precision", "4", "--json"])
      let cells = try clusters.output.split(separator: "\n").map {
        try JSONDecoder().decode(LocalHistoryCluster.self, from: Data($0.utf8))
      }
      #expect(cells.map(\.count).reduce(0, +) == expected.count)

      let csv = directory.appendingPathComponent("walk.csv")
      let export = try await Self.tracker([
        "history", "export", "--state", state, "--output", csv.path, "--kind", "imported",
      ])
      #expect(export.status == 0, "\(export.error)")
      #expect(try CSVReader.read(String(contentsOf: csv, encoding: .utf8)).count == expected.count)

      let bad = try await Self.tracker(["history", "list", "--state", state, "--preset", "fortnight"])
      #expect(bad.status != 0 && bad.error.contains("unknown date preset 'fortnight'"))
      let noFormat = try await Self.tracker(["history", "export", "--state", state])
      #expect(noFormat.status != 0 && noFormat.error.contains("--format"))
      let twoSources = try await Self.tracker(["run", "--state", state, "--simulate", "walk", "--gpsd", "127.0.0.1"])
      #expect(twoSources.status != 0 && twoSources.error.contains("exactly one source"))
    }
  }

  // MARK: - Simulated source

  @Test func aSimulatedWalkAdvancesSpeedTimesOneSecond() throws {
    let speed = 5 / 3.6
    let route = try SimulatedRoute(
      waypoints: [
        Coordinate(uncheckedLatitude: 50.4501, longitude: 30.5234),
        Coordinate(uncheckedLatitude: 50.4591, longitude: 30.5334),
      ], speed: speed)
    let fixes = route.fixes(start: Self.base)
    #expect(fixes.count == Int(route.duration.rounded(.up)) + 1)
    for (a, b) in zip(fixes, fixes.dropFirst()) {
      let seconds = Double(b.timestamp - a.timestamp) / 1000
      #expect(seconds <= 1)
      // Haversine is within 0.56 % of the WGS84 geodesic the route follows.
      let distance = a.coordinate.haversineDistance(to: b.coordinate)
      #expect(abs(distance - speed * seconds) <= speed * seconds * 0.006 + 0.002, "\(distance) m in \(seconds) s")
    }
    #expect(fixes.dropLast().allSatisfy { ($0.timestamp - Self.base) % 1000 == 0 })
    #expect(fixes.allSatisfy { $0.speed == speed && $0.horizontalAccuracy == 5 && $0.kind == .movement })
    #expect(fixes.first.map { abs($0.course! - route.waypoints[0].initialBearing(to: route.waypoints[1])) } ?? 1 < 0.01)
    #expect(try #require(fixes.last).coordinate.geodesicDistance(to: route.waypoints[1]) < 0.01)
  }

  @Test func aSimulatedDriveFollowsEveryLegOfTheRoute() async throws {
    let waypoints = try SimulatedRoute.waypoints(
      parsing: "50.4419,30.5216; 50.4501,30.5234;50.4556,30.5227;50.4529,30.5143")
    #expect(waypoints.count == 4)
    let route = try SimulatedRoute(waypoints: waypoints, speed: 50 / 3.6)
    let fixes = route.fixes(start: Self.base)
    let travelled = zip(fixes, fixes.dropFirst()).reduce(0) {
      $0 + $1.0.coordinate.haversineDistance(to: $1.1.coordinate)
    }
    // Cutting the corners between fixes loses at most a few metres per corner.
    #expect(travelled <= route.length * 1.006 && travelled >= route.length * 0.994 - 3 * 14)
    for (a, b) in zip(fixes, fixes.dropFirst()) {
      #expect(a.coordinate.haversineDistance(to: b.coordinate) <= route.speed * 1.006)
    }
    #expect(try #require(fixes.first).coordinate.geodesicDistance(to: waypoints[0]) < 0.001)
    #expect(try #require(fixes.last).coordinate.geodesicDistance(to: waypoints[3]) < 0.01)
    // Every fix lies on the route (within a millimetre of one of its legs, on the sphere within 0.5 %).
    for fix in fixes {
      let nearest = zip(waypoints, waypoints.dropFirst()).map { fix.coordinate.distance(toSegmentFrom: $0, to: $1) }
      #expect(nearest.min() ?? .infinity < 1)
    }

    // The source emits the same track at once, ending now.
    let before = Timestamp.milliseconds(Date())
    var emitted: [LocationFix] = []
    for try await fix in FixSource.simulate(route, speed: 0).fixes(defaultAccuracy: nil) { emitted.append(fix) }
    #expect(emitted.count == fixes.count)
    #expect(try #require(emitted.last).timestamp >= before && emitted.last!.timestamp <= Timestamp.milliseconds(Date()))
    #expect(zip(emitted, fixes).allSatisfy { $0.latitude == $1.latitude && $0.longitude == $1.longitude })

    #expect(throws: TrackerError.self) { try SimulatedRoute.waypoints(parsing: "50.45,30.52;91,0") }
    #expect(throws: TrackerError.self) { try SimulatedRoute.waypoints(parsing: "50.45;30.52") }
    #expect(throws: TrackerError.self) { try SimulatedRoute(waypoints: [waypoints[0]], speed: 1) }
    #expect(throws: TrackerError.self) { try SimulatedRoute(waypoints: [waypoints[0], waypoints[0]], speed: 1) }
    #expect(throws: TrackerError.self) { try SimulatedRoute(speed: 0) }
    #expect(SimulatedRoute.Mode.walk.defaultSpeedKmh == 5 && SimulatedRoute.Mode.drive.defaultSpeedKmh == 50)
    #expect(abs(try SimulatedRoute(speed: 1).length - 3_600) < 300)
  }

  @Test func aPacedSimulationNeverRecordsAFixInTheFuture() async throws {
    // 30 m at 5 km/h is 21.6 s; 20 times faster it takes about a second and ends when the run ends.
    let start = try Coordinate(latitude: 50.4501, longitude: 30.5234)
    let route = try SimulatedRoute(
      waypoints: [start, try start.destination(bearing: 45, distance: 30)], speed: 5 / 3.6)
    let trip = try #require(route.fixes(start: 0).last).timestamp  // 21,600 ms
    let began = ContinuousClock.now
    // The trip is placed while the source is made, between these two readings of the clock.
    let before = Timestamp.milliseconds(Date())
    let source = FixSource.simulate(route, speed: 20).fixes(defaultAccuracy: nil)
    let after = Timestamp.milliseconds(Date())
    var fixes: [LocationFix] = []
    for try await fix in source {
      #expect(fix.timestamp <= Timestamp.milliseconds(Date()))
      fixes.append(fix)
    }
    #expect(ContinuousClock.now - began >= .milliseconds(1_000))
    #expect(fixes.count == 23)
    #expect(zip(fixes.dropLast(), fixes.dropFirst().dropLast()).allSatisfy { $1.timestamp - $0.timestamp == 1_000 })
    // The last fix is dated when the paced run was due to end: placed at start + trip / 20, whenever a loaded
    // machine got round to emitting it (being late only puts it further in the past, never in the future).
    let last = try #require(fixes.last).timestamp
    #expect(last >= before + trip / 20 - 1 && last <= after + trip / 20 + 1, "\(last - before) ms after the start")
  }

  // MARK: - gpsd

  @Test func gpsdReportsAndEndpoints() throws {
    let tpv =
      #"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"time":"2026-11-24T08:30:01.500Z","ept":0.005,"#
      + #""lat":50.4501,"lon":30.5234,"altHAE":210.3,"altMSL":172.1,"epx":4.2,"epy":5.1,"epv":9.8,"#
      + #""track":123.4,"speed":1.25,"eps":0.4}"#
    let fix = try #require(GPSDReport.fix(fromLine: tpv))
    #expect(fix.timestamp == Timestamp.parseISO8601("2026-11-24T08:30:01.500Z"))
    #expect(fix.latitude == 50.4501 && fix.longitude == 30.5234)
    #expect(fix.horizontalAccuracy == 5.1 && fix.verticalAccuracy == 9.8 && fix.altitude == 172.1)
    #expect(fix.speed == 1.25 && fix.speedAccuracy == 0.4 && fix.course == 123.4)
    // Older gpsd: epoch-second times and `alt`.
    let old = try #require(
      GPSDReport.fix(fromLine: #"{"class":"TPV","mode":2,"time":1700000000.25,"lat":1,"lon":2,"alt":3,"eph":7}"#))
    #expect(old.timestamp == 1_700_000_000_250 && old.altitude == 3 && old.horizontalAccuracy == 7)
    #expect(GPSDReport.fix(fromLine: #"{"class":"TPV","mode":1,"time":"2026-11-24T08:30:01Z"}"#) == nil)
    #expect(GPSDReport.fix(fromLine: #"{"class":"TPV","mode":3,"lat":1,"lon":2}"#) == nil)  // no time
    #expect(GPSDReport.fix(fromLine: #"{"class":"SKY","satellites":[{"PRN":5,"used":true}]}"#) == nil)
    #expect(GPSDReport.fix(fromLine: "not json \"TPV\"") == nil)

    #expect(try GPSDEndpoint(parsing: "127.0.0.1:2948") == GPSDEndpoint(host: "127.0.0.1", port: 2948))
    #expect(try GPSDEndpoint(parsing: "gps.local") == GPSDEndpoint(host: "gps.local", port: 2947))
    #expect(try GPSDEndpoint(parsing: "[::1]:3000") == GPSDEndpoint(host: "::1", port: 3000))
    for bad in ["", ":2947", "host:0", "host:99999", "host:port", "::1:2947", "[::1"] {
      #expect(throws: TrackerError.self, "\(bad)") { try GPSDEndpoint(parsing: bad) }
    }
  }

  @Test(.timeLimit(.minutes(1)))
  func gpsdTPVReportsBecomeFixesAcrossAReconnect() async throws {
    let time = { (second: Int) in "2026-11-24T08:30:0\(second).000Z" }
    let server = try await FakeGPSD.start(sessions: [
      [
        #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyACM0","driver":"u-blox"}]}"#,
        #"{"class":"WATCH","enable":true,"json":true,"nmea":false}"#,
        #"{"class":"SKY","device":"/dev/ttyACM0","satellites":[{"PRN":2,"el":40,"az":120,"ss":38,"used":true}]}"#,
        #"{"class":"TPV","device":"/dev/ttyACM0","mode":1,"time":"\#(time(0))"}"#,
        #"{"class":"TPV","device":"/dev/ttyACM0","mode":3,"time":"\#(time(1))","lat":50.4501,"lon":30.5234,"#
          + #""alt":172.5,"eph":6.5,"epx":3,"epy":4,"speed":1.4,"track":10.5}"#,
        #"{"class":"TPV","device":"/dev/ttyACM0","mode":2,"time":"\#(time(2))","lat":50.4502,"lon":30.5235,"#
          + #""epx":3.5,"epy":2.5}"#,
      ],
      [
        #"{"class":"SKY","device":"/dev/ttyACM0","satellites":[]}"#,
        #"{"class":"TPV","device":"/dev/ttyACM0","mode":3,"time":"\#(time(3))","lat":50.4503,"lon":30.5236,"#
          + #""alt":173,"eph":4,"speed":1.5,"track":360}"#,
      ],
    ])
    let client = GPSDClient(
      endpoint: GPSDEndpoint(host: "127.0.0.1", port: server.port), reconnectDelay: .milliseconds(50),
      logger: Logger(label: "gpsd-test"))
    var fixes: [LocationFix] = []
    for try await fix in client.fixes(defaultAccuracy: 50) {
      fixes.append(fix)
      if fixes.count == 3 { break }
    }
    try await server.shutdown()

    #expect(fixes.map(\.timestamp) == (1...3).map { Timestamp.parseISO8601(time($0))! })
    #expect(fixes.map(\.latitude) == [50.4501, 50.4502, 50.4503])
    #expect(fixes.map(\.longitude) == [30.5234, 30.5235, 30.5236])
    #expect(fixes.map(\.horizontalAccuracy) == [6.5, 3.5, 4])
    #expect(fixes.map(\.altitude) == [172.5, nil, 173])
    #expect(fixes.map(\.speed) == [1.4, nil, 1.5])
    #expect(fixes.map(\.course) == [10.5, nil, 0])
    // Each connection asked gpsd to watch, in JSON.
    #expect(server.commands.count >= 2)
    #expect(server.commands.prefix(2).allSatisfy { $0 == #"?WATCH={"enable":true,"json":true}"# })
  }
}

/// A tiny gpsd on 127.0.0.1 and a port the OS chooses: each connection gets a VERSION line, then, once the client
/// sent its `?WATCH` command, the next session's lines. Every session but the last is then closed (a dropped
/// connection); the last stays open until the client leaves.
final class FakeGPSD: Sendable {
  let port: Int
  private let channel: any Channel
  private let log: CommandLog
  private let task: Task<Void, any Error>

  final class CommandLog: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
  }

  private init(port: Int, channel: any Channel, log: CommandLog, task: Task<Void, any Error>) {
    self.port = port
    self.channel = channel
    self.log = log
    self.task = task
  }

  /// The command lines the clients sent, in order.
  var commands: [String] { log.all }

  static func start(sessions: [[String]]) async throws -> FakeGPSD {
    let (server, port) = try await listenOnLoopback()
    let log = CommandLog()
    let version = #"{"class":"VERSION","release":"3.25","rev":"3.25","proto_major":3,"proto_minor":15}"#
    let task = Task {
      try await server.executeThenClose { connections in
        var index = 0
        for try await connection in connections {
          let lines = index < sessions.count ? sessions[index] : []
          let last = index >= sessions.count - 1
          index += 1
          try? await connection.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: version + "\n"))
            var received = ""
            var iterator = inbound.makeAsyncIterator()  // an inbound stream allows one iterator
            while !received.contains("\n"), var buffer = try await iterator.next() {
              received += buffer.readString(length: buffer.readableBytes) ?? ""
            }
            for line in received.split(separator: "\n") { log.append(String(line)) }
            for line in lines { try await outbound.write(ByteBuffer(string: line + "\n")) }
            if last {
              while try await iterator.next() != nil {}
            } else {
              try await Task.sleep(for: .milliseconds(100))
            }
          }
        }
      }
    }
    return FakeGPSD(port: port, channel: server.channel, log: log, task: task)
  }

  func shutdown() async throws {
    try? await channel.close()
    task.cancel()
    _ = await task.result
  }
}

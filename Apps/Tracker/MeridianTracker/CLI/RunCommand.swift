import ArgumentParser
import DomainKit
import Foundation
import Logging
import MeridianTrackerStore
import NetworkingKit

struct Run: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Record fixes from a source, keep them locally and upload those the reporting policy sends.")

  @OptionGroup var options: StateOptions
  @OptionGroup var server: ServerOption
  @Option(help: "Replay a GPX track.") var gpx: String?
  @Option(help: "Replay a CSV track.") var csv: String?
  @Option(help: "Replay a GeoJSON track.") var geojson: String?
  @Flag(help: "Read JSON fixes, one per line, from standard input.") var stdin = false
  @OptionGroup var live: LiveSourceOptions
  @Option(help: "Replay this many times faster than recorded (0: at once); fixes keep their recorded spacing.")
  var speed: Double = 1
  @Flag(help: "Keep the track's own times instead of moving it to the present.") var keepTimes = false
  @Option(help: "foreground (every fix), background (10 m) or closed (100 m).") var mode: AppState = .foreground
  @Option(help: "high (≤ 10 m), medium (≤ 1 km), low (≤ 3 km) or significant (500 m moves).")
  var accuracy: AccuracyProfile = .high
  @Option(help: "Horizontal accuracy (m) assumed for fixes that carry none, as GPX tracks don't.")
  var defaultAccuracy: Double = 5
  @Flag(help: "Print one JSON line per fix and a JSON summary.") var json = false
  @Option(help: "Fixes per upload request (1…1000).") var batchSize = 500
  @Flag(
    inversion: .prefixedNo,
    help: "Send fixes over the live socket while it is connected (HTTP when it isn't, and for backlogs).")
  var liveSocket = true
  @Option(
    help: "Once the source has ended, stop retrying uploads that failed for this many seconds (the fixes stay queued).")
  var giveUpAfter: Double = 60

  func validate() throws {
    let sources = [gpx != nil, csv != nil, geojson != nil, stdin].filter { $0 }.count + live.count
    guard sources == 1 else {
      throw ValidationError("give exactly one source: --gpx, --csv, --geojson, --stdin, --simulate or --gpsd")
    }
    guard speed >= 0, speed.isFinite else { throw ValidationError("--speed must be 0 or more") }
    guard (1...1000).contains(batchSize) else { throw ValidationError("--batch-size must be between 1 and 1000") }
    guard defaultAccuracy > 0, defaultAccuracy.isFinite else { throw ValidationError("--default-accuracy must be > 0") }
    guard giveUpAfter >= 0, giveUpAfter.isFinite else { throw ValidationError("--give-up-after must be 0 or more") }
  }

  /// The track file to replay, if the source is one.
  var file: (url: URL, format: FixSource.FileFormat)? {
    if let gpx { return (URL(fileURLWithPath: gpx), .gpx) }
    if let csv { return (URL(fileURLWithPath: csv), .csv) }
    if let geojson { return (URL(fileURLWithPath: geojson), .geojson) }
    return nil
  }

  func run() async throws {
    try await reportingErrors {
      let session = try options.session()
      let store = try options.directory.openHistory()
      // A track file is read, and refused when bad, before anything connects.
      let (fixes, track) = try await source(store)
      var logger = Logger(label: "meridian-tracker")
      logger.logLevel = json ? .warning : .info
      let summary: TrackerAgent.Summary
      do {
        summary = try await TrackerConnection.with(servers: try server.servers(for: session)) { connection in
          let client = try connection.client(token: session.token)
          let link = liveSocket ? LiveLink(session: session, client: client) : nil
          await link?.start()
          let agent = TrackerAgent(
            store: store,
            uploader: Uploader(
              store: store, client: client, deviceID: session.deviceId, batchSize: batchSize, live: link),
            policy: ReportingPolicy(appState: mode, profile: accuracy), logger: logger,
            giveUpAfter: .milliseconds(Int64(giveUpAfter * 1000)))
          let json = self.json
          let result: Result<TrackerAgent.Summary, any Error>
          do {
            result = .success(try await agent.run(fixes, track: track) { Self.print($0, $1, json: json) })
          } catch {
            result = .failure(error)
          }
          await link?.stop()
          return try result.get()
        }
      } catch {
        if Task.isCancelled { throw Interrupted(message: try await leftBehind(store)) }
        throw ValidationOrFailure(message: "\(Self.sentence(error)); \(try await leftBehind(store))")
      }
      let queued = try await Task { try await store.counts().queued }.value
      printSummary(summary, stillQueued: queued)
      if summary.interrupted {
        throw Interrupted(
          message: "\(summary.recorded) new fixes recorded, \(summary.uploaded) uploaded; "
            + (try await leftBehind(store)))
      }
    }
  }

  /// The source's fixes and, for a whole track (a file or a simulation), whether a fix is one of the track's.
  func source(_ store: TrackerStore) async throws -> (
    AsyncThrowingStream<LocationFix, any Error>, (@Sendable (LocationFix) -> Bool)?
  ) {
    let replay: TrackReplay
    if let route = try live.simulatedRoute() {
      replay = FixSource.simulation(route, speed: speed)
    } else if let (url, format) = file {
      let track = try FixSource.read(url, format: format)
      guard !track.isEmpty else { throw TrackerError.badSource("\(url.lastPathComponent) holds no fixes with a time") }
      replay = try await TrackReplay.prepare(track, speed: speed, keepTimes: keepTimes, history: store)
      if !json { Console.line(Self.describe(replay, name: url.lastPathComponent)) }
    } else if let gpsd = live.gpsd {
      return (FixSource.gpsd(try GPSDEndpoint(parsing: gpsd)).fixes(defaultAccuracy: defaultAccuracy), nil)
    } else {
      return (FixSource.standardInput.fixes(defaultAccuracy: defaultAccuracy), nil)
    }
    return (replay.fixes(defaultAccuracy: defaultAccuracy), { replay.contains($0) })
  }

  /// Where a replayed track lands in time, and what the history holds of it already.
  static func describe(_ replay: TrackReplay, name: String) -> String {
    guard let span = replay.span, let first = replay.track.first, let last = replay.track.last else {
      return "Replaying \(name): no fixes."
    }
    let times = "\(Timestamp.formatISO8601(span.lowerBound)) … \(Timestamp.formatISO8601(span.upperBound))"
    let count = replay.track.count
    let known = count - replay.newCount
    let already =
      known == 0
      ? "" : known == count ? "; all \(count) are in the history already" : "; \(known) are in the history already"
    // Paced from the first fix the history doesn't hold.
    let pacedFrom = replay.track.first { !replay.recorded.contains($0.timestamp + replay.offset) } ?? last
    let pace =
      replay.speed == 0
      ? "at once" : "in about \(duration(Double(last.timestamp - pacedFrom.timestamp) / 1000 / replay.speed))"
    switch replay.placement {
    case .ownTimes:
      return "Replaying \(name) with its own times, \(times): \(count) fixes\(already); \(pace)."
    case .new:
      return
        "Replaying \(name): \(count) fixes recorded over \(duration(Double(last.timestamp - first.timestamp) / 1000)), "
        + "moved to \(times) with their spacing kept; \(pace)."
    case .remembered(let firstReplayed):
      return "Replaying \(name) at the times it got when first replayed (\(Timestamp.formatISO8601(firstReplayed))), "
        + "\(times): \(count) fixes\(already)" + (known == count ? "." : "; \(pace).")
    }
  }

  /// `2 h 3 min`, `6 min 39 s`, `20 s`, `0.4 s`.
  static func duration(_ seconds: Double) -> String {
    if seconds < 10 { return String(format: "%.1f s", seconds) }
    let total = Int(seconds.rounded())
    let (hours, minutes, rest) = (total / 3600, total / 60 % 60, total % 60)
    if hours > 0 { return "\(hours) h \(minutes) min" }
    if minutes > 0 { return "\(minutes) min \(rest) s" }
    return "\(rest) s"
  }

  /// One line per fix.
  static func print(_ fix: LocationFix, _ outcome: TrackerAgent.Outcome, json: Bool) {
    if json {
      Console.line(
        #"{"timestamp":\#(fix.timestamp),"latitude":\#(fix.latitude),"longitude":\#(fix.longitude),"sent":\#(outcome == .queued),"new":\#(outcome != .duplicate)}"#
      )
      return
    }
    let note =
      switch outcome {
      case .queued: ""
      case .kept(let why): " (kept locally: \(why))"
      case .duplicate: " (in the history already)"
      }
    Console.line(
      String(
        format: "%@ %.6f %.6f%@", Timestamp.formatISO8601(fix.timestamp), fix.latitude, fix.longitude, note))
  }

  func printSummary(_ summary: TrackerAgent.Summary, stillQueued: Int) {
    if json {
      Console.line(
        #"{"received":\#(summary.received),"recorded":\#(summary.recorded),"duplicates":\#(summary.duplicates),"queued":\#(summary.queued),"uploaded":\#(summary.uploaded),"uploadedOverSocket":\#(summary.uploadedOverSocket),"stillQueued":\#(stillQueued),"interrupted":\#(summary.interrupted)}"#
      )
      return
    }
    Console.line(
      "received \(summary.received), recorded \(summary.recorded), queued \(summary.queued), uploaded \(summary.uploaded)"
        + " (\(summary.uploadedOverSocket) over the live socket)"
        + (summary.duplicates > 0 ? "; \(summary.duplicates) were in the history already" : ""))
    if summary.interrupted { return }
    if summary.received > 0, summary.recorded == 0, summary.duplicates == summary.received {
      Console.line("Nothing new: every fix of this source was recorded by an earlier run.")
    }
    if stillQueued == 0 {
      Console.line("Nothing is queued: every fix the reporting policy sent is on the server.")
    }
  }

  /// What stays behind after a run that stopped early.
  func leftBehind(_ store: TrackerStore) async throws -> String {
    let queued = try await Task { try await store.counts().queued }.value
    return queued == 0
      ? "nothing is queued."
      : "\(queued) fixes stay queued in \(options.directory.url.path); the next `run` uploads them."
  }

  /// An error of a run, as the start of a sentence.
  static func sentence(_ error: any Error) -> String {
    switch error {
    case let error as TrackerError: error.description
    case let error as NetworkingError: MeridianTracker.sentence(for: error)
    default: "\(error)"
    }
  }
}

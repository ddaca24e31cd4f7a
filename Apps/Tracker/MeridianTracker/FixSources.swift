import DomainKit
import Foundation
import MeridianTrackerStore

/// Where the agent's fixes come from.
public enum FixSource: Sendable {
  /// A recorded track (GPX, CSV or GeoJSON) replayed in time order (``TrackReplay``).
  case replay(URL, format: FileFormat, speed: Double, keepTimes: Bool)
  /// JSON lines on standard input, one `LocationFix` object per line.
  case standardInput
  /// A simulated walk or drive, paced `speed` times faster than real time (0 = no waiting). Fixes are one
  /// interval apart on the simulated clock, placed like a replay (``TrackReplay/offset(first:last:speed:now:)``):
  /// in real time the trip starts now; faster it ends when the run ends, at once it ends now.
  case simulate(SimulatedRoute, speed: Double)
  /// A GPS read through gpsd (its JSON protocol's TPV reports), reconnecting whenever the connection drops.
  case gpsd(GPSDEndpoint)

  /// The track file formats a replay reads.
  public enum FileFormat: String, Sendable, CaseIterable {
    case gpx, csv, geojson
  }

  /// The fixes, as they become due. A replay reads the whole file first, then keeps every fix's recorded spacing
  /// and only paces it (``TrackReplay``): `speed` times faster than recorded (0 = no waiting), the track shifted so
  /// that it ends no later than now unless `keepTimes`. `history`, when given, remembers where a track was placed, so
  /// that replaying it again stores nothing new.
  ///
  /// - Parameter defaultAccuracy: the horizontal accuracy given to fixes that carry none (GPX and many CSV files
  ///   don't), so that the reporting policy can judge them.
  public func fixes(defaultAccuracy: Double?, history: TrackerStore? = nil) -> AsyncThrowingStream<
    LocationFix, any Error
  > {
    switch self {
    case .replay(let url, let format, let speed, let keepTimes):
      return AsyncThrowingStream { continuation in
        let task = Task {
          do {
            let replay = try await TrackReplay.prepare(
              try Self.read(url, format: format), speed: speed, keepTimes: keepTimes, history: history)
            try await replay.emit(defaultAccuracy: defaultAccuracy) { continuation.yield($0) }
            continuation.finish()
          } catch {
            continuation.finish(throwing: error)
          }
        }
        continuation.onTermination = { _ in task.cancel() }
      }
    case .standardInput:
      return AsyncThrowingStream { continuation in
        let task = Task.detached {
          var number = 0
          while let line = readLine(strippingNewline: true) {
            number += 1
            if Task.isCancelled { break }
            guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
            do {
              var fix = try JSONDecoder().decode(LocationFix.self, from: Data(line.utf8))
              if fix.horizontalAccuracy == nil { fix.horizontalAccuracy = defaultAccuracy }
              continuation.yield(fix)
            } catch {
              continuation.finish(
                throwing: TrackerError.badSource("standard input, line \(number): \(Self.reason(error))"))
              return
            }
          }
          continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
      }
    case .simulate(let route, let speed):
      return Self.simulation(route, speed: speed).fixes(defaultAccuracy: defaultAccuracy)
    case .gpsd(let endpoint):
      return GPSDClient(endpoint: endpoint).fixes(defaultAccuracy: defaultAccuracy)
    }
  }

  /// What was wrong with a line of JSON, in a few words: the field and the decoder's reason.
  static func reason(_ error: any Error) -> String {
    func field(_ path: [any CodingKey]) -> String { path.map(\.stringValue).joined(separator: ".") }
    func clause(_ context: DecodingError.Context) -> String {
      context.debugDescription.hasSuffix(".") ? String(context.debugDescription.dropLast()) : context.debugDescription
    }
    switch error {
    case DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty:
      return "not a JSON object with timestamp, latitude and longitude (\(clause(context)))"
    case DecodingError.keyNotFound(let key, let context):
      return "'\(field(context.codingPath + [key]))' is missing"
    case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
      DecodingError.valueNotFound(_, let context):
      return "'\(field(context.codingPath))': \(clause(context))"
    default:
      return "\(error)"
    }
  }

  /// Every fix of a track file.
  public static func read(_ url: URL, format: FileFormat) throws -> [LocationFix] {
    guard FileManager.default.isReadableFile(atPath: url.path) else {
      throw TrackerError.badSource("cannot read \(url.path)")
    }
    do {
      switch format {
      case .gpx:
        var fixes: [LocationFix] = []
        try GPX.read(contentsOf: url) { fixes.append($0.fix) }
        return fixes
      case .csv:
        var fixes: [LocationFix] = []
        try CSVReader.read(contentsOf: url) { fixes.append($0) }
        return fixes
      case .geojson:
        return try GeoJSON.read(data: Data(contentsOf: url))
      }
    } catch let error as FormatError {
      throw TrackerError.badSource("\(url.lastPathComponent): \(error)")
    }
  }

  /// A simulated trip as a replay that starts now: a new trip every time, one fix a second of simulated time,
  /// paced like a replay and never dated after the moment it is emitted.
  public static func simulation(
    _ route: SimulatedRoute, speed: Double, now: Int64 = Timestamp.milliseconds(Date())
  ) -> TrackReplay {
    let trip = route.fixes(start: now)
    let offset = TrackReplay.offset(first: now, last: trip.last?.timestamp ?? now, speed: speed, now: now)
    return TrackReplay(track: trip, speed: speed, offset: offset, placement: .new)
  }
}

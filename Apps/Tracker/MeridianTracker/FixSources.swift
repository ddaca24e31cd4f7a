import DomainKit
import Foundation

/// Where the agent's fixes come from.
public enum FixSource: Sendable {
  /// A recorded track (GPX, CSV or GeoJSON) replayed in time order.
  case replay(URL, format: FileFormat, speed: Double, keepTimes: Bool)
  /// JSON lines on standard input, one `LocationFix` object per line.
  case standardInput
  /// A simulated walk or drive, paced `speed` times faster than real time (0 = no waiting). Fixes are one
  /// interval apart on the simulated clock, which is set so that no fix is in the future: in real time the trip
  /// starts now; faster (or at once) it ends when the run ends.
  case simulate(SimulatedRoute, speed: Double)
  /// A GPS read through gpsd (its JSON protocol's TPV reports), reconnecting whenever the connection drops.
  case gpsd(GPSDEndpoint)

  /// The track file formats a replay reads.
  public enum FileFormat: String, Sendable, CaseIterable {
    case gpx, csv, geojson
  }

  /// The fixes, as they become due. A replay sleeps between fixes (`speed` times faster than recorded; 0 = no
  /// waiting) and, unless `keepTimes`, moves the track's times to the present: starting now (compressed by
  /// `speed`), or ending now when replayed at once.
  ///
  /// - Parameter defaultAccuracy: the horizontal accuracy given to fixes that carry none (GPX and many CSV files
  ///   don't), so that the reporting policy can judge them.
  public func fixes(defaultAccuracy: Double?) -> AsyncThrowingStream<LocationFix, any Error> {
    switch self {
    case .replay(let url, let format, let speed, let keepTimes):
      return AsyncThrowingStream { continuation in
        let task = Task {
          do {
            let track = try Self.read(url, format: format).sorted { $0.timestamp < $1.timestamp }
            try await Self.replay(
              track, speed: speed, keepTimes: keepTimes, defaultAccuracy: defaultAccuracy
            ) { continuation.yield($0) }
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
              continuation.finish(throwing: TrackerError.badSource("standard input, line \(number): \(error)"))
              return
            }
          }
          continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
      }
    case .simulate(let route, let speed):
      return AsyncThrowingStream { continuation in
        let task = Task {
          do {
            let now = Timestamp.milliseconds(Date())
            let early = speed == 0 ? 1 : max(0, 1 - 1 / speed)  // the share of the trip that is in the past
            let start = now - Int64((route.duration * 1000 * early).rounded())
            try await Self.replay(
              route.fixes(start: start), speed: speed, keepTimes: true, defaultAccuracy: defaultAccuracy
            ) { continuation.yield($0) }
            continuation.finish()
          } catch {
            continuation.finish(throwing: error)
          }
        }
        continuation.onTermination = { _ in task.cancel() }
      }
    case .gpsd(let endpoint):
      return GPSDClient(endpoint: endpoint).fixes(defaultAccuracy: defaultAccuracy)
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

  /// Calls `emit` with each fix of `track` (sorted by time) when it is due.
  static func replay(
    _ track: [LocationFix], speed: Double, keepTimes: Bool, defaultAccuracy: Double?,
    emit: (LocationFix) -> Void
  ) async throws {
    guard let first = track.first, let last = track.last else { return }
    let start = ContinuousClock.now
    // Replayed in time, the track starts now; replayed at once, it ends now (a walk just finished).
    let now = Timestamp.milliseconds(Date())
    let startTime = speed > 0 ? now : now - (last.timestamp - first.timestamp)
    for var fix in track {
      let offset = Double(fix.timestamp - first.timestamp) / 1000  // seconds into the track
      if speed > 0 {
        try await Task.sleep(until: start + .milliseconds(Int64(offset / speed * 1000)), clock: .continuous)
      }
      if !keepTimes { fix.timestamp = startTime + Int64((speed > 0 ? offset / speed : offset) * 1000) }
      if fix.horizontalAccuracy == nil { fix.horizontalAccuracy = defaultAccuracy }
      fix.kind = .movement
      emit(fix)
    }
  }
}

import DomainKit
import Foundation
import MeridianTrackerStore

/// A recorded track replayed in time order. A replay changes only the pacing: every fix keeps the spacing it was
/// recorded with, and the whole track is shifted by one ``offset`` so that it ends no later than now — in real time
/// or slower it starts now, faster it ends when the replay ends, at once (`speed` 0) it ends now. With `keepTimes`
/// the file's own times are kept.
///
/// The history remembers where it placed each track (``prepare(_:speed:keepTimes:history:now:)``), so replaying the
/// same track again gives every fix the same time as before: the history and the server store nothing new, and a
/// replay that was interrupted goes on where it stopped. A new track never takes a time the history holds already.
public struct TrackReplay: Sendable {
  /// How the track's times were chosen.
  public enum Placement: Sendable, Hashable {
    /// The file's own times (`--keep-times`).
    case ownTimes
    /// Shifted to the present for this replay (the track had not been replayed into this history before).
    case new
    /// Shifted as when it was first replayed into this history, at `firstReplayed` (UTC ms).
    case remembered(firstReplayed: Int64)
  }

  /// The fixes as recorded, oldest first.
  public let track: [LocationFix]
  /// How many times faster than recorded (0: at once).
  public let speed: Double
  /// Milliseconds added to every fix's time.
  public let offset: Int64
  /// How ``offset`` was chosen.
  public let placement: Placement
  /// The shifted times the local history already holds: those fixes are emitted without waiting.
  public let recorded: Set<Int64>
  /// The fixes' positions by shifted time.
  private let placed: [Int64: (latitude: Double, longitude: Double)]

  /// A replay of `track` (sorted here) shifted by `offset`.
  public init(
    track: [LocationFix], speed: Double, offset: Int64, placement: Placement, recorded: Set<Int64> = []
  ) {
    self.track = track.sorted { $0.timestamp < $1.timestamp }
    self.speed = speed
    self.offset = offset
    self.placement = placement
    self.recorded = recorded
    placed = Dictionary(
      self.track.map { ($0.timestamp + offset, (latitude: $0.latitude, longitude: $0.longitude)) },
      uniquingKeysWith: { first, _ in first })
  }

  /// The first and last shifted time, nil for an empty track.
  public var span: ClosedRange<Int64>? {
    guard let first = track.first, let last = track.last else { return nil }
    return (first.timestamp + offset)...(last.timestamp + offset)
  }

  /// Whether `fix` is one of this track's fixes as placed (same time and position).
  public func contains(_ fix: LocationFix) -> Bool {
    placed[fix.timestamp].map { $0.latitude == fix.latitude && $0.longitude == fix.longitude } ?? false
  }

  /// The fixes of the track the history doesn't hold yet.
  public var newCount: Int { track.count(where: { !recorded.contains($0.timestamp + offset) }) }

  /// The offset that places a track recorded from `first` to `last` (UTC ms) for a replay at `speed` starting at
  /// `now`, so that no fix is dated after the moment it is replayed: at `speed` ≥ 1 the track ends when the replay
  /// ends (`now + duration / speed`), slower it starts now, and at once (0) it ends now.
  public static func offset(first: Int64, last: Int64, speed: Double, now: Int64) -> Int64 {
    let duration = Double(last - first)
    // The share of the track that lies before `now`.
    let past = speed == 0 ? 1 : max(0, 1 - 1 / speed)
    return now - first - Int64((duration * past).rounded(.up))
  }

  /// Places `track` for a replay into `history`: with its own times, as the history remembers placing the same
  /// track before, or (remembered from now on) shifted to the present.
  ///
  /// - Parameter now: the time the replay starts, UTC ms.
  public static func prepare(
    _ track: [LocationFix], speed: Double, keepTimes: Bool, history: TrackerStore?,
    now: Int64 = Timestamp.milliseconds(Date())
  ) async throws -> TrackReplay {
    let sorted = track.sorted { $0.timestamp < $1.timestamp }
    guard let first = sorted.first, let last = sorted.last else {
      return TrackReplay(track: [], speed: speed, offset: 0, placement: keepTimes ? .ownTimes : .new)
    }
    var offset: Int64 = 0
    var placement = Placement.ownTimes
    if !keepTimes {
      let key = "replay_offset:" + Self.identity(of: sorted)
      if let stored = try await history?.value(key), let remembered = Remembered(stored) {
        offset = remembered.offset
        placement = .remembered(firstReplayed: remembered.replayed)
      } else {
        offset = Self.offset(first: first.timestamp, last: last.timestamp, speed: speed, now: now)
        placement = .new
        if let history {
          // The history holds one fix per time: a track placed over another one (replayed just before) moves back by
          // a millisecond at a time until none of its times is taken, so that every fix of both is kept.
          let taken = try Self.times(in: history, first.timestamp + offset - 1000, last.timestamp + offset)
          var moved = 0
          while moved < 1000, sorted.contains(where: { taken.contains($0.timestamp + offset) }) {
            offset -= 1
            moved += 1
          }
        }
        try await history?.setValue(Remembered(offset: offset, replayed: now).text, for: key)
      }
    }
    var recorded: Set<Int64> = []
    if let history, placement != .new {
      recorded = try Self.times(in: history, first.timestamp + offset, last.timestamp + offset)
    }
    return TrackReplay(track: sorted, speed: speed, offset: offset, placement: placement, recorded: recorded)
  }

  /// The times the history holds from `first` to `last`, inclusive.
  static func times(in history: TrackerStore, _ first: Int64, _ last: Int64) throws -> Set<Int64> {
    let range = TimeRange(start: first, end: last + 1)
    return Set(try history.fixes(matching: HistoryFilter(range: range), newestFirst: false).map(\.timestamp))
  }

  /// The placement kept in the history: `<offset> <replayed>`.
  struct Remembered {
    var offset: Int64
    var replayed: Int64

    init(offset: Int64, replayed: Int64) {
      self.offset = offset
      self.replayed = replayed
    }

    init?(_ text: String) {
      let parts = text.split(separator: " ").compactMap { Int64($0) }
      guard parts.count == 2 else { return nil }
      (offset, replayed) = (parts[0], parts[1])
    }

    var text: String { "\(offset) \(replayed)" }
  }

  /// A name for the track's content (times and positions, not the file's name or path): FNV-1a, 128 bits, and the
  /// number of fixes.
  static func identity(of track: [LocationFix]) -> String {
    var first: UInt64 = 0xcbf2_9ce4_8422_2325
    var second: UInt64 = 0x6c62_272e_07bb_0142
    func mix(_ value: UInt64) {
      withUnsafeBytes(of: value.littleEndian) { bytes in
        for byte in bytes {
          first = (first ^ UInt64(byte)) &* 0x100_0000_01b3
          second = (second ^ UInt64(byte)) &* 0x100_0000_01b3
        }
      }
    }
    for fix in track {
      mix(UInt64(bitPattern: fix.timestamp))
      mix(fix.latitude.bitPattern)
      mix(fix.longitude.bitPattern)
    }
    return "\(String(first, radix: 16))\(String(second, radix: 16))-\(track.count)"
  }

  /// The fixes, each when it is due: `speed` times faster than recorded, counted from the first fix the history
  /// doesn't hold yet (those it holds come at once), and a shifted fix never before its own time.
  public func fixes(defaultAccuracy: Double?) -> AsyncThrowingStream<LocationFix, any Error> {
    AsyncThrowingStream { continuation in
      let task = Task {
        do {
          try await emit(defaultAccuracy: defaultAccuracy) { continuation.yield($0) }
          continuation.finish()
        } catch {
          continuation.finish(throwing: error)
        }
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }

  /// Calls `body` with each fix when it is due.
  func emit(defaultAccuracy: Double?, _ body: (LocationFix) -> Void) async throws {
    let start = ContinuousClock.now
    var reference: Int64?  // the recorded time of the first fix that is paced
    for var fix in track {
      let recordedTime = fix.timestamp
      fix.timestamp = recordedTime + offset
      if !recorded.contains(fix.timestamp) {
        if speed > 0 {
          let origin = reference ?? recordedTime
          reference = origin
          let due = Double(recordedTime - origin) / speed
          try await Task.sleep(until: start + .milliseconds(Int64(due.rounded(.up))), clock: .continuous)
        }
        if placement != .ownTimes {
          // A remembered placement may lie ahead of a replay that goes on soon after an interrupted one.
          let ahead = fix.timestamp - Timestamp.milliseconds(Date())
          if ahead > 0 { try await Task.sleep(for: .milliseconds(ahead)) }
        }
      }
      try Task.checkCancellation()
      if fix.horizontalAccuracy == nil { fix.horizontalAccuracy = defaultAccuracy }
      fix.kind = .movement
      body(fix)
    }
  }
}

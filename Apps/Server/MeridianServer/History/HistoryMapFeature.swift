import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

/// `GET /v1/history/map`: the caller's history in a view at a zoom, in bounded size whatever the history's. It reads
/// at most ``readLimit`` + 1 fixes of the view (oldest first); when there are no more than that, it splits them into
/// tracks (per device, at time gaps) and simplifies each with GeoKit's RDP at the zoom's resolution, and answers the
/// tracks when they keep at most ``vertexLimit`` vertices. Otherwise — too many fixes or vertices for the screen — it
/// answers the fixes counted per geohash cell of a precision chosen from the zoom (at most ``cellLimit`` cells, the
/// fullest).
struct HistoryMapFeature: Sendable {
  let environment: ServerEnvironment

  /// The most fixes of a view read to draw them as tracks.
  static let readLimit = 20_000
  /// The most vertices answered as tracks.
  static let vertexLimit = 2_000
  /// The most cells answered.
  static let cellLimit = 2_000
  /// A longer gap (ms) between two fixes of the view ends a track: the device was off, or out of the view.
  static let trackGap: Int64 = 5 * 60_000
  /// The simplification tolerance in pixels.
  static let tolerancePixels = 1.5
  /// The width in pixels a cell should at least have on screen.
  static let cellPixels = 64.0

  func register(on routes: RouteRegistrar) {
    routes.on(API.historyMap) { call in try await map(call.authenticated(), call.parameters) }
  }

  func map(_ user: UserID, _ query: HistoryMapQuery) async throws -> HistoryMap {
    let filter = query.history.filter(now: Timestamp.date(environment.now()))
    let tolerance =
      Self.metresPerPixel(zoom: query.zoom, latitude: (query.box.south + query.box.north) / 2)
      * Self.tolerancePixels
    let fixes = try await environment.store.fixes(
      owner: user, filter: filter, box: query.box, limit: Self.readLimit + 1)
    if fixes.count <= Self.readLimit {
      let tracks = Self.tracks(fixes).map { Self.simplified($0, tolerance: tolerance) }
      if tracks.reduce(0, { $0 + $1.points.count }) <= Self.vertexLimit {
        return HistoryMap(tracks: tracks, cells: [], precision: nil, tolerance: tolerance)
      }
    }
    let precision = Self.precision(zoom: query.zoom)
    let cells = try await environment.store.clusters(
      owner: user, filter: filter, precision: precision, box: query.box)
    return HistoryMap(
      tracks: [], cells: Array(cells.prefix(Self.cellLimit)), precision: precision, tolerance: tolerance)
  }

  /// Metres per pixel of a 256-pixel Web Mercator tile at `zoom` and `latitude`.
  static func metresPerPixel(zoom: Int, latitude: Double) -> Double {
    156_543.034 * cos(latitude * .pi / 180) / pow(2, Double(zoom))
  }

  /// The longest geohash (2…6 characters, as the store groups by) whose cells are at least ``cellPixels`` wide at
  /// `zoom`.
  static func precision(zoom: Int) -> Int {
    let degreesWanted = 360 * cellPixels / (256 * pow(2, Double(zoom)))
    var precision = 2
    // A geohash of n characters has ⌈5n/2⌉ longitude bits.
    while precision < 6, 360 / pow(2, Double((5 * (precision + 1) + 1) / 2)) >= degreesWanted { precision += 1 }
    return precision
  }

  /// The fixes (oldest first) as tracks: per device, split where two fixes are more than ``trackGap`` apart.
  static func tracks(_ fixes: [LocationFix]) -> [[LocationFix]] {
    var open: [DeviceID?: Int] = [:]
    var tracks: [[LocationFix]] = []
    for fix in fixes {
      if let index = open[fix.deviceID], let last = tracks[index].last, fix.timestamp - last.timestamp <= trackGap {
        tracks[index].append(fix)
      } else {
        open[fix.deviceID] = tracks.count
        tracks.append([fix])
      }
    }
    return tracks
  }

  /// The track simplified by RDP within `tolerance` metres; every vertex is one of its fixes.
  static func simplified(_ track: [LocationFix], tolerance: Double) -> HistoryMapTrack {
    let kept = Track.simplify(track.map(\.coordinate), tolerance: tolerance)
    // `kept` is a subsequence of the track's coordinates: match each to the next fix at that position.
    var points: [HistoryMapPoint] = []
    points.reserveCapacity(kept.count)
    var index = 0
    for coordinate in kept {
      while index < track.count, track[index].coordinate != coordinate { index += 1 }
      guard index < track.count else { break }
      let fix = track[index]
      points.append(HistoryMapPoint(latitude: fix.latitude, longitude: fix.longitude, timestamp: fix.timestamp))
      index += 1
    }
    return HistoryMapTrack(deviceId: track.first?.deviceID, points: points)
  }
}

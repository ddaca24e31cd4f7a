import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

/// `GET /v1/history/map`: the caller's history in a view at a zoom, in bounded size whatever the history's. It first
/// counts the view's fixes per geohash cell of a length chosen from the zoom (``cells(_:_:precision:box:)``: from the
/// per-day and per-hour counts the store keeps, so the time grows with the cells and days, not the fixes). When the
/// cells that meet the view hold at most ``readLimit`` fixes, it reads those of the view (through the store's geohash
/// index), splits them into tracks (per device, at time gaps) and simplifies each with GeoKit's RDP at the zoom's
/// resolution, and answers the tracks when they keep at most ``vertexLimit`` vertices. Otherwise — too many fixes or
/// vertices for the screen — it answers the cells (at most ``cellLimit``, the fullest).
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
    let precision = Self.precision(zoom: query.zoom)
    let cells = try await self.cells(user, filter, precision: precision, box: query.box)
    let counted = cells.reduce(0) { $0 + $1.count }
    if counted <= Self.readLimit {
      let fixes = try await environment.store.fixPositions(
        owner: user, filter: filter, box: query.box, limit: Self.readLimit + 1)
      let tracks = Self.tracks(fixes).map { Self.simplified($0, tolerance: tolerance) }
      if fixes.count <= Self.readLimit, tracks.reduce(0, { $0 + $1.points.count }) <= Self.vertexLimit {
        return HistoryMap(tracks: tracks, cells: [], precision: nil, tolerance: tolerance, fixes: fixes.count)
      }
    }
    return HistoryMap(
      tracks: [], cells: Array(cells.prefix(Self.cellLimit)), precision: precision, tolerance: tolerance,
      fixes: counted)
  }

  /// The fixes of `filter` counted per geohash cell of `precision`, of the cells that meet `box`, the fullest first:
  /// the whole UTC days of the period from the store's per-day counts, the whole hours left at its ends from the
  /// per-hour counts (``HistoryCells/periods(hours:)``), the parts of an hour at its ends from the fixes themselves
  /// (those inside `box`); a period without an end is whole days (``HistoryCells/wholeHours(of:)``). A filter the
  /// counts don't keep (accuracy, kinds) is counted from the fixes.
  func cells(_ user: UserID, _ filter: HistoryFilter, precision: Int, box: BoundingBox) async throws
    -> [HistoryCluster]
  {
    let store = environment.store
    let hour = HistoryCells.hour
    let (start, end) = (filter.range.start, filter.range.end)
    let hours = HistoryCells.wholeHours(of: filter.range)
    guard filter.minimumAccuracy == nil, filter.kinds.isEmpty, !hours.isEmpty else {
      return try await store.clusters(owner: user, filter: filter, precision: precision, box: box)
    }
    let ranges = HistoryCells.ranges(covering: box, maxLength: precision)
    var parts: [[HistoryCluster]] = []
    for (span, periods) in HistoryCells.periods(hours: hours) {
      parts.append(
        try await store.countedClusters(
          owner: user, precision: precision, span: span, periods: periods, ranges: ranges
        ).filter { HistoryCells.cell($0.geohash, meets: box) })
    }
    for edge in [start.map { ($0, hours.lowerBound * hour) }, end.map { (hours.upperBound * hour, $0) }] {
      guard let (from, to) = edge, from < to else { continue }
      var part = filter
      part.range = TimeRange(start: from, end: to)
      parts.append(try await store.clusters(owner: user, filter: part, precision: precision, box: box))
    }
    return parts.count == 1 ? parts[0] : Self.merged(parts.flatMap { $0 })
  }

  /// Cells of the same geohash added up (their mean positions weighted by their counts), the fullest first.
  static func merged(_ cells: [HistoryCluster]) -> [HistoryCluster] {
    var sums: [String: (count: Int, latitude: Double, longitude: Double)] = [:]
    for cell in cells {
      let sum = sums[cell.geohash] ?? (0, 0, 0)
      sums[cell.geohash] = (
        sum.count + cell.count, sum.latitude + cell.latitude * Double(cell.count),
        sum.longitude + cell.longitude * Double(cell.count)
      )
    }
    return sums.map { cell, sum in
      HistoryCluster(
        geohash: cell, count: sum.count, latitude: sum.latitude / Double(sum.count),
        longitude: sum.longitude / Double(sum.count))
    }.sorted { ($0.count, $1.geohash) > ($1.count, $0.geohash) }
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

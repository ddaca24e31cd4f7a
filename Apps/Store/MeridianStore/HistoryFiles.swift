import DomainKit
import Foundation
import MeridianAPI

/// A person's whole history read from a store and written as a file: what `GET /v1/history/export` and
/// `meridian-admin history export` share.
public enum HistoryFiles {
  /// Fixes read per query while collecting a whole history.
  public static let pageSize = 5000

  /// Every fix of `owner` matching `filter`, oldest first, read in pages.
  ///
  /// - Throws: 413 `body_too_large` when more than `maximum` fixes match.
  public static func fixes(
    of owner: UserID, matching filter: HistoryFilter, store: any MeridianStore, maximum: Int = .max
  ) async throws -> [LocationFix] {
    var newestFirst: [LocationFix] = []
    var cursor: HistoryCursor?
    while true {
      let page = try await store.history(owner: owner, filter: filter, limit: pageSize, before: cursor)
      newestFirst += page.map(\.fix)
      guard newestFirst.count <= maximum else {
        throw APIError(
          status: 413, code: .bodyTooLarge,
          message: "More than \(maximum) fixes match; narrow the time range (from, to or preset).")
      }
      guard page.count == pageSize, let last = page.last else { break }
      cursor = last.cursor
    }
    return newestFirst.reversed()
  }

  /// The fixes as a file: GPX with one track per device, CSV, or GeoJSON points.
  public static func document(
    _ fixes: [LocationFix], format: HistoryExportFormat, creator: String = "Meridian"
  ) -> String {
    switch format {
    case .gpx:
      var order: [DeviceID?] = []
      var byDevice: [DeviceID?: [LocationFix]] = [:]
      for fix in fixes {
        if byDevice[fix.deviceID] == nil { order.append(fix.deviceID) }
        byDevice[fix.deviceID, default: []].append(fix)
      }
      let tracks = order.map { device in
        GPXTrack(name: device?.rawValue, segments: [byDevice[device] ?? []])
      }
      return GPX.document(tracks: tracks, creator: creator)
    case .csv:
      return CSVFormat.document(fixes)
    case .geojson:
      return GeoJSON.pointCollection(fixes)
    }
  }
}

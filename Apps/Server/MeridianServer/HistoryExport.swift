import DomainKit
import Foundation
import MeridianAPI

/// `GET /v1/history/visits` and `GET /v1/history/export`: the caller's filtered history read in full, oldest first.
/// The admin CLI's `history export` uses the same reading and writing.
public struct HistoryExport: Sendable {
  let environment: ServerEnvironment

  /// Fixes read per query while collecting a whole history.
  static let pageSize = 5000
  /// The most fixes one export or visit detection reads over HTTP; narrow the filters beyond that.
  public static let maximumFixes = 2_000_000

  func register(on routes: RouteRegistrar) {
    routes.on(API.historyVisits) { call in
      let fixes = try await allFixes(call.authenticated(), call.parameters)
      return VisitList(visits: VisitDetector().visits(in: fixes))
    }
    routes.onRaw(API.historyExport) { call in
      let format = call.parameters.format
      let fixes = try await allFixes(call.authenticated(), call.parameters.history)
      return RouteRegistrar.RawBody(
        contentType: format.contentType, filename: "meridian-history.\(format.rawValue)",
        data: Data(Self.document(fixes, format: format).utf8))
    }
  }

  /// Every fix of the caller matching the filters, oldest first.
  func allFixes(_ owner: UserID, _ query: HistoryQuery) async throws -> [LocationFix] {
    let filter = query.filter(now: Timestamp.date(environment.now()))
    return try await Self.fixes(of: owner, matching: filter, store: environment.store, maximum: Self.maximumFixes)
  }

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

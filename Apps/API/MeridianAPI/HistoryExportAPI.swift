import DomainKit
import Foundation
import NetworkingKit

extension API {
  /// `GET /v1/history/visits`: the stays (at least 5 minutes within 100 m, DomainKit's `VisitDetector`) detected in
  /// the caller's filtered history, oldest first, with the caller's corrections applied, and their home and work (set,
  /// else proposed from these stays, each in its town's local time, else in the query's time zone).
  public static let historyVisits = Endpoint<HistoryQuery, NoBody, VisitList>(
    .get, "/v1/history/visits", query: { $0.queryItems })
  /// `GET /v1/history/export?format=gpx|csv|geojson`: the caller's filtered history as a file (GPX 1.1 tracks split
  /// by device, CSV with DomainKit's header, or a GeoJSON point collection), oldest first.
  public static let historyExport = Endpoint<HistoryExportQuery, NoBody, Data>(
    .get, "/v1/history/export", query: { $0.queryItems }, body: .none, response: .raw)
}

/// `GET /v1/history/visits`.
public struct VisitList: Sendable, Hashable, Codable {
  /// The visits, oldest first, with the caller's corrections applied.
  public var visits: [Visit]
  /// The caller's home: the one they set, else the one their nights suggest; absent when neither.
  public var home: HomeWorkPlace?
  /// The caller's work: the one they set, else the one their weekdays suggest; absent when neither.
  public var work: HomeWorkPlace?
  /// A list.
  public init(visits: [Visit], home: HomeWorkPlace? = nil, work: HomeWorkPlace? = nil) {
    self.visits = visits
    self.home = home
    self.work = work
  }
}

/// The file formats of `GET /v1/history/export`.
public enum HistoryExportFormat: String, Sendable, Hashable, CaseIterable, Codable {
  /// GPX 1.1.
  case gpx
  /// CSV (RFC 4180) with DomainKit's header.
  case csv
  /// A GeoJSON `FeatureCollection` of points.
  case geojson

  /// The media type sent.
  public var contentType: String {
    switch self {
    case .gpx: "application/gpx+xml"
    case .csv: "text/csv; charset=utf-8"
    case .geojson: "application/geo+json"
    }
  }
}

/// `GET /v1/history/export`: the history filters plus the format.
public struct HistoryExportQuery: RouteParameters, Hashable {
  /// The history filters (`limit` and `cursor` are ignored: the export holds every matching fix).
  public var history: HistoryQuery
  /// The file format.
  public var format: HistoryExportFormat

  /// A query.
  public init(history: HistoryQuery = HistoryQuery(), format: HistoryExportFormat) {
    self.history = history
    self.format = format
  }

  /// Reads `format` and the history filters.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    history = try HistoryQuery(path: path, query: query)
    guard let text = query.string("format"), let format = HistoryExportFormat(rawValue: text.lowercased()) else {
      throw .invalidRequest("'format' must be one of gpx, csv, geojson.")
    }
    self.format = format
  }

  var queryItems: [QueryItem] { history.queryItems + [QueryItem("format", format.rawValue)] }
}

import DomainKit
import Foundation
import GeoKit
import NetworkingKit

/// Parameters that the server reads back from a request's path and query, the inverse of what the
/// endpoint's path template and query function write. Defined next to the endpoints so both sides agree.
public protocol RouteParameters: Sendable {
  /// Reads the parameters from the path captures (by template name) and the query items (by name; repeated
  /// names keep every value in order).
  /// - Throws: ``APIError`` with ``APIErrorCode/invalidRequest`` naming the bad parameter.
  init(path: [String: String], query: [String: [String]]) throws(APIError)
}

extension [String: String] {
  /// The path parameter `name`, or an error naming it.
  func required(_ name: String) throws(APIError) -> String {
    guard let value = self[name], !value.isEmpty else { throw .invalidRequest("The path needs a '\(name)'.") }
    guard !Identifier.hasControlCharacters(value) else {
      throw .invalidRequest("'\(name)' can't contain control characters (NUL, tabs, line breaks).")
    }
    return value
  }
}

/// The rules every identifier from outside (user, group, device ids, in paths or bodies) follows.
public enum Identifier {
  /// The longest identifier accepted, in characters.
  public static let maximumLength = 128

  /// Whether `text` holds a control character (NUL, line breaks, tabs, …: Unicode category Cc).
  public static func hasControlCharacters(_ text: some StringProtocol) -> Bool {
    text.unicodeScalars.contains { $0.properties.generalCategory == .control }
  }

  /// Checks that `text`, the identifier `name`, has 1…``maximumLength`` characters and no control characters.
  /// - Throws: ``APIError`` `invalid_request` naming `name`.
  public static func check(_ text: String, name: String) throws(APIError) {
    guard (1...maximumLength).contains(text.count) else {
      throw .invalidRequest("'\(name)' must have between 1 and \(maximumLength) characters.")
    }
    guard !hasControlCharacters(text) else {
      throw .invalidRequest("'\(name)' can't contain control characters (NUL, tabs, line breaks).")
    }
  }
}

/// A value from the request quoted in an error message: at most `limit` characters (DomainKit's ``QuotedValue``,
/// 64 by default), so that a megabyte of bad input doesn't come back as a megabyte of error.
public func echo(_ value: some StringProtocol, limit: Int = QuotedValue.maximumLength) -> String {
  QuotedValue.clip(value, limit: limit)
}

extension [String: [String]] {
  /// The last value of query item `name`, if present and not empty.
  func string(_ name: String) -> String? {
    guard let value = self[name]?.last, !value.isEmpty else { return nil }
    return value
  }

  /// The query item `name` as a whole number, if present.
  func int64(_ name: String) throws(APIError) -> Int64? {
    guard let text = string(name) else { return nil }
    guard let value = Int64(text) else {
      throw .invalidRequest("'\(name)' must be a whole number, not '\(echo(text))'.")
    }
    return value
  }

  /// The query item `name` as a finite number, if present.
  func double(_ name: String) throws(APIError) -> Double? {
    guard let text = string(name) else { return nil }
    guard let value = Double(text), value.isFinite else {
      throw .invalidRequest("'\(name)' must be a number, not '\(echo(text))'.")
    }
    return value
  }

  /// The point of query items `latitude` and `longitude` (degrees), checked by GeoKit's coordinate rule
  /// (``Coordinate/validate(latitude:longitude:)``: latitude within ±90, longitude within ±180, never wrapped);
  /// nil when both are absent.
  /// - Throws: ``APIError`` `invalid_request` naming the item at fault, or when only one is given.
  func coordinate(latitude: String = "lat", longitude: String = "lon") throws(APIError) -> Coordinate? {
    switch (try double(latitude), try double(longitude)) {
    case (nil, nil): return nil
    case (let lat?, let lon?):
      do {
        return try Coordinate(latitude: lat, longitude: lon)
      } catch {
        let name = error.field == "latitude" ? latitude : longitude
        throw .invalidRequest(
          "'\(name)' must be within \(error.field == "latitude" ? "±90" : "±180") degrees: \(error.description).")
      }
    default: throw .invalidRequest("Give both '\(latitude)' and '\(longitude)', or neither.")
    }
  }

  /// Query item `name` as `south,west,north,east` in degrees: both corners coordinates by GeoKit's rule, south ≤
  /// north (west > east crosses the antimeridian); nil when absent.
  /// - Throws: ``APIError`` `invalid_request`.
  func boundingBox(_ name: String) throws(APIError) -> BoundingBox? {
    guard let text = string(name) else { return nil }
    let values = text.split(separator: ",", omittingEmptySubsequences: false).compactMap { Double($0) }
    guard values.count == 4, values[0] <= values[2],
      (try? Coordinate.validate(latitude: values[0], longitude: values[1])) != nil,
      (try? Coordinate.validate(latitude: values[2], longitude: values[3])) != nil
    else {
      throw .invalidRequest(
        "'\(name)' must be south,west,north,east in degrees (latitudes within ±90, longitudes within ±180) with "
          + "south ≤ north, not '\(echo(text))'.")
    }
    return BoundingBox(south: values[0], west: values[1], north: values[2], east: values[3])
  }
}

/// A user in the path: `/v1/users/{id}/…`.
public struct UserRef: RouteParameters, Hashable {
  /// The user.
  public var id: UserID
  /// A reference to `id`.
  public init(id: UserID) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = UserID(try path.required("id"))
  }
}

/// A group in the path: `/v1/groups/{id}`.
public struct GroupRef: RouteParameters, Hashable {
  /// The group.
  public var id: GroupID
  /// A reference to `id`.
  public init(id: GroupID) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = GroupID(try path.required("id"))
  }
}

/// A member of a group in the path: `/v1/groups/{id}/members/{userId}`.
public struct GroupMemberRef: RouteParameters, Hashable {
  /// The group.
  public var groupID: GroupID
  /// The member.
  public var userID: UserID
  /// A reference to a membership.
  public init(groupID: GroupID, userID: UserID) {
    self.groupID = groupID
    self.userID = userID
  }
  /// Reads `{id}` and `{userId}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    groupID = GroupID(try path.required("id"))
    userID = UserID(try path.required("userId"))
  }
}

/// `GET /v1/users/search?q=`: a name (substring) or phone number.
public struct UserSearchQuery: RouteParameters, Hashable {
  /// The search text: 2…``maximumLength`` characters, no control characters.
  public var q: String
  /// The longest search text accepted.
  public static let maximumLength = 100
  /// A query.
  public init(q: String) { self.q = q }
  /// Reads `q`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    guard let text = query.string("q")?.trimmingCharacters(in: .whitespaces), text.count >= 2 else {
      throw .invalidRequest("'q' needs at least 2 characters (a name or a phone number).")
    }
    guard text.count <= Self.maximumLength else {
      throw .invalidRequest("'q' can have at most \(Self.maximumLength) characters.")
    }
    guard !Identifier.hasControlCharacters(text) else {
      throw .invalidRequest("'q' can't contain control characters.")
    }
    q = text
  }
  var queryItems: [QueryItem] { [QueryItem("q", q)] }
}

/// The history filters: a preset or a custom range, a worst accepted accuracy and kinds.
///
/// Query form: `preset=today|yesterday|thisMonth|lastMonth|thisYear|lastYear|allTime`, or `from=&to=` (UTC ms,
/// half-open), `minAccuracy=` (metres), `kinds=movement,visit` (comma-separated or repeated).
public struct HistoryQuery: RouteParameters, Hashable {
  /// A named preset, computed in `timeZone` at request time; wins over `from`/`to`.
  public var preset: DatePreset?
  /// Inclusive start, UTC ms.
  public var from: Int64?
  /// Exclusive end, UTC ms.
  public var to: Int64?
  /// Keep fixes with a horizontal accuracy of at most this many metres.
  public var minAccuracy: Double?
  /// The kinds to include; empty means all.
  public var kinds: [FixKind]
  /// The IANA time zone that presets are computed in (default UTC).
  public var timeZone: String?
  /// At most this many fixes per page (1…1000, default 100).
  public var limit: Int?
  /// The `nextCursor` of the previous page.
  public var cursor: String?

  /// A query; every filter optional.
  public init(
    preset: DatePreset? = nil, from: Int64? = nil, to: Int64? = nil, minAccuracy: Double? = nil,
    kinds: [FixKind] = [], timeZone: String? = nil, limit: Int? = nil, cursor: String? = nil
  ) {
    self.preset = preset
    self.from = from
    self.to = to
    self.minAccuracy = minAccuracy
    self.kinds = kinds
    self.timeZone = timeZone
    self.limit = limit
    self.cursor = cursor
  }

  /// Reads the filters from the query.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    if let name = query.string("preset") {
      guard let preset = DatePreset(name: name) else {
        throw .invalidRequest(
          "'preset' must be one of today, yesterday, thisMonth, lastMonth, thisYear, lastYear, allTime.")
      }
      self.preset = preset
    }
    from = try query.int64("from")
    to = try query.int64("to")
    if let from, let to, from > to { throw .invalidRequest("'from' must not be after 'to'.") }
    minAccuracy = try query.double("minAccuracy")
    if let minAccuracy, minAccuracy < 0 { throw .invalidRequest("'minAccuracy' must be 0 or more metres.") }
    var kinds: [FixKind] = []
    for name in (query["kinds"] ?? []).flatMap({ $0.split(separator: ",") }) {
      guard let kind = FixKind(rawValue: String(name)) else {
        throw .invalidRequest("Unknown kind '\(echo(name))'; use movement, visit, imported or photo.")
      }
      kinds.append(kind)
    }
    self.kinds = kinds
    timeZone = query.string("timeZone")
    if let timeZone, TimeZone(identifier: timeZone) == nil {
      throw .invalidRequest("'timeZone' must be an IANA time zone such as Europe/Kyiv.")
    }
    if let limit = try query.int64("limit") {
      guard (1...1000).contains(limit) else { throw .invalidRequest("'limit' must be between 1 and 1000.") }
      self.limit = Int(limit)
    }
    cursor = query.string("cursor")
  }

  /// The time zone the query's days are counted in: `timeZone`, else UTC.
  public var zone: TimeZone {
    timeZone.flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: "UTC") ?? .current
  }

  /// The DomainKit filter at `now`.
  public func filter(now: Date) -> HistoryFilter {
    let range = preset.map { $0.range(now: now, timeZone: zone) } ?? TimeRange(start: from, end: to)
    return HistoryFilter(range: range, minimumAccuracy: minAccuracy, kinds: Set(kinds))
  }

  var queryItems: [QueryItem] {
    var items: [QueryItem] = []
    if let preset, preset.name != "custom" { items.append(QueryItem("preset", preset.name)) }
    if let from { items.append(QueryItem("from", from)) }
    if let to { items.append(QueryItem("to", to)) }
    if let minAccuracy { items.append(QueryItem("minAccuracy", minAccuracy)) }
    if !kinds.isEmpty { items.append(QueryItem("kinds", kinds.map(\.rawValue).joined(separator: ","))) }
    if let timeZone { items.append(QueryItem("timeZone", timeZone)) }
    if let limit { items.append(QueryItem("limit", limit)) }
    if let cursor { items.append(QueryItem("cursor", cursor)) }
    return items
  }
}

/// `GET /v1/history/map`: the history filters plus the view — `south`, `west`, `north`, `east` in degrees (`west >
/// east` crosses the antimeridian) and the map's `zoom` (0…22).
public struct HistoryMapQuery: RouteParameters, Hashable {
  /// The history filters.
  public var history: HistoryQuery
  /// The view.
  public var box: BoundingBox
  /// The web map's zoom level, 0…22.
  public var zoom: Int

  /// The zoom levels accepted.
  public static let zooms = 0...22

  /// A query.
  public init(history: HistoryQuery = HistoryQuery(), box: BoundingBox, zoom: Int) {
    self.history = history
    self.box = box
    self.zoom = zoom
  }

  /// Reads the view, `zoom` and the history filters.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    history = try HistoryQuery(path: path, query: query)
    var edges: [Double] = []
    for name in ["south", "west", "north", "east"] {
      guard let value = try query.double(name) else {
        throw .invalidRequest("'\(name)' is required: the view is south, west, north and east in degrees.")
      }
      let limit = name == "south" || name == "north" ? 90.0 : 180.0
      guard abs(value) <= limit else { throw .invalidRequest("'\(name)' must be within ±\(Int(limit)) degrees.") }
      edges.append(value)
    }
    guard edges[0] <= edges[2] else { throw .invalidRequest("'south' must not be north of 'north'.") }
    box = BoundingBox(south: edges[0], west: edges[1], north: edges[2], east: edges[3])
    guard let zoom = try query.int64("zoom"), Self.zooms.contains(Int(zoom)) else {
      throw .invalidRequest("'zoom' must be a whole number between 0 and 22.")
    }
    self.zoom = Int(zoom)
  }

  var queryItems: [QueryItem] {
    history.queryItems + [
      QueryItem("south", box.south), QueryItem("west", box.west), QueryItem("north", box.north),
      QueryItem("east", box.east), QueryItem("zoom", zoom),
    ]
  }
}

/// `GET /v1/history/clusters`: the history filters plus a geohash precision (2…6) and an optional box.
public struct ClusterQuery: RouteParameters, Hashable {
  /// The history filters.
  public var history: HistoryQuery
  /// The geohash length to group by, 2…6 (a zoom level).
  public var precision: Int
  /// `south,west,north,east` in degrees; absent means the whole world.
  public var bbox: BoundingBox?

  /// A query.
  public init(history: HistoryQuery = HistoryQuery(), precision: Int, bbox: BoundingBox? = nil) {
    self.history = history
    self.precision = precision
    self.bbox = bbox
  }

  /// Reads `precision`, `bbox` and the history filters.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    history = try HistoryQuery(path: path, query: query)
    guard let precision = try query.int64("precision"), (2...6).contains(precision) else {
      throw .invalidRequest("'precision' must be a geohash length between 2 and 6.")
    }
    self.precision = Int(precision)
    bbox = try query.boundingBox("bbox")
  }

  var queryItems: [QueryItem] {
    var items = history.queryItems
    items.append(QueryItem("precision", precision))
    if let bbox { items.append(QueryItem("bbox", "\(bbox.south),\(bbox.west),\(bbox.north),\(bbox.east)")) }
    return items
  }
}

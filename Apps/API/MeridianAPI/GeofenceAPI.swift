import DomainKit
import Foundation
import GeoKit
import NetworkingKit

extension API {
  // MARK: Geofences

  /// `GET /v1/geofences`: the caller's own geofences and those others share with them.
  public static let geofences = Endpoint<Void, NoBody, GeofenceList>(.get, "/v1/geofences")
  /// `POST /v1/geofences {name, shape, sharing?, groupId?, alerts?}` → 201 with the geofence. `422 invalid_geofence`
  /// for a bad name, shape (radius outside 25 m – 50 km, a polygon that isn't simple or has over 1,000 vertices) or
  /// sharing (a group the caller doesn't own); `400 invalid_alert_rule` for a bad `alerts` (an unknown time zone,
  /// hours that aren't `HH:mm`, a person who doesn't share their location with the caller).
  public static let createGeofence = Endpoint<Void, NewGeofence, GeofenceItem>(.post, "/v1/geofences")
  /// `PATCH /v1/geofences/{id} {name?, shape?, sharing?, groupId?, alerts?}` → the geofence (the owner's only).
  public static let updateGeofence = Endpoint<GeofenceRef, GeofenceUpdate, GeofenceItem>(
    .patch, "/v1/geofences/\(\.id, "id")")
  /// `DELETE /v1/geofences/{id}` → 204, with its state and events (the owner's only).
  public static let deleteGeofence = Endpoint<GeofenceRef, NoBody, NoContent>(
    .delete, "/v1/geofences/\(\.id, "id")", body: .none, response: .empty)
  /// `GET /v1/geofences/events?geofence=&user=&kind=&from=&to=&cursor=&limit=`: events newest first — the caller's
  /// own, and those on the caller's geofences of people whose location the caller may see.
  public static let geofenceEvents = Endpoint<GeofenceEventParameters, NoBody, GeofenceEventList>(
    .get, "/v1/geofences/events", query: { $0.queryItems })

  /// The geofence endpoints, for ``all``.
  static let geofenceEndpoints: [EndpointDescriptor] = [
    geofences.descriptor, createGeofence.descriptor, updateGeofence.descriptor, deleteGeofence.descriptor,
    geofenceEvents.descriptor,
  ]
}

/// A geofence's id in a path.
public struct GeofenceRef: RouteParameters, Hashable {
  /// The geofence.
  public var id: GeofenceID
  /// A reference.
  public init(id: GeofenceID) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = GeofenceID(try path.required("id"))
  }
}

/// A geofence's area on the wire: `{"type": "circle", "center": {"lat", "lon"}, "radius": metres}` or
/// `{"type": "polygon", "vertices": [{"lat", "lon"}, …]}`.
public enum GeofenceShape: Sendable, Hashable, Codable {
  /// Within `radius` metres of `center`.
  case circle(center: Coordinate, radius: Double)
  /// Inside the ring of `vertices` (closing edge implicit).
  case polygon([Coordinate])

  /// The GeoKit fence.
  public var geofence: Geofence {
    switch self {
    case .circle(let center, let radius): .circle(center: center, radius: radius)
    case .polygon(let vertices): .polygon(Polygon(vertices))
    }
  }

  private enum CodingKeys: String, CodingKey { case type, center, radius, vertices }

  /// Decodes either form.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    switch try container.decode(String.self, forKey: .type) {
    case "circle":
      self = .circle(
        center: try container.decode(Coordinate.self, forKey: .center),
        radius: try container.decode(Double.self, forKey: .radius))
    case "polygon": self = .polygon(try container.decode([Coordinate].self, forKey: .vertices))
    case let other:
      throw DecodingError.dataCorruptedError(
        forKey: .type, in: container, debugDescription: "'type' must be circle or polygon, not '\(echo(other))'")
    }
  }

  /// Encodes either form.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    switch self {
    case .circle(let center, let radius):
      try container.encode("circle", forKey: .type)
      try container.encode(center, forKey: .center)
      try container.encode(radius, forKey: .radius)
    case .polygon(let vertices):
      try container.encode("polygon", forKey: .type)
      try container.encode(vertices, forKey: .vertices)
    }
  }
}

/// Who may see a geofence (and its events): nobody but its owner, the members of one of the owner's groups, or
/// everyone allowed to see the owner's location.
public enum GeofenceSharing: String, Sendable, Hashable, Codable, CaseIterable {
  /// The owner only.
  case nobody
  /// The members of ``GeofenceItem/groupId``.
  case group
  /// Everyone allowed to see the owner's location.
  case everyone
}

/// Who made a geofence or reported an event.
public enum GeofenceSource: String, Sendable, Hashable, Codable, CaseIterable {
  /// The server (an API call, or its own evaluation of fixes).
  case server
  /// The person's device (OwnTracks `waypoint`/`transition`).
  case device
}

/// A geofence. Wire names: `id`, `ownerId`, `name`, `shape`, `sharing`, `groupId`, `source`, `externalId` (the
/// device's own key of a device-made fence), `alerts` (when its events send alerts, absent for always), `createdAt`,
/// `updatedAt` (UTC ms).
public struct GeofenceItem: Sendable, Hashable, Codable {
  /// The id.
  public var id: GeofenceID
  /// Who made it.
  public var ownerId: UserID
  /// Its name (1…100 characters).
  public var name: String
  /// Its area.
  public var shape: GeofenceShape
  /// Who may see it.
  public var sharing: GeofenceSharing
  /// The group, when ``sharing`` is `group`.
  public var groupId: GroupID?
  /// Made through the API (`server`) or by a device.
  public var source: GeofenceSource
  /// A device-made fence's key on the device (OwnTracks: the waypoint's `rid`, else its `tst`).
  public var externalId: String?
  /// Which of its events send alerts (webhooks, Web Push, email, ntfy, live); nil for all. Every event is recorded.
  public var alerts: GeofenceAlertRule?
  /// Creation time, UTC ms.
  public var createdAt: Int64
  /// Last change, UTC ms.
  public var updatedAt: Int64

  /// A geofence.
  public init(
    id: GeofenceID, ownerId: UserID, name: String, shape: GeofenceShape, sharing: GeofenceSharing = .nobody,
    groupId: GroupID? = nil, source: GeofenceSource = .server, externalId: String? = nil,
    alerts: GeofenceAlertRule? = nil, createdAt: Int64, updatedAt: Int64
  ) {
    self.id = id
    self.ownerId = ownerId
    self.name = name
    self.shape = shape
    self.sharing = sharing
    self.groupId = groupId
    self.source = source
    self.externalId = externalId
    self.alerts = alerts
    self.createdAt = createdAt
    self.updatedAt = updatedAt
  }

  /// The longest name, in characters.
  public static let maximumNameLength = 100
  /// The rule of a name: one line of 1…``maximumNameLength`` characters.
  public static let nameRule = UserText.singleLine(maximumLength: maximumNameLength)
}

/// `POST /v1/geofences` body.
///
/// Either `name` and `shape`, or a place of the directory (a venue included): `placeId` makes a circle of `radius`
/// metres (default ``defaultPlaceRadius``) around the place's location as it is now, named after the place in the
/// caller's language unless `name` is given.
public struct NewGeofence: Sendable, Hashable, Codable {
  /// The radius of a fence made from a place when none is given, metres.
  public static let defaultPlaceRadius = 150.0

  /// The name (optional with `placeId`).
  public var name: String?
  /// The area (absent with `placeId`).
  public var shape: GeofenceShape?
  /// A place of the directory whose location the fence surrounds.
  public var placeId: PlaceID?
  /// With `placeId`: the circle's radius, metres.
  public var radius: Double?
  /// Who may see it (default `nobody`).
  public var sharing: GeofenceSharing?
  /// The group, for `sharing: group`.
  public var groupId: GroupID?
  /// Which of its events send alerts (absent for all): see ``GeofenceAlertRule``.
  public var alerts: GeofenceAlertRule?
  /// A fence of `shape`.
  public init(
    name: String, shape: GeofenceShape, sharing: GeofenceSharing? = nil, groupId: GroupID? = nil,
    alerts: GeofenceAlertRule? = nil
  ) {
    self.name = name
    self.shape = shape
    self.sharing = sharing
    self.groupId = groupId
    self.alerts = alerts
  }

  /// A circle around a place of the directory.
  public init(
    placeId: PlaceID, radius: Double? = nil, name: String? = nil, sharing: GeofenceSharing? = nil,
    groupId: GroupID? = nil
  ) {
    self.placeId = placeId
    self.radius = radius
    self.name = name
    self.sharing = sharing
    self.groupId = groupId
  }
}

/// `PATCH /v1/geofences/{id}` body: the fields to change.
public struct GeofenceUpdate: Sendable, Hashable, Codable {
  /// A new name.
  public var name: String?
  /// A new area (the people's state in it is kept).
  public var shape: GeofenceShape?
  /// New sharing.
  public var sharing: GeofenceSharing?
  /// The group, for `sharing: group`.
  public var groupId: GroupID?
  /// A new alert rule; `{}` (a rule that allows everything) removes the rule.
  public var alerts: GeofenceAlertRule?
  /// A body.
  public init(
    name: String? = nil, shape: GeofenceShape? = nil, sharing: GeofenceSharing? = nil, groupId: GroupID? = nil,
    alerts: GeofenceAlertRule? = nil
  ) {
    self.name = name
    self.shape = shape
    self.sharing = sharing
    self.groupId = groupId
    self.alerts = alerts
  }
}

/// `GET /v1/geofences` answer.
public struct GeofenceList: Sendable, Hashable, Codable {
  /// The geofences, oldest first.
  public var items: [GeofenceItem]
  /// A list.
  public init(items: [GeofenceItem]) { self.items = items }
}

/// One event: a person entered, left or dwelt in a geofence. Wire names: `id` (also the webhook idempotency key),
/// `geofenceId`, `geofenceName`, `ownerId` (the geofence's), `userId` (the person), `kind`, `timestamp` (UTC ms of
/// the deciding fix or report), `reportedBy` (`server` or `device`), `lat`/`lon`/`accuracy` of the deciding fix,
/// `alerted` (false when the fence's alert rule held its alerts back; absent in older payloads, read as true),
/// `proximity` (only in the event of a proximity rule: ``ProximityEventDetail``).
public struct GeofenceEventItem: Sendable, Hashable, Codable {
  /// The id: the same for the same person, fence, kind and time, whichever node decided it.
  public var id: String
  /// The geofence.
  public var geofenceId: GeofenceID
  /// Its name when the event happened.
  public var geofenceName: String
  /// The geofence's owner.
  public var ownerId: UserID
  /// The person.
  public var userId: UserID
  /// What happened.
  public var kind: GeofenceEventKind
  /// When, UTC ms.
  public var timestamp: Int64
  /// The server's evaluation or the device's own report.
  public var reportedBy: GeofenceSource
  /// The deciding fix's latitude.
  public var lat: Double?
  /// The deciding fix's longitude.
  public var lon: Double?
  /// The deciding fix's accuracy, metres.
  public var accuracy: Double?
  /// Whether the event sent alerts: false when the fence's ``GeofenceItem/alerts`` rule held them back (the event is
  /// recorded and listed all the same).
  public var alerted: Bool
  /// For the event of a proximity rule (two people near each other), the rule and what happened; nil for a
  /// geofence's event.
  public var proximity: ProximityEventDetail?

  /// An event.
  public init(
    id: String, geofenceId: GeofenceID, geofenceName: String, ownerId: UserID, userId: UserID,
    kind: GeofenceEventKind, timestamp: Int64, reportedBy: GeofenceSource, lat: Double? = nil, lon: Double? = nil,
    accuracy: Double? = nil, alerted: Bool = true, proximity: ProximityEventDetail? = nil
  ) {
    self.id = id
    self.geofenceId = geofenceId
    self.geofenceName = geofenceName
    self.ownerId = ownerId
    self.userId = userId
    self.kind = kind
    self.timestamp = timestamp
    self.reportedBy = reportedBy
    self.lat = lat
    self.lon = lon
    self.accuracy = accuracy
    self.alerted = alerted
    self.proximity = proximity
  }

  /// Reads an event; one without `alerted` (stored or sent before alert rules) alerted.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    self.init(
      id: try container.decode(String.self, forKey: .id),
      geofenceId: try container.decode(GeofenceID.self, forKey: .geofenceId),
      geofenceName: try container.decode(String.self, forKey: .geofenceName),
      ownerId: try container.decode(UserID.self, forKey: .ownerId),
      userId: try container.decode(UserID.self, forKey: .userId),
      kind: try container.decode(GeofenceEventKind.self, forKey: .kind),
      timestamp: try container.decode(Int64.self, forKey: .timestamp),
      reportedBy: try container.decode(GeofenceSource.self, forKey: .reportedBy),
      lat: try container.decodeIfPresent(Double.self, forKey: .lat),
      lon: try container.decodeIfPresent(Double.self, forKey: .lon),
      accuracy: try container.decodeIfPresent(Double.self, forKey: .accuracy),
      alerted: try container.decodeIfPresent(Bool.self, forKey: .alerted) ?? true,
      proximity: try container.decodeIfPresent(ProximityEventDetail.self, forKey: .proximity))
  }
}

/// `GET /v1/geofences/events` answer.
public struct GeofenceEventList: Sendable, Hashable, Codable {
  /// The events, newest first.
  public var items: [GeofenceEventItem]
  /// The next page's cursor.
  public var nextCursor: String?
  /// A page.
  public init(items: [GeofenceEventItem], nextCursor: String?) {
    self.items = items
    self.nextCursor = nextCursor
  }
}

/// `GET /v1/geofences/events` parameters.
public struct GeofenceEventParameters: RouteParameters, Hashable {
  /// Only this geofence's.
  public var geofence: GeofenceID?
  /// Only this person's.
  public var user: UserID?
  /// Only this kind.
  public var kind: GeofenceEventKind?
  /// From this time on, UTC ms.
  public var from: Int64?
  /// Until this time, UTC ms.
  public var to: Int64?
  /// The previous page's `nextCursor`.
  public var cursor: String?
  /// Page size, 1…100 (default 50).
  public var limit: Int

  /// Parameters.
  public init(
    geofence: GeofenceID? = nil, user: UserID? = nil, kind: GeofenceEventKind? = nil, from: Int64? = nil,
    to: Int64? = nil, cursor: String? = nil, limit: Int = 50
  ) {
    self.geofence = geofence
    self.user = user
    self.kind = kind
    self.from = from
    self.to = to
    self.cursor = cursor
    self.limit = limit
  }

  /// Reads the query.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    geofence = query.string("geofence").map { GeofenceID($0) }
    user = query.string("user").map { UserID($0) }
    if let text = query.string("kind") {
      guard let kind = GeofenceEventKind(rawValue: text) else {
        throw .invalidRequest("'kind' must be enter, exit or dwell, not '\(echo(text))'.")
      }
      self.kind = kind
    }
    from = try query.int64("from")
    to = try query.int64("to")
    cursor = query.string("cursor")
    let limit = try query.int64("limit") ?? 50
    guard (1...100).contains(limit) else { throw .invalidRequest("'limit' must be between 1 and 100.") }
    self.limit = Int(limit)
  }

  var queryItems: [QueryItem] {
    var items = [QueryItem("limit", limit)]
    if let geofence { items.append(QueryItem("geofence", geofence.rawValue)) }
    if let user { items.append(QueryItem("user", user.rawValue)) }
    if let kind { items.append(QueryItem("kind", kind.rawValue)) }
    if let from { items.append(QueryItem("from", from)) }
    if let to { items.append(QueryItem("to", to)) }
    if let cursor { items.append(QueryItem("cursor", cursor)) }
    return items
  }
}

/// The payload of a `geofence:<user id>` live event: `{"type": "geofence.event", "event": {…}}`
/// (docs/realtime-protocol.md §2.3).
public struct GeofenceLiveEvent: Codable, Sendable, Hashable {
  /// The payload's type, `geofence.event`.
  public static let eventType = "geofence.event"
  /// `geofence.event`.
  public var type = eventType
  /// The event.
  public var event: GeofenceEventItem

  /// A payload.
  public init(event: GeofenceEventItem) { self.event = event }
}

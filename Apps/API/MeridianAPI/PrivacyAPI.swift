import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: Privacy zones

  /// `GET /v1/me/privacy-zones`: the caller's privacy zones, oldest first.
  public static let privacyZones = Endpoint<Void, NoBody, PrivacyZoneList>(.get, "/v1/me/privacy-zones")
  /// `POST /v1/me/privacy-zones {name, latitude, longitude, radius, display?, store?}` → 201 with the zone. From
  /// now on, the caller's fixes inside it are shown to others as "in a private zone" (`display: privateZone`, the
  /// default) or not at all (`hidden`), and not stored at all with `store: false`. `422 invalid_privacy_zone` for a
  /// bad name, centre or radius (50 m – 50 km); `409 quota_exceeded` past 50 zones.
  public static let createPrivacyZone = Endpoint<Void, PrivacyZoneBody, PrivacyZone>(
    .post, "/v1/me/privacy-zones")
  /// `PUT /v1/me/privacy-zones/{id}` → the zone, replaced. `404 not_found` for a zone that isn't the caller's.
  public static let updatePrivacyZone = Endpoint<PrivacyZoneRef, PrivacyZoneBody, PrivacyZone>(
    .put, "/v1/me/privacy-zones/\(\.id, "id")")
  /// `DELETE /v1/me/privacy-zones/{id}` → 204. `404 not_found` for a zone that isn't the caller's.
  public static let deletePrivacyZone = Endpoint<PrivacyZoneRef, NoBody, NoContent>(
    .delete, "/v1/me/privacy-zones/\(\.id, "id")", body: .none, response: .empty)

  /// The privacy endpoints, for ``all``.
  static let privacyEndpoints: [EndpointDescriptor] = [
    privacyZones.descriptor, createPrivacyZone.descriptor, updatePrivacyZone.descriptor,
    deletePrivacyZone.descriptor,
  ]
}

/// A privacy zone's id in a path.
public struct PrivacyZoneRef: RouteParameters, Hashable {
  /// The zone's id.
  public var id: String
  /// A reference.
  public init(id: String) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = try path.required("id")
  }
}

/// `POST`/`PUT /v1/me/privacy-zones` body: a zone without its id.
public struct PrivacyZoneBody: Codable, Sendable, Hashable {
  /// 1…64 characters.
  public var name: String
  /// Centre latitude, degrees.
  public var latitude: Double
  /// Centre longitude, degrees.
  public var longitude: Double
  /// Metres, 50…50,000.
  public var radius: Double
  /// How fixes inside appear to others; `privateZone` unless given.
  public var display: ZoneDisplay?
  /// Whether fixes inside are stored; true unless given.
  public var store: Bool?

  /// A body.
  public init(
    name: String, latitude: Double, longitude: Double, radius: Double, display: ZoneDisplay? = nil,
    store: Bool? = nil
  ) {
    self.name = name
    self.latitude = latitude
    self.longitude = longitude
    self.radius = radius
    self.display = display
    self.store = store
  }

  /// The zone with `id`.
  public func zone(id: String) -> PrivacyZone {
    PrivacyZone(
      id: id, name: name.trimmingCharacters(in: .whitespacesAndNewlines), latitude: latitude, longitude: longitude,
      radius: radius, display: display ?? .privateZone, store: store ?? true)
  }
}

/// `GET /v1/me/privacy-zones`.
public struct PrivacyZoneList: Codable, Sendable, Hashable {
  /// The zones, oldest first.
  public var items: [PrivacyZone]
  /// A list.
  public init(items: [PrivacyZone]) { self.items = items }
}

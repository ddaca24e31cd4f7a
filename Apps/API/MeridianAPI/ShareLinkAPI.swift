import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: Share links

  /// `GET /v1/share-links`: the caller's share links, newest first, each with its state (never its token).
  public static let shareLinks = Endpoint<Void, NoBody, ShareLinkList>(.get, "/v1/share-links")
  /// `POST /v1/share-links {until, label?, deviceIds?, track?}` → 201 with the link, its token and its page's path
  /// (`/s/<token>`), shown only this once. `400 invalid_request` for an `until` not in the future or more than 30 days
  /// ahead, a long label, or a device that isn't the caller's; `409
  /// quota_exceeded` when the caller has as many active links as the server allows.
  public static let createShareLink = Endpoint<Void, NewShareLink, CreatedShareLink>(.post, "/v1/share-links")
  /// `DELETE /v1/share-links/{id}` → 204: the link stops working at once (its page and sockets show nothing).
  /// `404 not_found` for a link that isn't the caller's.
  public static let revokeShareLink = Endpoint<ShareLinkRef, NoBody, NoContent>(
    .delete, "/v1/share-links/\(\.id, "id")", body: .none, response: .empty)
  /// `GET /v1/shared/{token}`, without an account: what the link shows now. `404 not_found` for a token that is no
  /// link's, `410 share_link_expired` / `410 share_link_revoked` for a link that ended (nothing else is shown), `429
  /// rate_limited` with `Retry-After` past the per-token rate.
  public static let sharedView = Endpoint<ShareTokenRef, NoBody, SharedView>(
    .get, "/v1/shared/\(\.token, "token")", authentication: .none)

  /// The share-link endpoints, for ``all``.
  static let shareLinkEndpoints: [EndpointDescriptor] = [
    shareLinks.descriptor, createShareLink.descriptor, revokeShareLink.descriptor, sharedView.descriptor,
  ]
}

/// A share link's id in a path.
public struct ShareLinkRef: RouteParameters, Hashable {
  /// The link's id.
  public var id: String
  /// A reference.
  public init(id: String) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = try path.required("id")
  }
}

/// A share link's token in a path.
public struct ShareTokenRef: RouteParameters, Hashable {
  /// The token (43 base64url characters).
  public var token: String
  /// A reference.
  public init(token: String) { self.token = token }
  /// Reads `{token}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    token = try path.required("token")
  }
}

/// Whether a share link still shows anything.
public enum ShareLinkState: String, Codable, Sendable, Hashable, CaseIterable {
  /// Before its `until`, not revoked.
  case active
  /// Its `until` has passed.
  case expired
  /// Its owner revoked it.
  case revoked
}

/// A share link as its owner sees it (its token is shown only at creation).
public struct ShareLink: Codable, Sendable, Hashable {
  /// The id (for `DELETE /v1/share-links/{id}` and the live channel `share:<id>`).
  public var id: String
  /// The owner's label, shown on the page.
  public var label: String?
  /// Creation time, UTC milliseconds; the track starts here.
  public var createdAt: Int64
  /// When it stops working, UTC milliseconds.
  public var until: Int64
  /// The devices it shows; nil for all of the owner's devices (including ones added later).
  public var deviceIds: [DeviceID]?
  /// Whether it shows the track since ``createdAt`` too.
  public var track: Bool
  /// When it was revoked, UTC milliseconds.
  public var revokedAt: Int64?
  /// Active, expired or revoked, when the list was made.
  public var state: ShareLinkState
  /// How many pages are open on the link now, on every node (`GET /v1/share-links`, active links only).
  public var viewers: Int?
  /// How precisely the link shows the position (`exact`, `approximate`, `town`).
  public var precision: LocationPrecision?

  /// A link.
  public init(
    id: String, label: String?, createdAt: Int64, until: Int64, deviceIds: [DeviceID]?, track: Bool,
    revokedAt: Int64?, state: ShareLinkState, viewers: Int? = nil, precision: LocationPrecision? = nil
  ) {
    self.precision = precision
    self.id = id
    self.label = label
    self.createdAt = createdAt
    self.until = until
    self.deviceIds = deviceIds
    self.track = track
    self.revokedAt = revokedAt
    self.state = state
    self.viewers = viewers
  }
}

/// `POST /v1/share-links` body.
public struct NewShareLink: Codable, Sendable, Hashable {
  /// When the link stops working, UTC milliseconds: in the future, at most 30 days ahead.
  public var until: Int64
  /// A label shown on the page (up to 100 characters).
  public var label: String?
  /// The caller's devices to show; omitted for all of them.
  public var deviceIds: [DeviceID]?
  /// Also show the track since the link was made (false unless given).
  public var track: Bool?
  /// How precisely the link shows the position: `exact` (unless given), `approximate` (the ~1 km cell's centre) or
  /// `town`; `hidden` is refused (a link that shows nothing is no link).
  public var precision: LocationPrecision?

  /// A body.
  public init(
    until: Int64, label: String? = nil, deviceIds: [DeviceID]? = nil, track: Bool? = nil,
    precision: LocationPrecision? = nil
  ) {
    self.precision = precision
    self.until = until
    self.label = label
    self.deviceIds = deviceIds
    self.track = track
  }
}

/// A new share link with its token, shown only this once.
public struct CreatedShareLink: Codable, Sendable, Hashable {
  /// The link.
  public var link: ShareLink
  /// The token: 256 random bits, base64url (43 characters). The server keeps only its SHA-256.
  public var token: String
  /// The page's path, `/s/<token>`, to put after the server's address.
  public var url: String

  /// A created link.
  public init(link: ShareLink, token: String, url: String) {
    self.link = link
    self.token = token
    self.url = url
  }
}

/// `GET /v1/share-links`.
public struct ShareLinkList: Codable, Sendable, Hashable {
  /// The links, newest first.
  public var items: [ShareLink]
  /// A list.
  public init(items: [ShareLink]) { self.items = items }
}

/// `GET /v1/shared/{token}`: what an active link shows now, to anyone holding its token.
public struct SharedView: Codable, Sendable, Hashable {
  /// The owner's label.
  public var label: String?
  /// When the link stops working, UTC milliseconds.
  public var until: Int64
  /// True while the owner's sharing is paused (or their sharing deadline has passed): no position is shown.
  public var paused: Bool
  /// The newest fix of the covered devices not dated in the future, its device shown by its handle (as viewers see
  /// devices); nil when paused or when there is none.
  public var position: LocationFix?
  /// The covered devices' fixes since the link was made (or the owner last resumed), oldest first, thinned over the
  /// whole window to at most 2,000 points, when the link shows the track and the owner isn't paused; nil otherwise.
  public var track: [LocationFix]?
  /// True when ``track`` was thinned (Ramer–Douglas–Peucker: the first and last fix kept, and the points the shape
  /// needs); nil otherwise.
  public var simplified: Bool?
  /// True when the window held more fixes than the server reads for a track (100,000): the track then covers the
  /// newest of them; nil otherwise.
  public var truncated: Bool?
  /// The live channel a socket signed in with the token may subscribe to (`share:<link id>`).
  public var channel: String
  /// The link's precision, when not `exact`: ``position`` and ``track`` are coarsened to it.
  public var precision: LocationPrecision?
  /// The town of ``position``, for a link of precision `town`.
  public var town: String?
  /// When the owner was last seen in one of their privacy zones (UTC ms), when that is their newest fix: no
  /// ``position`` is shown then. The ``track`` leaves out every fix taken in a zone.
  public var privateZoneAt: Int64?

  /// A view.
  public init(
    label: String?, until: Int64, paused: Bool, position: LocationFix?, track: [LocationFix]?, channel: String,
    simplified: Bool? = nil, truncated: Bool? = nil, precision: LocationPrecision? = nil, town: String? = nil,
    privateZoneAt: Int64? = nil
  ) {
    self.precision = precision
    self.town = town
    self.privateZoneAt = privateZoneAt
    self.label = label
    self.until = until
    self.paused = paused
    self.position = position
    self.track = track
    self.simplified = simplified
    self.truncated = truncated
    self.channel = channel
  }
}

/// A live event on a share link's channel (`share:<link id>`): the fixes of one covered device, without the owner's
/// account id (a share link shows no account).
public struct SharedLiveLocation: Sendable, Hashable, Codable {
  /// The device that reported them, as an opaque handle (as in ``LiveLocation``).
  public var deviceId: DeviceID
  /// The fixes the link shows, oldest first: those dated from the link's creation (or the owner's last resume) on;
  /// only the newest of a batch for a link that shows no track; coarsened to the link's precision, none in a
  /// privacy zone.
  public var fixes: [LocationFix]
  /// The town of the newest fix, for a link of precision `town`.
  public var town: String?
  /// When the batch's newest fix in a privacy zone shown as "private zone" was taken (UTC ms), if any.
  public var privateZoneAt: Int64?
  /// A share link's live event.
  public init(deviceId: DeviceID, fixes: [LocationFix], town: String? = nil, privateZoneAt: Int64? = nil) {
    self.deviceId = deviceId
    self.fixes = fixes
    self.town = town
    self.privateZoneAt = privateZoneAt
  }
}

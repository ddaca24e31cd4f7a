import DomainKit
import Foundation
import MeridianAPI

/// A share link as the store keeps it: the SHA-256 of its token (``SecretHash``), never the token.
public struct ShareLinkRecord: Sendable, Hashable {
  /// The id (random, not the token).
  public var id: String
  /// The person whose location it shows.
  public var owner: UserID
  /// SHA-256 of the token, hex.
  public var tokenHash: String
  /// The owner's label.
  public var label: String?
  /// The devices it shows; nil for all the owner's devices.
  public var devices: [DeviceID]?
  /// Whether it shows the track since ``createdAt``.
  public var track: Bool
  /// Creation time, UTC ms.
  public var createdAt: Int64
  /// When it stops working, UTC ms (after ``createdAt``).
  public var until: Int64
  /// When its owner revoked it, UTC ms.
  public var revokedAt: Int64?
  /// How precisely it shows the position (DomainKit's ``AudienceView``); never ``LocationPrecision/hidden``.
  public var precision: LocationPrecision

  /// A record.
  public init(
    id: String, owner: UserID, tokenHash: String, label: String?, devices: [DeviceID]?, track: Bool,
    createdAt: Int64, until: Int64, revokedAt: Int64? = nil, precision: LocationPrecision = .exact
  ) {
    self.precision = precision
    self.id = id
    self.owner = owner
    self.tokenHash = tokenHash
    self.label = label
    self.devices = devices
    self.track = track
    self.createdAt = createdAt
    self.until = until
    self.revokedAt = revokedAt
  }

  /// Revoked (whenever), expired (at or after ``until``), or active.
  public func state(at now: Int64) -> ShareLinkState {
    if revokedAt != nil { return .revoked }
    return now >= until ? .expired : .active
  }

  /// Whether it shows `device`'s fixes.
  public func covers(_ device: DeviceID) -> Bool { devices?.contains(device) ?? true }

  /// Whether its holders may see the owner's location at `now`: the link is active and the owner's sharing is
  /// neither paused nor past its deadline (`sharing`).
  public func showsLocation(at now: Int64, sharing: SharingState) -> Bool {
    state(at: now) == .active && !ShareLinkRules.isPaused(sharing, at: now)
  }

  /// The link as its owner sees it at `now`.
  public func api(at now: Int64) -> ShareLink {
    ShareLink(
      id: id, label: label, createdAt: createdAt, until: until, deviceIds: devices, track: track,
      revokedAt: revokedAt, state: state(at: now), precision: precision)
  }
}

/// The rules of share links, written once for every engine and route.
public enum ShareLinkRules {
  /// The longest a link may last: 30 days.
  public static let longestLifetime: Int64 = 30 * 24 * 3_600_000
  /// The longest label.
  public static let longestLabel = 100
  /// The most points a track shows: a longer one is thinned over its whole window.
  public static let longestTrack = 2_000
  /// The most fixes read for a track (the newest of its window).
  public static let longestTrackRead = 100_000
  /// The most links `GET /v1/share-links` lists (the newest).
  public static let longestList = 100

  /// Whether `sharing` hides the owner from everyone at `now` (paused, or its deadline passed).
  public static func isPaused(_ sharing: SharingState, at now: Int64) -> Bool {
    if sharing.paused { return true }
    if let until = sharing.until, now >= until { return true }
    return false
  }

  /// `changed`, a change of `before` made at `now`, noting in ``SharingState/resumedAt`` when it ends a pause (or a
  /// passed deadline).
  public static func noting(_ changed: SharingState, resumedFrom before: SharingState, at now: Int64) -> SharingState {
    var changed = changed
    if isPaused(before, at: now) && !isPaused(changed, at: now) { changed.resumedAt = now }
    return changed
  }

  /// Where `link`'s track starts, its owner's sharing being `sharing`: at the later of the link's creation and the
  /// owner's last resume, so that nothing the owner did while paused (nor before) is shown.
  public static func trackStart(of link: ShareLinkRecord, sharing: SharingState) -> Int64 {
    max(link.createdAt, sharing.resumedAt ?? .min)
  }

  /// The fixes of one stored batch that `link`'s live channel gets, its owner's sharing being `sharing`: those dated
  /// from ``trackStart(of:sharing:)`` on (a backfill or an import of older fixes shows nothing), and, when the link
  /// shows no track, only the newest of them.
  public static func liveFixes(_ fixes: [LocationFix], of link: ShareLinkRecord, sharing: SharingState)
    -> [LocationFix]
  {
    let start = trackStart(of: link, sharing: sharing)
    let shown = fixes.filter { $0.timestamp >= start }.sorted { $0.timestamp < $1.timestamp }
    guard link.track else { return shown.last.map { [$0] } ?? [] }
    return shown
  }

  /// The active links among `links` at `now`.
  public static func active(_ links: [ShareLinkRecord], at now: Int64) -> [ShareLinkRecord] {
    links.filter { $0.state(at: now) == .active }
  }
}

/// Share links: created with a token hash, found by it, listed and revoked by their owner; and the fixes a link
/// shows.
public protocol ShareLinkStore: Sendable {
  /// Stores `link` unless its owner already has `activeLimit` links active at its ``ShareLinkRecord/createdAt`` (nil:
  /// no limit); whether it was stored. The count and the insert are one step: two concurrent creations can't both
  /// pass the limit.
  func createShareLink(_ link: ShareLinkRecord, activeLimit: Int?) async throws -> Bool
  /// The link with this id.
  func shareLink(id: String) async throws -> ShareLinkRecord?
  /// The link whose token has this SHA-256, unless its owner is disabled.
  func shareLink(tokenHash: String) async throws -> ShareLinkRecord?
  /// `owner`'s links, newest first, at most `limit`; with `endedAfter`, only those that end (expire or were revoked)
  /// after that time — the active ones and those that ended since.
  func shareLinks(owner: UserID, endedAfter: Int64?, limit: Int) async throws -> [ShareLinkRecord]
  /// Revokes `owner`'s link `id` at `now` (a second revocation keeps the first time); the link, or nil when `owner`
  /// has no such link.
  func revokeShareLink(id: String, owner: UserID, now: Int64) async throws -> ShareLinkRecord?
  /// `owner`'s fixes of `devices` (every device when nil) dated in `from...through`, newest first, at most `limit`.
  func sharedFixes(owner: UserID, devices: [DeviceID]?, from: Int64, through: Int64, limit: Int) async throws
    -> [LocationFix]
}

extension ShareLinkStore {
  /// Stores `link`, whatever its owner's other links.
  public func createShareLink(_ link: ShareLinkRecord) async throws {
    _ = try await createShareLink(link, activeLimit: nil)
  }

  /// `owner`'s newest ``ShareLinkRules/longestList`` links, newest first.
  public func shareLinks(owner: UserID) async throws -> [ShareLinkRecord] {
    try await shareLinks(owner: owner, endedAfter: nil, limit: ShareLinkRules.longestList)
  }
}

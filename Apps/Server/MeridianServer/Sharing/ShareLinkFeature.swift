import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// Share links: a person makes a link that shows their live position (and, if asked, their track since then) to
/// anyone holding it, without an account, until a time they choose or until they revoke it. The token is 256 random
/// bits, given once; the store keeps its SHA-256. The public view shows nothing but the label, the expiry and the
/// covered devices' fixes (devices by their handles), hides them while the owner's sharing is paused, and is
/// rate-limited per link. Every revocation is enforced on the live sockets of every node at once.
struct ShareLinkFeature: Sendable {
  let environment: ServerEnvironment
  let live: LiveUpdates
  var store: any MeridianStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.shareLinks) { call in try await list(call.authenticated()) }
    routes.on(API.createShareLink, status: .created) { call in try await create(call.authenticated(), call.body) }
    routes.on(API.revokeShareLink, status: .noContent) { call in
      try await revoke(call.authenticated(), call.parameters.id)
    }
    routes.on(API.sharedView) { call in try await view(token: call.parameters.token, address: call.clientAddress) }
  }

  func list(_ owner: UserID) async throws -> ShareLinkList {
    let now = environment.now()
    let links = try await store.shareLinks(owner: owner).map { $0.api(at: now) }
    let viewers = await live.shareViewers(of: links.filter { $0.state == .active }.map(\.id))
    return ShareLinkList(
      items: links.map { link in
        var link = link
        link.viewers = viewers[link.id]
        return link
      })
  }

  func create(_ owner: UserID, _ body: NewShareLink) async throws -> CreatedShareLink {
    let now = environment.now()
    guard body.until > now else { throw APIError.invalidRequest("'until' must be in the future (UTC milliseconds).") }
    guard body.until - now <= ShareLinkRules.longestLifetime else {
      throw APIError.invalidRequest("'until' may be at most 30 days ahead.")
    }
    let label = try body.label.map {
      try UserText.singleLine(maximumLength: ShareLinkRules.longestLabel, allowsEmpty: true).checked($0, field: "label")
    }
    guard body.precision != .hidden else {
      throw APIError.invalidRequest(
        "'precision' must be exact, approximate or town: a link that shows nothing is no link.")
    }
    if let devices = body.deviceIds {
      let owned = Set(try await store.devices(owner: owner).map(\.id))
      guard !devices.isEmpty, devices.allSatisfy(owned.contains) else {
        throw APIError.invalidRequest(
          "'deviceIds' must name at least one of your devices (GET /v1/devices); omit it to share all of them.")
      }
    }
    if let wait = await environment.shareLinkCreationLimiter.take(owner.rawValue, cost: 1, now: now) {
      throw APIError.rateLimited("You made too many share links lately; try again later.", retryAfterMilliseconds: wait)
    }
    let token = Secrets.token()
    let link = ShareLinkRecord(
      id: Secrets.userID(), owner: owner, tokenHash: SecretHash.sha256(token),
      label: label.flatMap { $0.isEmpty ? nil : $0 },
      devices: body.deviceIds.map { Array(Set($0)).sorted { $0.rawValue < $1.rawValue } },
      track: body.track ?? false, createdAt: now, until: body.until, precision: body.precision ?? .exact)
    let limit = ServerLimits.active(environment.limits.shareLinksPerAccount)
    guard try await store.createShareLink(link, activeLimit: limit) else {
      throw APIError(
        status: 409, code: .quotaExceeded,
        message: "You have \(limit ?? 0) active share links, the most allowed; revoke one first.")
    }
    // Every node's fan-out reads the owner's links again: the next fix reaches the new link.
    try await live.refresh(owner: owner)
    return CreatedShareLink(link: link.api(at: now), token: token, url: "/s/\(token)")
  }

  func revoke(_ owner: UserID, _ id: String) async throws -> NoContent {
    guard try await store.revokeShareLink(id: id, owner: owner, now: environment.now()) != nil else {
      throw APIError.notFound("You have no share link with this id.")
    }
    try await live.refresh(owner: owner)
    return NoContent()
  }

  /// What the link of `token` shows now.
  func view(token: String, address: String) async throws -> SharedView {
    let now = environment.now()
    // Per address first: one client reading many links (or guessing tokens) is stopped before any link's count.
    if let wait = await environment.sharedViewAddressLimiter.take(address, cost: 1, now: now) {
      throw APIError.rateLimited(
        "Share links were opened too often from here; try again shortly.", retryAfterMilliseconds: wait)
    }
    let hash = SecretHash.sha256(token)
    if let wait = await environment.sharedViewLimiter.take(hash, cost: 1, now: now) {
      throw APIError.rateLimited(
        "This share link was opened too often; try again shortly.", retryAfterMilliseconds: wait)
    }
    guard let link = try await store.shareLink(tokenHash: hash) else {
      throw APIError.notFound("There is no share link with this token.")
    }
    switch link.state(at: now) {
    case .expired:
      throw APIError(status: 410, code: .shareLinkExpired, message: "This share link has expired; it shows nothing.")
    case .revoked:
      throw APIError(status: 410, code: .shareLinkRevoked, message: "This share link was revoked; it shows nothing.")
    case .active: break
    }
    let channel = LiveUpdates.shareChannel(link.id)?.description ?? ""
    guard let settings = try await store.privacySettings(owner: link.owner),
      link.showsLocation(at: now, sharing: settings.sharing)
    else {
      return SharedView(label: link.label, until: link.until, paused: true, position: nil, track: nil, channel: channel)
    }
    let handles = try await environment.deviceHandles.handles()
    // The link's audience sees the fixes at its precision with the owner's zones applied (``FixAudience``).
    let precision = link.precision == .exact ? nil : link.precision
    let last = try await store.sharedFixes(owner: link.owner, devices: link.devices, from: 0, through: now, limit: 1)
    let newest = await environment.audience.batch(last, precision: link.precision, zones: settings.zones)
    let position = newest?.fixes.first.map { handles.redacted($0, owner: link.owner) }
    guard link.track else {
      return SharedView(
        label: link.label, until: link.until, paused: false, position: position, track: nil, channel: channel,
        precision: precision, town: newest?.town, privateZoneAt: newest?.privateZoneAt)
    }
    let read = try await store.sharedFixes(
      owner: link.owner, devices: link.devices, from: ShareLinkRules.trackStart(of: link, sharing: settings.sharing),
      through: now, limit: ShareLinkRules.longestTrackRead)
    // Thinned after the rule: a coarsened track is thinned as drawn, and no fix in a zone shapes it.
    let shown = await environment.audience.batch(read.reversed(), precision: link.precision, zones: settings.zones)
    let track = Self.thinned(shown?.fixes ?? [], to: ShareLinkRules.longestTrack)
    return SharedView(
      label: link.label, until: link.until, paused: false, position: position,
      track: track.fixes.map { handles.redacted($0, owner: link.owner) },
      channel: channel, simplified: track.simplified ? true : nil,
      truncated: read.count >= ShareLinkRules.longestTrackRead ? true : nil, precision: precision,
      town: newest?.town, privateZoneAt: newest?.privateZoneAt)
  }

  /// `fixes` (oldest first) thinned to at most `limit` points over their whole span by Ramer–Douglas–Peucker
  /// (GeoKit's ``Track/simplify(_:tolerance:)``, the first and last fix kept), its tolerance doubled from 5 m until
  /// few enough remain; and whether any fix was dropped.
  static func thinned(_ fixes: [LocationFix], to limit: Int) -> (fixes: [LocationFix], simplified: Bool) {
    guard fixes.count > limit, limit >= 2 else { return (fixes, false) }
    let coordinates = fixes.map { Coordinate(uncheckedLatitude: $0.latitude, longitude: $0.longitude) }
    var tolerance = 5.0
    var kept = Track.simplify(coordinates, tolerance: tolerance)
    while kept.count > limit, tolerance < 20_000_000 {
      tolerance *= 2
      kept = Track.simplify(coordinates, tolerance: tolerance)
    }
    // The kept points are a subsequence of the track: walk both to find their fixes.
    var thinned: [LocationFix] = []
    var next = 0
    for (fix, coordinate) in zip(fixes, coordinates) where next < kept.count && coordinate == kept[next] {
      thinned.append(fix)
      next += 1
    }
    if thinned.count > limit {  // not reachable on Earth; an even sample keeps the bound anyway
      let step = Double(thinned.count - 1) / Double(limit - 1)
      thinned = (0..<limit).map { thinned[Int((Double($0) * step).rounded())] }
    }
    return (thinned, true)
  }
}

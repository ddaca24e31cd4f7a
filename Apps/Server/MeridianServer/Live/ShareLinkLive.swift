import DomainKit
import Foundation
import MeridianSecrets
import MeridianStore
import RealtimeKit
import Synchronization

/// Share links on the live socket: a share token signs a socket in as the link (principal `share:<link id>`), which
/// may subscribe to the link's channel `share:<link id>` and to nothing else, and may not publish. The fan-out sends
/// the owner's fixes of the covered devices there while the link is active and the owner's sharing isn't paused;
/// every rule reads the link and the owner's sharing from the store (cached for seconds, dropped by
/// ``enforce(owner:)`` on every node), so two nodes agree.
extension LiveUpdates {
  /// The namespace of the share links' channels.
  static let shareNamespace = "share"
  /// The principal attribute holding the id of the link a share socket signed in with.
  static let shareLinkAttribute = "shareLink"
  /// The principal attribute holding the owner of the link a share socket signed in with (their sockets close when
  /// the account is disabled or deleted).
  static let shareOwnerAttribute = "shareOwner"
  /// How long after a link ends the fan-out still looks for its subscribers to revoke them.
  static let endedLinkWatch: Int64 = 24 * 3_600_000

  /// The channel of `link`: `share:<link id>`.
  static func shareChannel(_ link: String) -> ChannelName? { ChannelName(namespace: shareNamespace, id: link) }

  /// The principal id of the sockets signed in with `link`'s token (never a user's id, which has no colon).
  static func sharePrincipalID(_ link: String) -> String { shareNamespace + ":" + link }

  /// The principal of a socket signed in with the share token of SHA-256 `hash`, while its link is active; nil for
  /// any other token.
  static func sharePrincipal(tokenHash hash: String, store: any MeridianStore, now: Int64) async throws
    -> RealtimePrincipal?
  {
    guard let link = try await store.shareLink(tokenHash: hash), link.state(at: now) == .active else { return nil }
    return RealtimePrincipal(
      id: sharePrincipalID(link.id),
      attributes: [tokenAttribute: hash, shareLinkAttribute: link.id, shareOwnerAttribute: link.owner.rawValue])
  }

  /// What a share socket may do: subscribe to its own link's channel, by ``shareChannelRule(store:now:)``; nothing
  /// else, and never publish.
  static func shareSocketMay(
    _ link: String, _ access: RealtimeAccess, _ channel: ChannelName, channels: LiveChannels
  ) async throws -> Bool {
    guard access == .subscribe, channel == shareChannel(link) else { return false }
    return try await channels.maySubscribe(UserID(sharePrincipalID(link)), to: channel)
  }

  /// `share:<link id>`: only the link's own sockets, while it shows the owner's location. Each link subscribed to
  /// is noted in `ends`, so that its subscribers are revoked when it expires (``revokeEndedLinks()``).
  static func shareChannelRule(
    store: any MeridianStore, ends: ShareLinkEnds, now: @escaping @Sendable () -> Int64
  ) -> LiveChannelRule {
    LiveChannelRule(namespace: shareNamespace) { viewer, id in
      guard viewer.rawValue == sharePrincipalID(id), let link = try await store.shareLink(id: id) else { return false }
      guard link.showsLocation(at: now(), sharing: try await store.sharing(owner: link.owner)) else { return false }
      ends.note(link)
      return true
    }
  }

  /// Revokes, on this node, the subscribers of every link subscribed to here that has expired by now (the injected
  /// clock's), without waiting for the owner's next fix. Each node sweeps its own subscribers.
  func revokeEndedLinks() async {
    for id in shareLinkEnds.ended(at: now()) {
      guard let link = try? await store.shareLink(id: id) else { continue }
      let sharing = (try? await store.sharing(owner: link.owner)) ?? SharingState()
      await enforce([link], sharing: sharing)
    }
  }

  /// Calls ``revokeEndedLinks()`` and ``announceShareViewers()`` every `interval` until cancelled.
  func sweepEndedLinks(every interval: Duration = .milliseconds(500)) async {
    while !Task.isCancelled {
      await revokeEndedLinks()
      await announceShareViewers()
      try? await Task.sleep(for: interval)
    }
  }

  /// Tells the other nodes, through the live log, how many pages are open here on each share link, when that
  /// changed or is due again (``ShareLinkViewers/toSay(_:at:)``). Nothing without a live log (one node).
  func announceShareViewers() async {
    guard let log = store.liveLog else { return }
    let counts = await hub.subscriberCounts(namespace: Self.shareNamespace)
    guard let changes = shareLinkViewers.toSay(counts, at: now()) else { return }
    for batch in shareLinkViewers.batches(changes) {
      // Said again within seconds while pages are open; a count not heard is forgotten by the others.
      try? await log.announce(.shareViewers(node: shareLinkViewers.node, counts: batch))
    }
  }

  /// The pages open now on each of `links` on every node (0 for none): this node's sockets and what the others said.
  func shareViewers(of links: [String]) async -> [String: Int] {
    var counts = shareLinkViewers.elsewhere(links, at: now())
    let here = await hub.subscriberCounts(namespace: Self.shareNamespace)
    for link in links { counts[link, default: 0] += here[link] ?? 0 }
    return counts
  }

  /// Whether `principal` may receive the events of `link`'s channel at `time`, the owner's sharing being `sharing`.
  static func mayReceive(_ principal: String, _ link: ShareLinkRecord, sharing: SharingState, at time: Int64) -> Bool {
    principal == sharePrincipalID(link.id) && link.showsLocation(at: time, sharing: sharing)
  }

  /// `owner`'s links the fan-out looks at: the active ones and those that ended within ``endedLinkWatch`` (whose
  /// subscribers it revokes), cached like the privacy settings.
  func watchedShareLinks(of owner: UserID, at time: Int64) async throws -> [ShareLinkRecord] {
    // Read by the store, which skips every older link; the limit is far above what the quota leaves active.
    try await shareLinkCache.value(for: owner, now: time) {
      try await store.shareLinks(owner: owner, endedAfter: time - Self.endedLinkWatch, limit: 10_000)
    } ?? []
  }

  /// Revokes the subscribers of `links`' channels who may not receive them now (the link ended, or the owner, whose
  /// sharing is `sharing`, paused).
  func enforce(_ links: [ShareLinkRecord], sharing: SharingState) async {
    let addressed = links.compactMap { link in Self.shareChannel(link.id).map { (link: link, channel: $0) } }
    guard !addressed.isEmpty else { return }
    let time = now()
    for ((link, channel), principals) in zip(addressed, await hub.presence(of: addressed.map(\.channel))) {
      for principal in principals where !Self.mayReceive(principal.id, link, sharing: sharing, at: time) {
        await hub.revoke(channel, from: principal.id)
      }
    }
  }
}

/// The links subscribed to on this node with when each ends, for the sweep that revokes their subscribers at expiry.
final class ShareLinkEnds: Sendable {
  private let ends = Mutex([String: Int64]())

  /// Notes that `link` has (or may soon have) subscribers here.
  func note(_ link: ShareLinkRecord) {
    ends.withLock { $0[link.id] = link.until }
  }

  /// The links that ended by `now`, forgotten as they are returned.
  func ended(at now: Int64) -> [String] {
    ends.withLock { ends in
      let ended = ends.filter { $0.value <= now }.map(\.key)
      for id in ended { ends[id] = nil }
      return ended
    }
  }
}

import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianSecrets
import MeridianStore
import RealtimeKit
import Synchronization

/// Live locations over the RealtimeKit hub (`GET /ws`, subprotocol `meridian.v1`).
///
/// Channels:
/// - `user:<id>`: every fix stored for that user, as recorded. The user may subscribe, and viewers who see the
///   user's location exactly while the user has no privacy zone. The user's own devices may also `publish` their
///   fixes there (a ``FixBatch`` as the payload): the server validates and stores them like `POST /v1/fixes`,
///   acknowledges once they are durable, and fans the stored fixes out.
/// - `seen_exact:<id>`, `seen_approximate:<id>`, `seen_town:<id>`: the user's fixes as an audience of that precision
///   sees them (DomainKit's `AudienceView`: coarsened, privacy zones applied); a viewer may subscribe to the channel of
///   their own precision (`GET /v1/sharing/visible` names it) or a coarser one.
/// - `group:<id>`: the fixes the group's owner shares with that group, at the group's precision with the owner's
///   zones applied; its members (and its owner) may subscribe while the group grants location.
/// - `sharing:<viewer id>`: `{"type": "sharing.visible", "userId"}` each time a person's sharing changes and the
///   viewer may see their location afterwards (a resume, a deadline lifted, added to a group): a page watches them
///   again at once instead of at its next `GET /v1/sharing/visible`. Only that viewer may subscribe.
///
/// Other features register their own namespaces with their subscribe rules (``LiveChannelRule``, given to
/// ``init(store:ingest:metrics:deviceHandles:socketsPerAccount:shareViewersPerLink:channels:configuration:logger:now:)`` by the
/// composition); the hub accepts only registered namespaces and ``LiveChannels`` dispatches each subscribe to its rule.
///
/// The hub delivers an event to every subscriber of a channel, so before each event and after every change of an
/// owner's privacy (pause, expiry, groups, Blacklist) the subscribers who may no longer see the owner are revoked
/// at once (`unsubscribed` with reason `revoked`); the authorization hook refuses their re-subscribe.
public struct LiveUpdates: Sendable {
  /// The hub serving `/ws`.
  public let hub: RealtimeHub
  let store: any MeridianStore
  let now: @Sendable () -> Int64
  private let metrics: ServerMetrics
  /// Viewers see devices by their handles, never by their ids.
  private let deviceHandles: DeviceHandleSource
  /// Owners' privacy settings for the fan-out, dropped on every change made through the API (``enforce(owner:)``)
  /// and after a few seconds anyway (changes made by another process, such as the admin CLI).
  private let settingsCache = LookupCache<UserID, PrivacySettings>(lifetime: 5_000, capacity: 10_000)
  /// Owners' share links for the fan-out, dropped and read again like ``settingsCache``.
  let shareLinkCache = LookupCache<UserID, [ShareLinkRecord]>(lifetime: 5_000, capacity: 10_000)
  /// The links subscribed to on this node, with their ends (``sweepEndedLinks(every:)``).
  let shareLinkEnds: ShareLinkEnds
  /// The pages open on share links on the other nodes, and what this node told them.
  let shareLinkViewers = ShareLinkViewers()
  private let logger: Logger
  /// Every namespace the hub serves, with its subscribe rule: this type's own and those of `channels`.
  let channels: LiveChannels
  /// Where the other nodes' word that an owner's geofences changed goes on this node.
  let geofenceChanges = GeofenceChangeRelay()

  /// A hub authenticating with the store's bearer tokens, authorizing with DomainKit's sharing rules (its own
  /// channels) and the rules of the other features' `channels`, and storing published fixes through `ingest`.
  init(
    store: any MeridianStore, ingest: FixIngest, metrics: ServerMetrics, deviceHandles: DeviceHandleSource,
    socketsPerAccount: Int, shareViewersPerLink: Int = 200, channels: [LiveChannelRule] = [],
    configuration: RealtimeHubConfiguration = .init(), audience: FixAudience? = nil,
    logger: Logger = Logger(label: "meridian.live"), now: @escaping @Sendable () -> Int64
  ) {
    self.store = store
    self.fixAudience = audience ?? FixAudience(gazetteer: GazetteerCache(store: store, now: now))
    self.ingest = ingest
    self.logger = logger
    self.now = now
    self.metrics = metrics
    self.deviceHandles = deviceHandles
    let ends = ShareLinkEnds()
    shareLinkEnds = ends
    let channels = LiveChannels(Self.ownChannels(store: store, ends: ends, now: now) + channels)
    self.channels = channels
    var configuration = configuration
    configuration.namespaces = channels.namespaces
    configuration.maxConnectionsPerPrincipal = ServerLimits.active(socketsPerAccount)
    // Nodes sharing a live log number events with its sequence: one epoch for all of them.
    if let log = store.liveLog { configuration.epoch = log.liveEpoch }
    hub = RealtimeHub(
      configuration: configuration,
      authenticate: { token in
        let hash = SecretHash.sha256(token)
        guard let user = try await Self.account(forTokenHash: hash, store: store, now: now) else {
          var principal = try await Self.sharePrincipal(tokenHash: hash, store: store, now: now())
          // A link's viewers are one principal: their own cap, larger than an account's.
          principal?.maxConnections = ServerLimits.active(shareViewersPerLink) ?? .max
          return principal
        }
        return RealtimePrincipal(id: user.rawValue, attributes: [Self.tokenAttribute: hash])
      },
      authorize: { principal, access, channel in
        if let link = principal.attributes[Self.shareLinkAttribute] {
          return try await Self.shareSocketMay(link, access, channel, channels: channels)
        }
        switch access {
        case .subscribe: return try await channels.maySubscribe(UserID(principal.id), to: channel)
        case .publish: return channel == ChannelName.user(principal.id)
        }
      },
      receive: { principal, request in
        try await Self.store(request.payload, from: UserID(principal.id), through: ingest)
      })
  }

  /// The account a bearer token (by its hash) signs in now: the hub's sign-in and the Socket.IO adapter's.
  static func account(forTokenHash hash: String, store: any MeridianStore, now: @Sendable () -> Int64) async throws
    -> UserID?
  {
    try await store.user(forTokenHash: hash, now: now())
  }

  /// The account `token` signs in now, as the hub checks it.
  func account(forToken token: String) async throws -> UserID? {
    try await Self.account(forTokenHash: SecretHash.sha256(token), store: store, now: now)
  }
  /// What others see of the fixes fanned out (precision per audience, privacy zones).
  let fixAudience: FixAudience
  /// Where fixes enter: told of every change to an owner's settings, on every node, so that a privacy zone that
  /// stores nothing holds for the next fix whichever node it reaches.
  let ingest: FixIngest

  /// The principal attribute holding the hash of the token a socket signed in with.
  static let tokenAttribute = "token"

  /// Closes, with 4001, the sockets opened with the token of `hash`, on every node: after a sign-out or a revocation
  /// the token no longer works, and neither does a session it opened. The user's other sessions stay.
  func disconnect(tokenHash hash: String, reason: String) async {
    await disconnectHere(tokenHash: hash, reason: reason)
    await announce(.tokenRevoked(hash: hash))
  }

  private func disconnectHere(tokenHash hash: String, reason: String) async {
    await hub.disconnect(matching: [Self.tokenAttribute: hash], code: .unauthorized, reason: reason)
  }

  /// Closes, with 4001, every socket of `user` on every node (the account was disabled or deleted), and those signed
  /// in with the user's share links.
  func disconnect(user: UserID, reason: String) async {
    await disconnectHere(user: user, reason: reason)
    await announce(.accountDisabled(user))
  }

  private func disconnectHere(user: UserID, reason: String) async {
    await hub.disconnect(principalID: user.rawValue, code: .unauthorized, reason: reason)
    _ = await hub.disconnect(matching: [Self.shareOwnerAttribute: user.rawValue], code: .unauthorized, reason: reason)
  }

  /// Tells the other nodes sharing the store's live log (none with SQLite). Best effort: a node that misses it still
  /// checks every subscriber against the owner's settings, read again within seconds, before each event.
  private func announce(_ signal: LiveSignal) async {
    guard let log = store.liveLog else { return }
    do {
      try await log.announce(signal)
    } catch {
      logger.warning("could not tell the other nodes", metadata: ["signal": "\(signal.text)", "error": "\(error)"])
    }
  }

  /// Stores a `publish`'s payload, a ``FixBatch``, for `user` the way `POST /v1/fixes` does; returns once it is
  /// durable. Its fan-out follows from the commit.
  ///
  /// - Throws: `RealtimeError` `invalid_payload` for a payload that isn't a valid batch, `forbidden` for another
  ///   account's device, `internal` (retried by the client) when the server can't store it now.
  static func store(_ payload: JSONValue, from user: UserID, through ingest: FixIngest) async throws {
    do {
      let batch: FixBatch = try RouteRegistrar.decodeBody(Data(payload.jsonText.utf8))
      _ = try await ingest.submit(user, batch)
    } catch let error as APIError {
      let code: RealtimeErrorCode =
        switch error.status {
        case 403: .forbidden
        case 400..<500: .invalidPayload
        default: .internal
        }
      throw RealtimeError(code: code, message: "\(error.code.rawValue): \(error.message)")
    }
  }

  /// Fans out every commit until `commits` (the writer's ``FixWriter/commits``) ends: this process's own commits, or,
  /// when the store has a live log that several nodes share, the log's entries, whichever node committed them.
  /// `afterEach` runs as each of this process's commits is read (the geofence monitor's wake-up).
  /// `then` runs with each of this process's commits after its live events (Home Assistant's positions).
  func fanOut(
    _ commits: AsyncStream<CommittedFixes>, afterEach: @escaping @Sendable () -> Void = {},
    then: @escaping @Sendable ([StoredFixes]) async -> Void = { _ in }
  ) async {
    guard let log = store.liveLog else {
      for await commit in commits {
        afterEach()
        let stored = Self.stored(commit.batches, receipts: commit.receipts)
        await publish(stored)
        await then(stored)
      }
      return
    }
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await follow(log) }
      // Their entries arrive through the log; this ends when the writer stops.
      for await commit in commits {
        afterEach()
        await then(Self.stored(commit.batches, receipts: commit.receipts))
      }
      group.cancelAll()
    }
  }

  /// The batches that stored something, as events.
  static func stored(_ batches: [FixInsertBatch], receipts: [FixReceipt]) -> [StoredFixes] {
    zip(batches, receipts).compactMap { batch, receipt in
      guard receipt.accepted > 0, batch.isLive else { return nil }
      let fixes = batch.fixes.sorted { $0.timestamp < $1.timestamp }.map { fix in
        var stored = fix
        stored.deviceID = batch.deviceID  // what the store keeps
        return stored
      }
      return StoredFixes(owner: batch.userID, device: batch.deviceID, fixes: fixes, sequence: nil)
    }
  }

  /// Reads `log` from its newest entry on, woken by its signals, and publishes each entry with its sequence number
  /// as its offset; acts on the other nodes' signals. After a lost connection it reads on from its cursor (or, when
  /// the log was pruned past it, from the oldest entry left, raising the hub's history floor). Until cancelled.
  func follow(_ log: any LiveLog) async {
    guard let start = await retrying({ try await log.newestLiveSequence() }) else { return }
    var cursor = start
    await hub.setHistoryFloor(cursor)
    let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        await log.listen { signal in
          switch signal {
          case .committed: wake.yield()
          case .listening:
            // Signals may have been missed while the node wasn't listening.
            geofenceChanges.heard(nil)
            wake.yield()
          case .sharingChanged(let owner): try? await enforceHere(owner: owner)
          case .geofencesChanged(let owner): geofenceChanges.heard(owner)
          case .groupDeleted(let group): await groupDeletedHere(group)
          case .tokenRevoked(let hash): await disconnectHere(tokenHash: hash, reason: "token revoked")
          case .accountDisabled(let user): await disconnectHere(user: user, reason: "account disabled")
          case .shareViewers(let node, let counts): shareLinkViewers.heard(node: node, counts: counts, at: now())
          case .published(let channels, let payload):
            guard let json = try? JSONValue.parse(Data(payload.utf8)) else { break }
            _ = await hub.publish(json, to: channels.compactMap(ChannelName.init))
          }
        }
        wake.finish()
      }
      wake.yield()
      for await _ in wakes {
        while !Task.isCancelled {
          guard let read = await retrying({ try await log.liveEntries(after: cursor, limit: 512, fixes: 5_000) }) else {
            break
          }
          switch read {
          case .truncated(let oldest):
            logger.warning("the live log was pruned past this node's cursor", metadata: ["cursor": "\(cursor)"])
            cursor = oldest
            await hub.setHistoryFloor(oldest)
            continue
          case .entries(let entries):
            guard let last = entries.last else { break }
            await publish(
              entries.compactMap { entry in
                entry.fixes.isEmpty
                  ? nil
                  : StoredFixes(
                    owner: entry.userID, device: entry.deviceID, fixes: entry.fixes, sequence: entry.sequence)
              })
            cursor = last.sequence
            continue
          }
          break
        }
      }
      group.cancelAll()
    }
  }

  /// `body`'s answer, retried every 200 ms while it throws; nil once the task is cancelled.
  private func retrying<T>(_ body: () async throws -> T) async -> T? {
    while !Task.isCancelled {
      do { return try await body() } catch {
        logger.warning("the live log does not answer; retrying", metadata: ["error": "\(error)"])
        try? await Task.sleep(for: .milliseconds(200))
      }
    }
    return nil
  }

  /// Publishes `payload` to `channels` on every node sharing the store's live log (`LiveSignal.published`; this node
  /// hears it back like the others), or on this node's hub when there is no log. Best effort, like every live event:
  /// a node that doesn't hear the signal misses the event; a payload too large for a signal goes to this node only.
  func publishEverywhere(_ payload: JSONValue, to channels: [ChannelName]) async {
    await publishEverywhere([(payload: payload, channels: channels)])
  }

  /// Publishes the payload of each of `items` that has one (`payload` makes it, and names its channels) as
  /// ``publishEverywhere(_:to:)`` does, in their order, with one announcement (a round trip to the database) per run
  /// of 256: what is held in memory at once.
  func publishEverywhere<Items: Collection>(
    _ items: Items, payload: (Items.Element) -> (payload: JSONValue, channels: [ChannelName])?
  ) async {
    var run: [(payload: JSONValue, channels: [ChannelName])] = []
    run.reserveCapacity(min(items.count, 256))
    for item in items {
      guard let event = payload(item) else { continue }
      run.append(event)
      if run.count == 256 {
        await publishEverywhere(run)
        run.removeAll(keepingCapacity: true)
      }
    }
    await publishEverywhere(run)
  }

  /// Publishes each of `events` as ``publishEverywhere(_:to:)`` does, in their order, with one announcement for all
  /// of them.
  private func publishEverywhere(_ events: [(payload: JSONValue, channels: [ChannelName])]) async {
    guard let log = store.liveLog else {
      for (payload, channels) in events { _ = await hub.publish(payload, to: channels) }
      return
    }
    var signals: [(signal: LiveSignal, payload: JSONValue, channels: [String])] = []
    // Announces what is collected, or publishes it here when the log can't be reached.
    func announce() async {
      guard !signals.isEmpty else { return }
      do {
        try await log.announce(signals.map(\.signal))
      } catch {
        logger.warning("could not send events to the other nodes", metadata: ["error": "\(error)"])
        for item in signals { _ = await hub.publish(item.payload, to: item.channels.compactMap(ChannelName.init)) }
      }
      signals.removeAll()
    }
    for (payload, channels) in events {
      let text = payload.jsonText
      guard text.utf8.count < 6_000 else {
        // Too large for a signal: this node only (what was collected is announced first).
        await announce()
        _ = await hub.publish(payload, to: channels)
        continue
      }
      // Each signal's names and payload stay below PostgreSQL's 8,000-byte NOTIFY limit.
      var batches: [[String]] = [[]]
      var size = text.utf8.count
      for channel in channels.map(\.description) {
        if size + channel.utf8.count + 1 > 7_000, !(batches.last ?? []).isEmpty {
          batches.append([])
          size = text.utf8.count
        }
        batches[batches.count - 1].append(channel)
        size += channel.utf8.count + 1
      }
      for batch in batches where !batch.isEmpty {
        signals.append((.published(channels: batch, payload: text), payload, batch))
      }
    }
    await announce()
  }

  /// `owner`'s privacy settings as the fan-out knows them: cached for a few seconds, dropped on every change made
  /// through the API (``enforce(owner:)``). Nil for an unknown owner.
  func privacySettings(of owner: UserID) async throws -> PrivacySettings? {
    try await settingsCache.value(for: owner, now: now(), load: { try await store.privacySettings(owner: owner) })
  }

  /// This type's own channels: `user:<id>` and `group:<id>` (whoever may see the owner's location there, by
  /// ``mayReceive(_:_:of:at:)``) and `sharing:<viewer id>` (only that viewer).
  static func ownChannels(
    store: any MeridianStore, ends: ShareLinkEnds = ShareLinkEnds(), now: @escaping @Sendable () -> Int64
  ) -> [LiveChannelRule] {
    func location(_ namespace: String, owner: @escaping @Sendable (String) async throws -> UserID?) -> LiveChannelRule {
      LiveChannelRule(namespace: namespace) { viewer, id in
        guard let owner = try await owner(id), let settings = try await store.privacySettings(owner: owner),
          let channel = ChannelName(namespace: namespace, id: id)
        else { return false }
        return mayReceive(viewer, channel, of: settings, at: now())
      }
    }
    return [
      location("user") { UserID($0) },
      location("group") { try await store.group(GroupID($0))?.ownerID },
    ]
      + seenPrecisions.map { precision in location(seenNamespace(precision)) { UserID($0) } }
      + [
        .perViewer(sharingNamespace),
        shareChannelRule(store: store, ends: ends, now: now),
      ]
  }

  /// Whether `viewer` may receive the events of `channel`, one of the channels of the owner of `settings`:
  /// `user:<owner>` (the fixes as recorded) when they are the owner, or see the location exactly and the owner has no
  /// privacy zone; `seen_<precision>:<owner>` when they see the location at that precision or a finer one;
  /// `group:<id>` when they own the group, or are a member of it, it grants location and they may see the location.
  static func mayReceive(_ viewer: UserID, _ channel: ChannelName, of settings: PrivacySettings, at now: Int64)
    -> Bool
  {
    switch channel.namespace {
    case "user":
      guard channel.id == settings.owner.rawValue else { return false }
      if viewer == settings.owner { return true }
      return settings.zones.isEmpty && Sharing.precision(for: viewer, of: settings, at: now) == .exact
    case "group":
      guard let group = settings.groups.first(where: { $0.id.rawValue == channel.id }), group.kind != .blacklist
      else { return false }
      if viewer == settings.owner { return true }
      return group.members.contains(viewer) && group.visibility.grantsLocation
        && Sharing.canSee(viewer, .location, of: settings, at: now)
    default:
      guard let precision = seenPrecision(channel.namespace), channel.id == settings.owner.rawValue else {
        return false
      }
      return Sharing.precision(for: viewer, of: settings, at: now).covers(precision)
    }
  }

  /// The precisions with a `seen_<precision>:<owner>` channel.
  static let seenPrecisions: [LocationPrecision] = [.exact, .approximate, .town]

  /// The namespace of the channels of `precision`: `seen_exact`, `seen_approximate`, `seen_town`.
  static func seenNamespace(_ precision: LocationPrecision) -> String { "seen_" + precision.rawValue }

  /// The precision of a `seen_…` namespace; nil for any other.
  static func seenPrecision(_ namespace: String) -> LocationPrecision? {
    guard namespace.hasPrefix("seen_") else { return nil }
    return LocationPrecision(rawValue: String(namespace.dropFirst(5))).flatMap { $0 == .hidden ? nil : $0 }
  }

  /// The channel that carries `owner`'s fixes at `precision`, `seen_<precision>:<owner>`; nil for `hidden`.
  static func seenChannel(_ owner: UserID, _ precision: LocationPrecision) -> ChannelName? {
    guard precision != .hidden else { return nil }
    return ChannelName(namespace: seenNamespace(precision), id: owner.rawValue)
  }

  /// Where an owner's fixes go: `precision` nil for the fixes as recorded, else the view at that precision with the
  /// owner's zones applied (``FixAudience``), each to its channels.
  struct Route: Sendable {
    var precision: LocationPrecision?
    var channels: [ChannelName]
  }

  /// The routes of an owner's fixes: as recorded to `user:<owner>`; each precision's view to `seen_<precision>:<owner>`
  /// and the groups granting location at that precision. While the owner has no zone, the exact view is the
  /// recorded fixes: its channels take the recorded payload (one payload, no second pass over the fixes).
  static func routes(of settings: PrivacySettings) -> [Route] {
    let owner = settings.owner
    var byPrecision: [LocationPrecision: [ChannelName]] = [:]
    byPrecision[.exact] = [seenChannel(owner, .exact)].compactMap { $0 }
    for group in settings.groups where group.kind != .blacklist && group.visibility.grantsLocation {
      let precision = group.visibility.precision
      if byPrecision[precision] == nil { byPrecision[precision] = [seenChannel(owner, precision)].compactMap { $0 } }
      if let channel = ChannelName.group(group.id.rawValue) { byPrecision[precision, default: []].append(channel) }
    }
    var recorded = [ChannelName.user(owner.rawValue)].compactMap { $0 }
    if settings.zones.isEmpty { recorded += byPrecision.removeValue(forKey: .exact) ?? [] }
    return [Route(precision: nil, channels: recorded)]
      + seenPrecisions.compactMap { precision in
        byPrecision[precision].map { Route(precision: precision, channels: $0) }
      }
  }

  /// Every channel an owner's fixes may go to (``routes(of:)``), and every `seen_…` one.
  static func channels(of settings: PrivacySettings) -> [ChannelName] {
    var channels = routes(of: settings).flatMap(\.channels)
    for precision in seenPrecisions {
      if let channel = seenChannel(settings.owner, precision), !channels.contains(channel) { channels.append(channel) }
    }
    return channels
  }

  /// Revokes, on every channel of `owner` (including groups that no longer grant location) and on every node, the
  /// live subscribers who may not see the owner's location now. Call after any change to the owner's sharing or
  /// groups.
  /// Then tells every viewer who may see the owner's location now, on their `sharing:<viewer>` channel and on every
  /// node, so that a page shows the owner again at once (after a resume, say).
  public func enforce(owner: UserID) async throws {
    try await refresh(owner: owner)
    guard let settings = try await store.privacySettings(owner: owner) else { return }
    let viewers = Self.viewers(of: settings, at: now()).compactMap(Self.sharingChannel)
    if !viewers.isEmpty {
      await publishEverywhere(
        .object(["type": .string("sharing.visible"), "userId": .string(owner.rawValue)]), to: viewers)
    }
  }

  /// Drops what this node and every other node remember of `owner`'s settings and share links, and revokes the
  /// live subscribers who may no longer see the owner: call after any change to them (a new share link too).
  func refresh(owner: UserID) async throws {
    try await enforceHere(owner: owner)
    await announce(.sharingChanged(owner: owner))
  }

  /// Tells every other node sharing the store's live log that `owner`'s geofences changed (best effort: a node that
  /// misses it reads them again within its index's lifetime, or when it starts listening again).
  func geofencesChanged(owner: UserID) async {
    await announce(.geofencesChanged(owner: owner))
  }

  /// The namespace of each viewer's channel of sharing changes.
  static let sharingNamespace = "sharing"

  /// `viewer`'s channel of sharing changes.
  static func sharingChannel(_ viewer: UserID) -> ChannelName? {
    ChannelName(namespace: sharingNamespace, id: viewer.rawValue)
  }

  /// The members of the owner's groups who may see the owner's location at `now`.
  static func viewers(of settings: PrivacySettings, at now: Int64) -> [UserID] {
    let members = Set(settings.groups.filter { $0.kind != .blacklist }.flatMap(\.members))
    return members.filter { $0 != settings.owner && Sharing.canSee($0, .location, of: settings, at: now) }
      .sorted { $0.rawValue < $1.rawValue }
  }

  private func enforceHere(owner: UserID) async throws {
    settingsCache.remove(owner)
    shareLinkCache.remove(owner)
    ingest.zonesChanged(owner)
    guard let settings = try await store.privacySettings(owner: owner) else { return }
    var channels = [ChannelName.user(owner.rawValue)].compactMap { $0 }
    channels += settings.groups.compactMap { ChannelName.group($0.id.rawValue) }
    channels += Self.seenPrecisions.compactMap { Self.seenChannel(owner, $0) }
    await enforce(settings, on: channels)
    let links = try await watchedShareLinks(of: owner, at: now())
    await enforce(links, sharing: settings.sharing)
    // Who may receive these channels changed: an event kept for resuming (published while the owner was paused, or
    // before a viewer lost their grant) must not be replayed to whoever resumes from before now.
    await hub.forgetHistory(of: channels + links.compactMap { Self.shareChannel($0.id) })
  }

  /// Revokes a deleted group's channel from everyone, on every node.
  public func groupDeleted(_ group: GroupID) async {
    await groupDeletedHere(group)
    await announce(.groupDeleted(group))
  }

  private func groupDeletedHere(_ group: GroupID) async {
    guard let channel = ChannelName.group(group.rawValue) else { return }
    await hub.revoke(channel, from: nil)
  }

  private func enforce(_ settings: PrivacySettings, on channels: [ChannelName]) async {
    for (channel, principal) in await unauthorized(settings, on: channels) {
      await hub.revoke(channel, from: principal)
    }
  }

  /// The subscribers of `channels` who may not see the owner of `settings` now.
  private func unauthorized(_ settings: PrivacySettings, on channels: [ChannelName]) async
    -> [(channel: ChannelName, principal: String)]
  {
    let time = now()
    var found: [(channel: ChannelName, principal: String)] = []
    for (channel, principals) in zip(channels, await hub.presence(of: channels)) {
      for principal in principals where !Self.mayReceive(UserID(principal.id), channel, of: settings, at: time) {
        found.append((channel, principal.id))
      }
    }
    return found
  }

  /// Who an owner's fixes go to: the owner's channels by their privacy settings, and their share links' channels.
  struct Audience: Sendable {
    var settings: PrivacySettings
    /// ``routes(of:)``.
    var routes: [Route]
    /// The share links the fan-out watches (``watchedShareLinks(of:at:)``).
    var links: [ShareLinkRecord]

    /// Every channel of ``routes``.
    var channels: [ChannelName] { routes.flatMap(\.channels) }

    /// The owner's routes a fix goes to at `time`: while the owner's sharing is paused
    /// (``ShareLinkRules/isPaused(_:at:)``) only `user:<owner>`, whose audience includes the owner, so nothing goes
    /// into the history of a channel whose whole audience is paused (a resume after the owner resumes replays
    /// nothing from the pause).
    func routes(at time: Int64) -> [Route] {
      guard ShareLinkRules.isPaused(settings.sharing, at: time) else { return routes }
      let own = ChannelName.user(settings.owner.rawValue)
      return [Route(precision: nil, channels: [own].compactMap { $0 })]
    }

    /// The links whose channels get a fix of `device` at `time`: the active ones covering it, none while paused.
    func links(showing device: DeviceID, at time: Int64) -> [ShareLinkRecord] {
      links.filter { $0.showsLocation(at: time, sharing: settings.sharing) && $0.covers(device) }
    }
  }

  /// One request's stored fixes, for the fan-out; `sequence` is the live log's (nil for this process's commits).
  struct StoredFixes: Sendable {
    var owner: UserID
    var device: DeviceID
    var fixes: [LocationFix]
    var sequence: UInt64?
  }

  /// Fans each request's fixes out to its owner's channels as one event, after revoking anyone who may no longer see
  /// them (a sharing expiry passes without any request); events from the live log take its sequence numbers as
  /// their offsets.
  ///
  /// A commit holds many requests, often of the same few owners: all its events are checked against the subscribers
  /// of their channels and published in one step on the hub, instead of a hop onto the hub per request; only when
  /// someone fails the check are the settings read again, the subscriber revoked and the events published after.
  func publish(_ stored: [StoredFixes]) async {
    let time = now()
    // A live event is best effort: fixes whose owner's settings can't be read now are stored and readable over HTTP.
    func audience(of owner: UserID) async -> Audience? {
      guard
        let settings = try? await settingsCache.value(
          for: owner, now: time, load: { try await store.privacySettings(owner: owner) })
      else { return nil }
      let links = (try? await watchedShareLinks(of: owner, at: time)) ?? []
      return Audience(settings: settings, routes: Self.routes(of: settings), links: links)
    }
    var audiences: [UserID: Audience] = [:]
    for item in stored where audiences[item.owner] == nil {
      audiences[item.owner] = await audience(of: item.owner)
    }
    guard !audiences.isEmpty, let handles = try? await deviceHandles.handles() else { return }
    // The payloads don't depend on the settings, only the channels do: built once, addressed again after a refresh.
    // Devices appear by their handles: a device id is what its owner's apps report with.
    let located = stored.map { item in
      let device = handles.handle(of: item.device, owner: item.owner)
      let fixes = item.fixes.map { handles.redacted($0, owner: item.owner, known: (item.device, device)) }
      return (
        owner: item.owner, device: item.device, handle: device, fixes: fixes,
        payload: Self.payload(LiveLocation(userId: item.owner, deviceId: device, fixes: fixes)), sequence: item.sequence
      )
    }
    // Each request is one event per route of the owner (the fixes as recorded, and each precision's view of them,
    // ``FixAudience``) and one per link showing it, with the fixes that link shows
    // (``ShareLinkRules/liveFixes(_:of:sharing:)``) at its precision and no account id; all of a request's events
    // take its offset. A view that shows nothing of the request (every fix in a hidden zone) is no event.
    func events() async -> (events: [(payload: JSONValue, channels: [ChannelName])], offsets: [UInt64]?) {
      var events: [(payload: JSONValue, channels: [ChannelName])] = []
      var offsets: [UInt64] = []
      for item in located {
        guard let audience = audiences[item.owner] else { continue }
        let zones = audience.settings.zones
        var addressed: [(payload: JSONValue, channels: [ChannelName])] = []
        for route in audience.routes(at: time) {
          guard let precision = route.precision else {
            addressed.append((item.payload, route.channels))
            continue
          }
          guard let batch = await fixAudience.batch(item.fixes, precision: precision, zones: zones) else { continue }
          let view = LiveLocation(
            userId: item.owner, deviceId: item.handle, fixes: batch.fixes,
            precision: precision == .exact ? nil : precision, town: batch.town, privateZoneAt: batch.privateZoneAt)
          addressed.append((Self.payload(view), route.channels))
        }
        for link in audience.links(showing: item.device, at: time) {
          let fixes = ShareLinkRules.liveFixes(item.fixes, of: link, sharing: audience.settings.sharing)
          guard !fixes.isEmpty, let channel = Self.shareChannel(link.id),
            let batch = await fixAudience.batch(fixes, precision: link.precision, zones: zones)
          else { continue }
          let shared = SharedLiveLocation(
            deviceId: item.handle, fixes: batch.fixes, town: batch.town, privateZoneAt: batch.privateZoneAt)
          addressed.append((Self.payload(shared), [channel]))
        }
        events += addressed
        if let sequence = item.sequence { offsets += addressed.map { _ in sequence } }
      }
      return (events, offsets.count == events.count ? offsets : nil)
    }
    var published = await events()
    // One step on the hub checks every subscriber against the remembered settings and publishes.
    var settingsOfChannel: [ChannelName: PrivacySettings] = [:]
    var linkOfChannel: [ChannelName: (link: ShareLinkRecord, sharing: SharingState)] = [:]
    for audience in audiences.values {
      for channel in audience.channels { settingsOfChannel[channel] = audience.settings }
      for link in audience.links {
        if let channel = Self.shareChannel(link.id) { linkOfChannel[channel] = (link, audience.settings.sharing) }
      }
      // A link that ended gets no events, so no check before one: its subscribers are revoked here.
      let ended = audience.links.filter { $0.state(at: time) != .active }
      if !ended.isEmpty { await enforce(ended, sharing: audience.settings.sharing) }
    }
    let (remembered, rememberedLinks) = (settingsOfChannel, linkOfChannel)
    let passed = await hub.publish(published.events, offsets: published.offsets) { channel, principal in
      if let shared = rememberedLinks[channel] {
        return Self.mayReceive(principal.id, shared.link, sharing: shared.sharing, at: time)
      }
      return remembered[channel].map { Self.mayReceive(UserID(principal.id), channel, of: $0, at: time) } ?? true
    }
    if passed == nil {
      // Someone may no longer see an owner, or the remembered settings predate a change (a resume): read every
      // owner's settings again, revoke who may not see the owner now, and publish to the current channels.
      for owner in Array(audiences.keys) {
        settingsCache.remove(owner)
        shareLinkCache.remove(owner)
        audiences[owner] = await audience(of: owner)
        if let current = audiences[owner] {
          await enforce(current.settings, on: current.channels)
          await enforce(current.links, sharing: current.settings.sharing)
        }
      }
      published = await events()
      await hub.publish(published.events, offsets: published.offsets)
    }
    metrics.liveEvents.increment(by: Int64(published.events.reduce(0) { $0 + $1.channels.count }))
  }

  /// The event payload of `location`: its JSON form (`LiveLocation`'s and `LocationFix`'s wire names) built directly,
  /// without a JSON encoder and decoder round trip for every batch.
  static func payload(_ location: LiveLocation) -> JSONValue {
    var object: [String: JSONValue] = [
      "userId": .string(location.userId.rawValue), "deviceId": .string(location.deviceId.rawValue),
      "fixes": .array(location.fixes.map(json)),
    ]
    if let precision = location.precision { object["precision"] = .string(precision.rawValue) }
    if let town = location.town { object["town"] = .string(town) }
    if let time = location.privateZoneAt { object["privateZoneAt"] = .int(time) }
    return .object(object)
  }

  /// The event payload of `location`, a share link's: ``SharedLiveLocation``'s JSON form (no account id).
  static func payload(_ location: SharedLiveLocation) -> JSONValue {
    var object: [String: JSONValue] = [
      "deviceId": .string(location.deviceId.rawValue), "fixes": .array(location.fixes.map(json)),
    ]
    if let town = location.town { object["town"] = .string(town) }
    if let time = location.privateZoneAt { object["privateZoneAt"] = .int(time) }
    return .object(object)
  }

  /// A fix as `LocationFix`'s `Codable` form writes it (absent values left out).
  static func json(_ fix: LocationFix) -> JSONValue {
    var object: [String: JSONValue] = [
      "timestamp": .int(fix.timestamp), "latitude": .double(fix.latitude), "longitude": .double(fix.longitude),
      "kind": .string(fix.kind.rawValue),
    ]
    func set(_ key: String, _ value: Double?) { if let value { object[key] = .double(value) } }
    if let device = fix.deviceID { object["deviceId"] = .string(device.rawValue) }
    set("horizontalAccuracy", fix.horizontalAccuracy)
    set("verticalAccuracy", fix.verticalAccuracy)
    set("altitude", fix.altitude)
    set("speed", fix.speed)
    set("speedAccuracy", fix.speedAccuracy)
    set("course", fix.course)
    set("batteryLevel", fix.batteryLevel)
    if let floor = fix.floor { object["floor"] = .int(Int64(floor)) }
    if let state = fix.batteryState { object["batteryState"] = .string(state.rawValue) }
    if let trigger = fix.trigger { object["trigger"] = .string(trigger.rawValue) }
    if let refined = fix.refinedBy {
      var link: [String: JSONValue] = ["timestamp": .int(refined.timestamp)]
      if let device = refined.deviceID { link["deviceId"] = .string(device.rawValue) }
      object["refinedBy"] = .object(link)
    }
    return .object(object)
  }
}

/// Where the live log's word that some owner's geofences changed goes on this node: to the one handler registered
/// (the geofence monitor's).
final class GeofenceChangeRelay: Sendable {
  private let handler = Mutex<(@Sendable (UserID?) -> Void)?>(nil)

  /// Calls `handler` with each owner whose fences a node changed (this one included: it hears its own signals back),
  /// or with nil when any may have changed (this node missed signals); replaces the handler registered before.
  func onChange(_ handler: @escaping @Sendable (UserID?) -> Void) { self.handler.withLock { $0 = handler } }

  /// Passes on that `owner`'s fences (nil: anyone's) changed.
  func heard(_ owner: UserID?) { handler.withLock { $0 }?(owner) }
}

import DomainKit
import Foundation
import GeoKit
import Logging
import MeridianAPI
import MeridianStore
import RealtimeKit
import ServiceLifecycle
import Synchronization

/// Called after each commit that queued webhook deliveries of geofence events (``GeofenceMonitor/webhookEvent``), so
/// that the delivery service looks at the outbox at once — ``WebhookOutbox/wake()``.
public typealias GeofenceWebhookWake = @Sendable () -> Void

/// Evaluates stored fixes against the geofences that concern their owner — the person's own and those others share
/// with them — with DomainKit's ``GeofenceRules``, off the request path, following the store's durable
/// ``GeofenceQueue``: the transaction that stores an upload's fixes queues them, and the transaction that stores their
/// evaluation (state, events, webhook deliveries) removes them from the queue. A burst, a slow monitor or a restart
/// never loses an evaluation: the queue waits in the database and the monitor reads it from its oldest entry,
/// ``GeofenceSettings/queueBatch`` entries at a time and about ``GeofenceSettings/queueFixes`` fixes (what it holds
/// in memory, however long the queue grows and however large the uploads). This
/// node's commits wake it; it looks every ``GeofenceSettings/queuePollInterval`` for other nodes' entries. The
/// state lives in the store (``GeofenceStore/commitGeofenceTracking(_:)`` over the version read), so two nodes
/// reading the same entries, or a restart between an evaluation and the removal of its entries, store nothing
/// twice: a person's fixes not newer than their last evaluated one are skipped.
///
/// Per person and read: whose fences concern the person comes from a cache (a person no fence concerns costs no
/// query), the fences near the fixes and those of the stored states come from this node's in-memory
/// ``GeofenceIndex`` (decoded once, geohash cells), and the owners' privacy settings from the live fan-out's cache.
///
/// Each stored event goes, live, to the `geofence:<id>` channel of the person and of everyone allowed to see both
/// the person's location and the geofence (its owner among them when they may see the person); the events the
/// fence's owner may see are queued for webhooks in the same transaction as the events themselves. Imported fixes
/// are not evaluated.
final class GeofenceMonitor: Sendable {
  /// The namespace of the per-viewer event channel `geofence:<viewer id>`.
  static let namespace = "geofence"
  /// The namespace's rule: only the viewer whose channel it is may subscribe.
  static let channelRule = LiveChannelRule.perViewer(namespace)

  let store: any MeridianStore
  let live: LiveUpdates
  let settings: GeofenceSettings
  var rules: GeofenceRules { settings.rules }
  let webhookWake: GeofenceWebhookWake
  let now: @Sendable () -> Int64
  let logger: Logger
  /// Counts the fixes evaluated and the events stored.
  let metrics: ServerMetrics
  private let locks = KeyedLock()
  /// Wakes ``run()`` when this node committed fixes (or ``finish()`` was called).
  private let queued = WakeSignal()
  /// Set by ``finish()``: ``run()`` returns after the commit it is making.
  private let finishing = Mutex(false)
  /// How many people of one read are evaluated at once.
  static let parallelPeople = 4
  /// The owners whose fences may concern a person — the person and whoever may share with them — or none when none
  /// of them has a fence (remembered as well, so such a person's batches cost no query).
  private let concerned = LookupCache<UserID, [UserID]>(lifetime: 5_000, capacity: 10_000)
  /// Each person's tracking as this node last read or committed it (a commit's update applied to the tracking it was
  /// made from, ``GeofenceTracking/applying(_:)``), so that their next commit reads nothing: a commit made over a
  /// tracking another commit has since replaced (another node's, or a device's reported transition) is refused by
  /// its version, and the tracking is then read from the store — as it is when the kept one gives nothing to store.
  private let trackings = LookupCache<UserID, GeofenceTracking>(lifetime: 60_000, capacity: 10_000)
  /// The concerned owners' fences, decoded once, under geohash cells (this node's): an owner's read again after a
  /// change made here or heard from another node through the live log, and after ``indexLifetime`` anyway.
  let index: GeofenceIndex
  /// How long an owner's fences are kept in memory, ms: what bounds how long a change stays unseen when its signal
  /// was lost (another node's, with no live log between them).
  static let indexLifetime: Int64 = 60_000
  /// The proximity rules, evaluated on the same queue entries before they leave the queue.
  let proximity: ProximityMonitor

  /// A monitor with the operator's rules, publishing through `live` and waking the webhook delivery with `wake`.
  init(
    store: any MeridianStore, live: LiveUpdates, settings: GeofenceSettings = GeofenceSettings(),
    wake: @escaping GeofenceWebhookWake = {}, now: @escaping @Sendable () -> Int64, metrics: ServerMetrics,
    logger: Logger = Logger(label: "meridian.geofences")
  ) {
    self.metrics = metrics
    self.store = store
    self.live = live
    self.settings = settings
    self.webhookWake = wake
    self.now = now
    self.logger = logger
    let index = GeofenceIndex(store: store, lifetime: Self.indexLifetime)
    self.index = index
    proximity = ProximityMonitor(store: store, live: live, rules: settings.rules, wake: wake, now: now)
    live.geofenceChanges.onChange { [concerned] owner in Self.forget(owner, concerned: concerned, index: index) }
  }

  /// The channel of `viewer`'s geofence events.
  static func channel(_ viewer: UserID) -> ChannelName? { ChannelName(namespace: namespace, id: viewer.rawValue) }

  /// Tells ``run()`` that this node queued fixes (never waits).
  func wake() { queued.wake() }

  /// Tells ``run()`` to return after the commit it is making (at shutdown, after the writer's last commit): what is
  /// still queued waits in the store for the next start, or another node.
  func finish() {
    finishing.withLock { $0 = true }
    queued.wake()
  }

  /// Follows the geofence queue until ``finish()`` or cancellation; what is still queued then waits in the store for
  /// the next start. A failed read or evaluation is tried again, from the same entries, after a pause that grows to
  /// 5 s: entries leave the queue only once evaluated.
  func run() async {
    var failures = 0
    while !Task.isCancelled, !finishing.withLock({ $0 }) {
      do {
        let more = try await evaluateQueued()
        failures = 0
        if more { continue }
        await queued.wait(timeout: settings.queuePollInterval)
      } catch {
        if Task.isCancelled { return }
        failures += 1
        logger.warning(
          "could not evaluate the geofence queue; trying again",
          metadata: ["error": "\(error)", "failures": "\(failures)"])
        try? await Task.sleep(for: min(.milliseconds(50) * (1 << min(failures, 7)), .seconds(5)))
      }
    }
  }

  /// Evaluates the queue's oldest entries (at most ``GeofenceSettings/queueBatch``, and about
  /// ``GeofenceSettings/queueFixes`` fixes), each person's in commit order, and removes them; true when the read was
  /// full (more may wait). After ``finish()``, the people being evaluated
  /// stop after their commit in progress and the read's entries stay in the queue (the others' evaluations go on to
  /// their end: none is cancelled between its commit and its delivery).
  func evaluateQueued() async throws -> Bool {
    let entries = try await store.geofenceQueue(limit: settings.queueBatch, fixes: settings.queueFixes)
    guard !entries.isEmpty else { return false }
    var people: [UserID] = []
    var byPerson: [UserID: [GeofenceQueueEntry]] = [:]
    for entry in entries {
      if byPerson[entry.userID] == nil { people.append(entry.userID) }
      byPerson[entry.userID, default: []].append(entry)
    }
    let complete = try await withThrowingTaskGroup(of: Bool.self) { group in
      var complete = true
      for (index, person) in people.enumerated() {
        if index >= Self.parallelPeople { complete = (try await group.next() ?? true) && complete }
        guard complete else { break }
        let queued = byPerson[person] ?? []
        group.addTask {
          for run in Self.runs(of: queued, fixes: Self.fixesPerRun) {
            guard try await self.evaluate(person, run.fixes, completing: run.completing) else { return false }
          }
          return true
        }
      }
      for try await evaluated in group { complete = complete && evaluated }
      return complete
    }
    guard complete else { return false }
    // The entries whose evaluation stored nothing (no fence concerned them, nothing changed).
    try await store.removeGeofenceQueueEntries(entries.map(\.sequence))
    // Full by entries or by fixes (fixes deleted since make a read look short: the next poll reads on).
    return entries.count >= settings.queueBatch
      || entries.reduce(0) { $0 + $1.fixes.count } >= settings.queueFixes
  }

  /// The most fixes one run of a person's queued fixes holds (``runs(of:fixes:)``): what bounds the fixes held in
  /// memory when a person's uploads pile up in the queue. Its commits are bounded by their events
  /// (``GeofenceSettings/eventsPerCommit``).
  static let fixesPerRun = 1_000

  /// The fixes of `entries` (one person's; imported ones left out) in the order of their times, cut into runs of
  /// `limit` (more when fixes of one time straddle the cut: a run's commit marks its last time as evaluated, so a
  /// fix of that time in the next run would be skipped), each with the entries whose last fix in that order it
  /// holds: those its commit may remove, every fix of theirs evaluated by then. An entry without such a fix goes
  /// with the first run; no run at all when none has one.
  static func runs(of entries: [GeofenceQueueEntry], fixes limit: Int) -> [(
    fixes: [LocationFix], completing: [UInt64]
  )] {
    var ordered: [(fix: LocationFix, entry: Int, offset: Int)] = []
    for (index, entry) in entries.enumerated() {
      for (offset, fix) in entry.fixes.enumerated() where fix.kind != .imported {
        ordered.append((fix, index, offset))
      }
    }
    guard !ordered.isEmpty else { return [] }
    ordered.sort { ($0.fix.timestamp, $0.entry, $0.offset) < ($1.fix.timestamp, $1.entry, $1.offset) }
    let limit = max(1, limit)
    var runs: [(fixes: [LocationFix], completing: [UInt64])] = []
    var lastRun = [Int](repeating: 0, count: entries.count)
    var start = 0
    while start < ordered.count {
      var end = min(start + limit, ordered.count)
      while end < ordered.count, ordered[end].fix.timestamp == ordered[end - 1].fix.timestamp { end += 1 }
      for item in ordered[start..<end] { lastRun[item.entry] = runs.count }
      runs.append((ordered[start..<end].map(\.fix), []))
      start = end
    }
    for (index, entry) in entries.enumerated() { runs[lastRun[index]].completing.append(entry.sequence) }
    return runs
  }

  /// Forgets `owner`'s fences, here and on every node sharing the live log, and which people are concerned by which
  /// owners' fences: after one of the owner's fences is created, changed or deleted.
  func fencesChanged(owner: UserID) async {
    Self.forget(owner, concerned: concerned, index: index)
    await live.geofencesChanged(owner: owner)
  }

  /// Forgets `owner`'s fences (nil: everyone's), and which owners concern the people `owner` may concern: those
  /// concerned by `owner` and those concerned by nobody (an owner's first fence concerns them now).
  private static func forget(_ owner: UserID?, concerned: LookupCache<UserID, [UserID]>, index: GeofenceIndex) {
    guard let owner else {
      concerned.removeAll { _ in true }
      index.invalidateAll()
      return
    }
    concerned.removeAll { $0.isEmpty || $0.contains(owner) }
    index.invalidate(owner: owner)
  }

  // MARK: Evaluation

  /// An event with the people it goes to live.
  struct Addressed: Sendable {
    var event: GeofenceEventItem
    var audience: [UserID]
  }

  /// Evaluates `fixes` (`user`'s, sorted by time) and stores the new state and events, a commit per
  /// ``GeofenceSettings/eventsPerCommit`` events, the last of them removing the queue's entries `entries`; delivers
  /// each commit's events. False when ``finish()`` stopped it before the last commit.
  /// - Throws: the store's errors, or ``GeofenceContention`` when the person's state kept changing.
  func evaluate(_ user: UserID, _ fixes: [LocationFix], completing entries: [UInt64]) async throws -> Bool {
    guard !fixes.isEmpty else { return true }
    // Proximity rules first: their commits are in before this evaluation lets the entries go.
    try await proximity.evaluate(user, fixes)
    let time = now()
    let owners = try await concernedOwners(user, at: time)
    guard !owners.isEmpty else {
      metrics.geofenceFixesEvaluated.increment(by: Int64(fixes.count))
      return true
    }
    // One snapshot of the concerned owners' fences for the whole run; each fix's fences by slot.
    let fences = try await index.snapshot(owners: owners, now: time)
    var rest = fixes.map { fix in (fix: fix, near: fences.slots(near: fix.coordinate)) }[...]
    // A commit per ``GeofenceSettings/eventsPerCommit`` events; the entries go with the one that reaches the last fix.
    while !rest.isEmpty {
      // At shutdown, the rest waits in the queue: entries leave only with the commit of their last fix.
      if finishing.withLock({ $0 }) { return false }
      let pending = rest
      let committed = try await commit(for: user) { tracking in
        guard
          let (update, events) = try await self.step(
            user, pending, tracking, fences: fences, at: time, eventLimit: self.settings.eventsPerCommit)
        else { return nil }
        var entriesUpdate = update
        if update.lastFixAt == pending.last?.fix.timestamp { entriesUpdate.evaluatedEntries = entries }
        return (entriesUpdate, events)
      }
      guard let committed else { throw GeofenceContention(user: user) }
      // The fixes up to where the commit went (all when it stored nothing: every pending fix was evaluated before,
      // on another node or before a restart); of them, those after the state it started from are its own.
      let done =
        committed.update?.lastFixAt.map { last in pending.prefix { $0.fix.timestamp <= last }.count }
        ?? pending.count
      let evaluated = pending.prefix(done).count { item in committed.from.map { item.fix.timestamp > $0 } ?? true }
      rest = rest.dropFirst(max(done, 1))
      metrics.geofenceFixesEvaluated.increment(by: Int64(evaluated))
      metrics.geofenceEvents.increment(by: Int64(committed.events.count))
      await deliver(committed.events)
    }
    return true
  }

  /// What a commit stored: its update (nil when the attempt found nothing to store) and its events, and the time of the
  /// last fix evaluated before it (of the state it started from).
  private typealias Committed = (update: GeofenceTrackingUpdate?, events: [Addressed], from: Int64?)

  /// Runs `attempt` on `user`'s state (as this node last committed it, or from the store) and commits its update,
  /// reading the stored state when another commit came first (another node); returns what was committed, or nil when
  /// the state kept changing. One person at a time in this process.
  private func commit(
    for user: UserID,
    _ attempt: @escaping @Sendable (GeofenceTracking) async throws -> (GeofenceTrackingUpdate, [Addressed])?
  ) async throws -> Committed? {
    let committed = try await locks.withLock(user.rawValue) { () async throws -> Committed? in
      do {
        for round in 0..<8 {
          // The tracking this node committed last, unless another commit came first (then read from the store).
          let cached = round == 0 ? self.trackings.value(for: user, now: self.now()) : nil
          let tracking: GeofenceTracking
          if let cached { tracking = cached } else { tracking = try await self.store.geofenceTracking(of: user) }
          guard let (update, events) = try await attempt(tracking) else {
            // Nothing to store is a decision no version checks: made on the kept tracking, it is made again on the
            // stored one (a device's reported arrival the kept states already had may be news to the stored ones).
            if cached != nil {
              self.trackings.remove(user)
              continue
            }
            self.trackings.store(tracking, for: user, now: self.now())
            return (nil, [], tracking.lastFixAt)
          }
          if try await self.store.commitGeofenceTracking(update) {
            self.trackings.store(tracking.applying(update), for: user, now: self.now())
            return (update, events, tracking.lastFixAt)
          }
          self.trackings.remove(user)
        }
      } catch {
        self.trackings.remove(user)
        throw error
      }
      return nil
    }
    guard let committed else {
      logger.warning("geofence state kept changing", metadata: ["user": "\(user)"])
      return nil
    }
    if committed.events.contains(where: { $0.event.alerted && $0.audience.contains($0.event.ownerId) }) {
      webhookWake()
    }
    return committed
  }

  /// The person and the owners who may share with them; none when none of them has a fence.
  private func concernedOwners(_ user: UserID, at time: Int64) async throws -> [UserID] {
    try await concerned.value(for: user, now: time) {
      let owners = [user] + (try await store.sharingCandidates(viewer: user)).filter { $0 != user }
      return try await index.snapshot(owners: owners, now: time).isEmpty ? [] : owners
    } ?? []
  }

  /// An owner's privacy settings, from the live fan-out's cache.
  private func privacy(_ owner: UserID) async throws -> PrivacySettings? {
    try await live.privacySettings(of: owner)
  }

  /// The new state and events after `fixes` (sorted by time, each with the slots of `snapshot`'s fences whose box
  /// contains it), nil when nothing changed. The fences of the stored states not in the snapshot are read in one go.
  /// Once `eventLimit` events are made, the walk stops after the fix that reached it (and those of its time): the
  /// update's `lastFixAt` says how far it went.
  ///
  /// The batch's fences — near a fix or with a state, and visible to the person — are numbered once, in the order of
  /// their ids, so that the walk over the fixes keeps their states in an array and compares integers only.
  ///
  /// A fence with no state that comes near a fix is first evaluated on the fix before it (of this batch, or the
  /// stored last one), which lay outside its box: that is an observation of the person outside of it, so walking in
  /// from a kilometre away enters the fence even when it is the first fence to concern them, or was made after that
  /// fix's time by the device's clock, and whether the fixes come in one upload or one at a time.
  /// When the rules' memory starts in this batch (the person's first evaluated fixes, or the first after a gap
  /// longer than ``GeofenceRules/maximumGap``), such a fence is instead evaluated on every fix of the run before it,
  /// each outside its box: one within its accuracy of the edge leaves the presence unknown, as the rules would.
  private func step(
    _ user: UserID, _ fixes: ArraySlice<(fix: LocationFix, near: [Int32])>, _ tracking: GeofenceTracking,
    fences snapshot: GeofenceIndex.Snapshot, at time: Int64, eventLimit: Int
  ) async throws -> (GeofenceTrackingUpdate, [Addressed])? {
    var lastFixAt = tracking.lastFixAt
    let fixes = fixes.filter { item in lastFixAt.map { item.fix.timestamp > $0 } ?? true }
    guard !fixes.isEmpty else { return nil }
    // The batch's fences: those near a fix (from the snapshot) and those of the stored states.
    var candidates: [GeofenceID: GeofenceItem] = [:]
    for slot in Set(fixes.flatMap(\.near)) {
      let fence = snapshot.fence(at: slot)
      candidates[fence.id] = fence
    }
    var elsewhere: [GeofenceID] = []
    for id in tracking.states.keys where candidates[id] == nil {
      if let slot = snapshot.slot(of: id) { candidates[id] = snapshot.fence(at: slot) } else { elsewhere.append(id) }
    }
    for fence in try await index.fences(ids: elsewhere) { candidates[fence.id] = fence }
    var ownerSettings: [UserID: PrivacySettings?] = [:]
    var fences: [GeofenceItem] = []
    for fence in candidates.values.sorted(by: { $0.id < $1.id }) {
      if ownerSettings[fence.ownerId] == nil { ownerSettings[fence.ownerId] = .some(try await privacy(fence.ownerId)) }
      if Self.maySee(user, fence, ownerSettings: ownerSettings[fence.ownerId] ?? nil, at: time) { fences.append(fence) }
    }
    let shapes = fences.map { fence in
      snapshot.slot(of: fence.id).map(snapshot.shape(at:)) ?? PreparedGeofence(fence.shape.geofence)
    }
    var number: [GeofenceID: Int] = [:]
    for (index, fence) in fences.enumerated() { number[fence.id] = index }
    let numberOfSlot = Dictionary(
      candidates.keys.compactMap { id in snapshot.slot(of: id).flatMap { slot in number[id].map { (slot, $0) } } },
      uniquingKeysWith: { first, _ in first })

    var states = [GeofenceState?](repeating: nil, count: fences.count)
    var withState: [Int] = []
    for (id, state) in tracking.states {
      guard let index = number[id] else { continue }
      states[index] = state
      withState.append(index)
    }
    var events: [GeofenceEventItem] = []
    // The fix before the one evaluated (of this batch, or the stored last one), with its point prepared.
    var previous = Self.lastFix(of: tracking).map { (fix: $0, point: HaversinePoint($0.coordinate)) }
    let points = fixes.map { HaversinePoint($0.fix.coordinate) }
    var isNear = [Bool](repeating: false, count: fences.count)
    // Where the rules' memory starts within this batch: its first fix when the person has none evaluated before it
    // within the maximum gap, or the first fix after such a gap in it; nil while it starts before the batch.
    let continuesRun = lastFixAt.map { fixes[0].fix.timestamp - $0 <= rules.maximumGap } ?? false
    var runStart: Int? = continuesRun ? nil : 0
    for (position, (fix, nearFix)) in fixes.enumerated() {
      if position > 0, fix.timestamp - fixes[position - 1].fix.timestamp > rules.maximumGap {
        runStart = position
      }
      let point = points[position]
      // The fences the person has a state in, and those whose box holds the fix, in the order of their ids.
      var order = withState
      for slot in nearFix {
        guard let index = numberOfSlot[slot], states[index] == nil, !isNear[index] else { continue }
        isNear[index] = true
        order.append(index)
      }
      order.sort()
      for index in order {
        isNear[index] = false
        let fence = fences[index]
        let shape = shapes[index]
        var state = states[index] ?? Self.impliedState(of: fence, lastFixAt: lastFixAt)
        if states[index] == nil {
          withState.append(index)
          if let start = runStart {
            // The rules know nothing before this batch's run: they take the presence from its fixes, each outside
            // the box (a fix within its accuracy of the edge leaves it unknown, as it would have had the fence been
            // evaluated on it). None decides an event.
            state = GeofenceState()
            for earlier in start..<position {
              state = rules.evaluate(fixes[earlier].fix, at: points[earlier], in: shape, state: state).state
            }
          } else if let previous {
            // Outside the box, it decides no event: at most that the person was outside.
            state = rules.evaluate(previous.fix, at: previous.point, in: shape, state: state).state
          }
        }
        let (next, transitions) = rules.evaluate(fix, at: point, in: shape, state: state)
        states[index] = next
        events += transitions.map { Self.event($0, fence: fence, user: user, fix: fix, by: .server) }
      }
      lastFixAt = fix.timestamp
      previous = (fix, point)
      if events.count >= eventLimit, position + 1 < fixes.count, fixes[position + 1].fix.timestamp > fix.timestamp {
        break
      }
    }
    var update = GeofenceTrackingUpdate(
      userID: user, version: tracking.version, lastFixAt: lastFixAt,
      lastPosition: previous.map(\.fix).map {
        GeofencePosition(latitude: $0.latitude, longitude: $0.longitude, accuracy: $0.horizontalAccuracy)
      }, events: events)
    // A stored state of a fence that is gone or no longer visible goes.
    update.removed = tracking.states.keys.filter { number[$0] == nil }
    for (index, state) in states.enumerated() {
      guard let state else { continue }
      let id = fences[index].id
      if Self.isPlainlyOutside(state) {
        if tracking.states[id] != nil { update.removed.append(id) }
      } else if tracking.states[id] != state {
        update.states[id] = state
      }
    }
    let addressed =
      events.isEmpty
      ? [] : try await address(events, fences: Dictionary(uniqueKeysWithValues: fences.map { ($0.id, $0) }), at: time)
    update.webhookEvents = addressed.compactMap { Self.webhookEvent($0, queuedAt: time) }
    update.unseenByOwner = Self.unseenByOwner(addressed)
    return (update, addressed)
  }

  /// The stored newest evaluated fix, when its position is known.
  static func lastFix(of tracking: GeofenceTracking) -> LocationFix? {
    guard let time = tracking.lastFixAt, let position = tracking.lastPosition else { return nil }
    return try? LocationFix(
      timestamp: time, latitude: position.latitude, longitude: position.longitude,
      horizontalAccuracy: position.accuracy)
  }

  /// A fence with no stored state: the person was outside of it at their last fix, when it existed then; else
  /// not known.
  static func impliedState(of fence: GeofenceItem, lastFixAt: Int64?) -> GeofenceState {
    guard let last = lastFixAt, fence.createdAt <= last else { return GeofenceState() }
    return GeofenceState(presence: .outside, lastFixAt: last)
  }

  /// Whether `state` says no more than the absence of a state row does.
  static func isPlainlyOutside(_ state: GeofenceState) -> Bool {
    state.presence == .outside && state.outsideStreak == 0
  }

  /// The event of `transition`, marked ``GeofenceEventItem/alerted`` when the fence's alert rule
  /// (``GeofenceItem/alerts``) lets it send alerts: one that doesn't is recorded (the state and listings stay right)
  /// but goes to no webhook, alert channel or live channel.
  static func event(
    _ transition: GeofenceTransition, fence: GeofenceItem, user: UserID, fix: LocationFix?, by source: GeofenceSource
  ) -> GeofenceEventItem {
    GeofenceEventItem(
      id: GeofenceEventItem.eventID(
        geofence: fence.id, user: user, kind: transition.kind, timestamp: transition.timestamp),
      geofenceId: fence.id, geofenceName: fence.name, ownerId: fence.ownerId, userId: user, kind: transition.kind,
      timestamp: transition.timestamp, reportedBy: source, lat: fix?.latitude, lon: fix?.longitude,
      accuracy: fix?.horizontalAccuracy,
      alerted: fence.alerts?.allows(transition.kind, of: user, at: transition.timestamp) ?? true)
  }

  /// Whether `viewer` may see `fence`, by the live channels' rule (``LiveUpdates/mayReceive(_:_:of:at:)``): its owner
  /// always; shared with a group, whoever may receive that group's channel (a member, the group granting location,
  /// the owner's location visible to them); shared with everyone, whoever may see the owner's location; never a
  /// blacklisted viewer.
  static func maySee(_ viewer: UserID, _ fence: GeofenceItem, ownerSettings: PrivacySettings?, at now: Int64) -> Bool {
    if viewer == fence.ownerId { return true }
    guard let settings = ownerSettings else { return false }
    let channel: ChannelName? =
      switch fence.sharing {
      case .nobody: nil
      case .group: fence.groupId.flatMap { ChannelName.group($0.rawValue) }
      case .everyone: nil
      }
    if fence.sharing == .everyone { return Sharing.canSee(viewer, .location, of: settings, at: now) }
    return channel.map { LiveUpdates.mayReceive(viewer, $0, of: settings, at: now) } ?? false
  }

  // MARK: Device reports (OwnTracks)

  /// Records an `enter` or `exit` the device reported for its fence `fence`, unless the state already says so (the
  /// server saw it first); the state follows, so the server's own evaluation does not report it again.
  func reported(
    _ kind: GeofenceEventKind, fence: GeofenceItem, user: UserID, at timestamp: Int64, location: LocationFix?
  ) async throws {
    let time = now()
    let committed = try await commit(for: user) { tracking in
      let state = tracking.states[fence.id] ?? Self.impliedState(of: fence, lastFixAt: tracking.lastFixAt)
      let (next, recorded) = self.rules.applyReported(kind, at: timestamp, to: state)
      guard recorded else { return nil }
      let event = Self.event(
        GeofenceTransition(kind: kind, timestamp: timestamp), fence: fence, user: user, fix: location, by: .device)
      var update = GeofenceTrackingUpdate(
        userID: user, version: tracking.version, lastFixAt: tracking.lastFixAt, lastPosition: tracking.lastPosition,
        events: [event])
      if Self.isPlainlyOutside(next) {
        if tracking.states[fence.id] != nil { update.removed = [fence.id] }
      } else {
        update.states = [fence.id: next]
      }
      let addressed = try await self.address([event], fences: [fence.id: fence], at: time)
      update.webhookEvents = addressed.compactMap { Self.webhookEvent($0, queuedAt: time) }
      update.unseenByOwner = Self.unseenByOwner(addressed)
      return (update, addressed)
    }
    await deliver(committed?.events ?? [])
  }

  // MARK: Delivery

  /// `events` (all of one person) with their audiences: the person, and everyone allowed to see both the event and
  /// the fence (``Sharing/maySeeEvent(_:latitude:longitude:of:at:)``: the person's location exactly, the event's fix in
  /// none of the person's privacy zones; and ``maySee(_:_:ownerSettings:at:)``). The same rule filters the event list
  /// (``GeofenceFeature``), the webhooks and the alerts, which follow the audience.
  func address(_ events: [GeofenceEventItem], fences: [GeofenceID: GeofenceItem], at time: Int64) async throws
    -> [Addressed]
  {
    guard let first = events.first else { return [] }
    guard let person = try await privacy(first.userId) else {
      return events.map { Addressed(event: $0, audience: [$0.userId]) }
    }
    var candidates = Set(person.groups.filter { $0.kind != .blacklist }.flatMap(\.members))
    candidates.formUnion(person.sharing.viewerGrants.keys)
    let watchers = candidates.filter { Sharing.canSee($0, .location, of: person, at: time) }
    // The rule's parts that do not depend on the event, once per viewer and per fence: an event's audience is its
    // fence's, with only the person themself when the event lies in one of their privacy zones.
    var exact: [UserID: Bool] = [:]
    var audiences: [GeofenceID: (outsideZones: [UserID], inZone: [UserID])] = [:]
    var addressed: [Addressed] = []
    addressed.reserveCapacity(events.count)
    for event in events {
      guard let fence = fences[event.geofenceId] else { continue }
      if audiences[fence.id] == nil {
        let owner = fence.ownerId == event.userId ? person : try await privacy(fence.ownerId)
        var outsideZones: Set<UserID> = [event.userId]
        for viewer in watchers.union([fence.ownerId]) where Self.maySee(viewer, fence, ownerSettings: owner, at: time) {
          if exact[viewer] == nil {
            exact[viewer] = Sharing.maySeeEvent(viewer, latitude: nil, longitude: nil, of: person, at: time)
          }
          if exact[viewer] == true { outsideZones.insert(viewer) }
        }
        audiences[fence.id] = (outsideZones.sorted(), [event.userId])
      }
      let inZone = Sharing.isInZone(latitude: event.lat, longitude: event.lon, of: person)
      guard let audience = audiences[fence.id] else { continue }
      addressed.append(Addressed(event: event, audience: inZone ? audience.inZone : audience.outsideZones))
    }
    return addressed
  }

  /// The ids of the events whose fence's owner is not in their audience (``GeofenceTrackingUpdate/unseenByOwner``).
  static func unseenByOwner(_ events: [Addressed]) -> Set<String> {
    Set(events.filter { !$0.audience.contains($0.event.ownerId) }.map(\.event.id))
  }

  /// Publishes each event its fence's alert rule allows on the channels of its audience, on every node (the live
  /// log's signal with PostgreSQL): a watcher connected to another node than the one that evaluated the fix hears it
  /// too.
  func deliver(_ events: [Addressed]) async {
    await live.publishEverywhere(events) { item in
      guard item.event.alerted, let payload = try? Self.livePayload(item.event) else { return nil }
      return (payload, item.audience.compactMap(Self.channel))
    }
  }

  /// The live payload of a geofence or proximity event: ``GeofenceLiveEvent``'s JSON form, built directly (one is
  /// published per event: through the generic encoder it was half of the monitor's time).
  static func livePayload(_ event: GeofenceEventItem) throws -> JSONValue {
    var item: [String: JSONValue] = [
      "id": .string(event.id), "geofenceId": .string(event.geofenceId.rawValue),
      "geofenceName": .string(event.geofenceName), "ownerId": .string(event.ownerId.rawValue),
      "userId": .string(event.userId.rawValue), "kind": .string(event.kind.rawValue),
      "timestamp": .int(event.timestamp), "reportedBy": .string(event.reportedBy.rawValue),
      "alerted": .bool(event.alerted),
    ]
    if let latitude = event.lat { item["lat"] = .double(latitude) }
    if let longitude = event.lon { item["lon"] = .double(longitude) }
    if let accuracy = event.accuracy { item["accuracy"] = .double(accuracy) }
    if let proximity = event.proximity { item["proximity"] = try JSONValue(encoding: proximity) }
    return .object(["type": .string(GeofenceLiveEvent.eventType), "event": .object(item)])
  }
}

/// The person's geofence state kept changing under the monitor (another node committing at the same time, again and
/// again): their queue entries stay for the next read.
struct GeofenceContention: Error, CustomStringConvertible {
  let user: UserID
  var description: String { "the geofence state of \(user) kept changing" }
}

/// The live fan-out with geofences: hands every commit of the writer to the live fan-out and wakes the geofence
/// monitor (which reads the store's queue, not the commits); ends once the writer's stream ended, the monitor
/// finished the read it was evaluating and the group's graceful shutdown reached this service. (It must not end before
/// its turn: the service group stops services in reverse order and fails with "finished unexpectedly" when one
/// returns while another one's shutdown is awaited — here, the writer's, whose last commit ends the stream an instant
/// before the writer itself returns.)
struct GeofenceFanOut: Service {
  let live: LiveUpdates
  let geofences: GeofenceMonitor
  let commits: AsyncStream<CommittedFixes>
  /// Queues each commit's positions for Home Assistant, after its live events.
  let homeAssistant: HomeAssistantFeed

  func run() async {
    // Share links' subscribers are revoked at expiry, fixes or not.
    let sweep = Task { await live.sweepEndedLinks() }
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await geofences.run() }
      await live.fanOut(commits, afterEach: { geofences.wake() }, then: { await homeAssistant.enqueue($0) })
      geofences.finish()
    }
    sweep.cancel()
    try? await gracefulShutdown()
  }
}

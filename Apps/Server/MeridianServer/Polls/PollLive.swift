import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import RealtimeKit

/// The `poll:<id>` live channel: a poll's results as votes change, coalesced to at most one event per poll every
/// ``interval`` (four a second by default), each carrying the counts read from the store at that moment — so an
/// event is never a delta a watcher could miss, only the newest state.
///
/// Per node: a vote stored through this node schedules this node's publish; the counts it reads include every
/// node's votes (they come from the database), but a watcher connected to another node hears of a change only when
/// a vote reaches that node too. The offset is the publish time in milliseconds, so a resume on another node gets
/// that node's later results or `reload`, never a wrong replay; a page that must follow every vote re-reads
/// `GET /v1/polls/{id}` when it (re)subscribes (`docs/realtime-protocol.md` §2.2).
///
/// Event payload: `{"type": "poll.results", "pollId": …, "results": {counts, percentages, total}}`.
actor PollLive {
  /// The channel's namespace.
  static let namespace = "poll"
  /// The shortest time between two events of one poll.
  let interval: Duration
  private let hub: RealtimeHub
  private let store: any MeridianStore
  /// Polls with a publish scheduled.
  private var pending: Set<PollID> = []
  /// The offset of each poll's last event.
  private var offsets: [PollID: UInt64] = [:]

  init(hub: RealtimeHub, store: any MeridianStore, interval: Duration = .milliseconds(250)) {
    self.hub = hub
    self.store = store
    self.interval = interval
  }

  /// The `poll:<id>` namespace's rule: whoever may see the poll may subscribe.
  static func channelRule(store: any MeridianStore) -> LiveChannelRule {
    LiveChannelRule(namespace: namespace) { viewer, id in try await store.poll(PollID(id), viewer: viewer) != nil }
  }

  /// The channel of `poll`.
  static func channel(_ poll: PollID) -> ChannelName? { ChannelName(namespace: namespace, id: poll.rawValue) }

  /// Notes that `poll`'s counts changed: the first change in a window schedules one publish at its end; later ones
  /// in the same window ride along.
  func changed(_ poll: PollID) {
    guard !pending.contains(poll) else { return }
    pending.insert(poll)
    Task { [interval] in
      try? await Task.sleep(for: interval)
      await self.publish(poll)
    }
  }

  private func publish(_ poll: PollID) async {
    pending.remove(poll)
    guard let channel = Self.channel(poll), let summary = try? await store.poll(poll, viewer: nil),
      let payload = try? JSONValue(
        encoding: PollResultsEvent(pollId: poll, results: summary.results))
    else { return }
    let offset = max((offsets[poll] ?? 0) + 1, UInt64(max(0, Timestamp.milliseconds(Date()))))
    offsets[poll] = offset
    _ = await hub.publish([(payload: payload, channels: [channel])], offsets: [offset])
  }
}

/// The payload of a `poll:<id>` event.
struct PollResultsEvent: Codable, Sendable, Hashable {
  /// `poll.results`.
  var type = "poll.results"
  /// The poll.
  var pollId: PollID
  /// Its results now.
  var results: PollResults
}

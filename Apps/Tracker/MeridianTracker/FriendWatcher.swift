import DomainKit
import Foundation
import MeridianAPI
import NetworkingKit
import RealtimeKit

/// Friends' live positions: subscribes to `user:<id>` for everyone whose location the signed-in user may see (or
/// the members of one of their groups) and reports each event as it arrives; and the signed-in person's geofence
/// events (`geofence:<own id>`: their own arrivals and departures, and those of others they may see on the fences
/// they may see).
public struct FriendWatcher: Sendable {
  /// What the watcher reports.
  public enum Update: Sendable, Hashable {
    /// Watching these people (id → name, when visible).
    case watching([VisibleUsers.Person])
    /// A friend's newest fixes.
    case location(LiveLocation, name: String?)
    /// A geofence event meant for the signed-in person, with the name of the person it is about when known.
    case geofence(GeofenceEventItem, name: String?)
    /// The signed-in person's geofence events reach us from now on (again after a reconnect).
    case watchingGeofences
    /// Their live updates reach us from now on (the subscription to their channel is active, again after a
    /// reconnect).
    case subscribed(UserID)
    /// A friend stopped sharing with us (pause, Blacklist, expiry): their channel was revoked.
    case stoppedSharing(UserID)
    /// The connection's state changed.
    case connection(RealtimeConnectionState)
  }

  let session: TrackerSession
  let client: NetworkClient

  /// A watcher for a signed-in tracker.
  public init(session: TrackerSession, client: NetworkClient) {
    self.session = session
    self.client = client
  }

  /// The people to watch: everyone visible, or only the members of the caller's group named `group`.
  public func people(group: String?) async throws -> [VisibleUsers.Person] {
    let visible = try await client.send(API.visibleUsers).users
    guard let group else { return visible }
    let groups = try await client.send(API.groups).groups
    guard let match = groups.first(where: { $0.name.caseInsensitiveCompare(group) == .orderedSame }) else {
      throw TrackerError.badArgument(
        "you have no group named '\(group)'; yours are \(groups.map(\.name).joined(separator: ", "))")
    }
    return visible.filter { match.members.contains($0.userId) }
  }

  /// Watches, calling `report` for every update, until cancelled or until `limit` location updates were reported.
  /// The live socket is closed before this returns or throws.
  ///
  /// - Throws: `CancellationError` when cancelled; ``TrackerError/tokenRejected`` when the server refuses the token
  ///   (over HTTP, or by closing the socket with 4001); ``TrackerError/badArgument(_:)`` for an unknown group.
  public func watch(group: String?, limit: Int? = nil, report: @escaping @Sendable (Update) -> Void) async throws {
    let people: [VisibleUsers.Person]
    do {
      people = try await self.people(group: group)
    } catch NetworkingError.unauthorized {
      throw TrackerError.tokenRejected
    }
    report(.watching(people))
    let names = Dictionary(people.map { ($0.userId, $0.fullName) }, uniquingKeysWith: { first, _ in first })
    let realtime = RealtimeClient.meridian(for: client, token: session.token)
    await realtime.start()
    for person in people {
      if let channel = ChannelName.user(person.userId.rawValue) { await realtime.subscribe(channel) }
    }
    if let channel = ChannelName(namespace: "geofence", id: session.userId.rawValue) {
      await realtime.subscribe(channel)
    }
    let outcome: Result<Void, any Error>
    do {
      try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
          for await state in realtime.states {
            report(.connection(state))
            // Stopped by the server for good (the client reconnects after anything else).
            if case .stopped(let code?) = state, code != .normal {
              throw code == .unauthorized ? TrackerError.tokenRejected : TrackerError.liveConnectionClosed("\(code)")
            }
          }
        }
        group.addTask {
          var locations = 0
          for await item in realtime.events {
            switch item {
            case .event(let event) where event.channel.namespace == "geofence":
              guard let live = try? event.payload.decode(as: GeofenceLiveEvent.self) else { continue }
              report(.geofence(live.event, name: names[live.event.userId] ?? nil))
            case .subscribed(let position) where position.channel.namespace == "geofence":
              report(.watchingGeofences)
            case .event(let event):
              guard let location = try? event.payload.decode(as: LiveLocation.self) else { continue }
              report(.location(location, name: names[location.userId] ?? nil))
              locations += 1
              if let limit, locations >= limit { return }
            case .subscribed(let position):
              report(.subscribed(UserID(position.channel.id)))
            case .unsubscribed(let channel, .revoked) where channel.namespace != "geofence":
              report(.stoppedSharing(UserID(channel.id)))
            default:
              continue
            }
          }
        }
        // The first part to end (the limit reached, the server's refusal, or cancellation) ends both.
        _ = try await group.next()
        group.cancelAll()
      }
      outcome = .success(())
    } catch {
      outcome = .failure(error)
    }
    await realtime.stop()
    try outcome.get()
    try Task.checkCancellation()
  }
}

import DomainKit
import Foundation
import MeridianAPI
import NetworkingKit
import RealtimeKit

/// Friends' live positions: subscribes to `user:<id>` for everyone whose location the signed-in user may see (or
/// the members of one of their groups) and reports each event as it arrives.
public struct FriendWatcher: Sendable {
  /// What the watcher reports.
  public enum Update: Sendable, Hashable {
    /// Watching these people (id → name, when visible).
    case watching([VisibleUsers.Person])
    /// A friend's newest fixes.
    case location(LiveLocation, name: String?)
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

  /// Watches until cancelled, calling `report` for every update.
  public func watch(group: String?, report: @escaping @Sendable (Update) -> Void) async throws {
    let people = try await people(group: group)
    report(.watching(people))
    let names = Dictionary(people.map { ($0.userId, $0.fullName) }, uniquingKeysWith: { first, _ in first })
    let realtime = RealtimeClient.meridian(for: client, token: session.token)
    let states = Task {
      for await state in realtime.states { report(.connection(state)) }
    }
    await realtime.start()
    for person in people {
      if let channel = ChannelName.user(person.userId.rawValue) { await realtime.subscribe(channel) }
    }
    await withTaskCancellationHandler {
      for await item in realtime.events {
        switch item {
        case .event(let event):
          guard
            let location = try? event.payload.decode(as: LiveLocation.self)
          else { continue }
          report(.location(location, name: names[location.userId] ?? nil))
        case .unsubscribed(let channel, .revoked):
          report(.stoppedSharing(UserID(channel.id)))
        default:
          continue
        }
      }
    } onCancel: {
      Task { await realtime.stop() }
    }
    states.cancel()
  }
}

import DomainKit
import Foundation
import MeridianAPI

/// The live log of a store that several server nodes share: every commit of fixes, whichever node made it, as
/// entries numbered in commit order, and signals that wake every node. Each node reads the log from its own cursor
/// and fans the entries out to its sockets with their sequence numbers as offsets, so an offset means the same event
/// on every node (`docs/realtime-protocol.md` §2.1).
///
/// An engine that serves one process only (SQLite) has none: its server fans out its own commits.
public protocol LiveLog: Sendable {
  /// The epoch of the log's sequence numbers, the same for every node of the deployment (read when the store opens).
  var liveEpoch: String { get }
  /// The newest entry's sequence number; 0 before the first.
  func newestLiveSequence() async throws -> UInt64
  /// The entries after `sequence`, oldest first, at most `limit` and ending with the one that brings their fixes to
  /// `fixes` or past it (so a read holds a bounded number of fixes, and at least one entry);
  /// ``LiveLogRead/truncated(oldest:)`` when entries after `sequence` were pruned.
  func liveEntries(after sequence: UInt64, limit: Int, fixes: Int) async throws -> LiveLogRead
  /// Calls `receive` with every signal any node sends (``LiveSignal/committed(through:)`` after each commit of
  /// fixes) until the calling task is cancelled, and with ``LiveSignal/listening`` each time it starts listening —
  /// at first and after a lost connection, when signals may have been missed and the log must be read again.
  /// Reconnects by itself; returns only when cancelled.
  func listen(_ receive: @escaping @Sendable (LiveSignal) async -> Void) async
  /// Sends `signals` to every node, this one included, in their order (one round trip to the database).
  func announce(_ signals: [LiveSignal]) async throws
}

extension LiveLog {
  /// Sends `signal` to every node, this one included.
  public func announce(_ signal: LiveSignal) async throws { try await announce([signal]) }
}

extension MeridianStore {
  public var liveLog: (any LiveLog)? { nil }
}

/// What ``LiveLog/liveEntries(after:limit:fixes:)`` found.
public enum LiveLogRead: Sendable {
  /// The entries after the cursor (none when it is the newest).
  case entries([LiveLogEntry])
  /// The entries after the cursor were pruned: the oldest kept one follows `oldest`.
  case truncated(oldest: UInt64)
}

/// One request's newly stored fixes, as the log holds them.
public struct LiveLogEntry: Sendable, Hashable {
  /// The entry's sequence number: its offset in every channel it is published to.
  public var sequence: UInt64
  /// The owner.
  public var userID: UserID
  /// The reporting device.
  public var deviceID: DeviceID
  /// The fixes stored by that request (duplicates left out), oldest first.
  public var fixes: [LocationFix]

  /// An entry.
  public init(sequence: UInt64, userID: UserID, deviceID: DeviceID, fixes: [LocationFix]) {
    self.sequence = sequence
    self.userID = userID
    self.deviceID = deviceID
    self.fixes = fixes
  }
}

/// A signal between the nodes of one deployment. Payloads stay small: ids, never fixes.
public enum LiveSignal: Sendable, Hashable {
  /// Entries up to this sequence number are committed.
  case committed(through: UInt64)
  /// The owner's sharing changed (pause, expiry, groups, Blacklist): every node checks its subscribers again.
  case sharingChanged(owner: UserID)
  /// The owner's geofences changed (created, changed, deleted): every node reads them again before its next
  /// evaluation.
  case geofencesChanged(owner: UserID)
  /// The group was deleted: every node ends its channel's subscriptions.
  case groupDeleted(GroupID)
  /// The token with this hash was revoked: every node closes the sockets it opened.
  case tokenRevoked(hash: String)
  /// The account was disabled: every node closes its sockets.
  case accountDisabled(UserID)
  /// This node (re)started listening: signals may have been missed meanwhile.
  case listening
  /// Every node publishes `payload` (a JSON text) to those of `channels` (`namespace:id` names) its sockets
  /// subscribe to: an event made on one node, such as a geofence event, for watchers on any. The text stays below
  /// PostgreSQL's `NOTIFY` limit when the sender keeps `payload` and the names under 7,000 bytes.
  case published(channels: [String], payload: String)
  /// How many pages the node `node` has open on each of these share links (a count of 0: none any more). Each node
  /// sends its counts when they change and again every few seconds while any is open; a sender keeps each signal's
  /// links under 7,000 bytes.
  case shareViewers(node: String, counts: [String: Int])

  /// The signal as a `NOTIFY` payload (a few dozen bytes).
  public var text: String {
    switch self {
    case .committed(let sequence): "c:\(sequence)"
    case .sharingChanged(let owner): "s:\(owner.rawValue)"
    case .geofencesChanged(let owner): "f:\(owner.rawValue)"
    case .groupDeleted(let group): "g:\(group.rawValue)"
    case .tokenRevoked(let hash): "t:\(hash)"
    case .accountDisabled(let user): "d:\(user.rawValue)"
    case .listening: "l:"
    case .published(let channels, let payload): "p:" + channels.joined(separator: ",") + "\n" + payload
    case .shareViewers(let node, let counts):
      "v:\(node)\n" + counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }
  }

  /// Parses ``text``.
  public init?(text: String) {
    guard let colon = text.firstIndex(of: ":") else { return nil }
    let value = String(text[text.index(after: colon)...])
    switch text[..<colon] {
    case "c":
      guard let sequence = UInt64(value) else { return nil }
      self = .committed(through: sequence)
    case "s" where !value.isEmpty: self = .sharingChanged(owner: UserID(value))
    case "f" where !value.isEmpty: self = .geofencesChanged(owner: UserID(value))
    case "g" where !value.isEmpty: self = .groupDeleted(GroupID(value))
    case "t" where !value.isEmpty: self = .tokenRevoked(hash: value)
    case "d" where !value.isEmpty: self = .accountDisabled(UserID(value))
    case "l": self = .listening
    case "p":
      guard let newline = value.firstIndex(of: "\n") else { return nil }
      let channels = value[..<newline].split(separator: ",").map(String.init)
      let payload = String(value[value.index(after: newline)...])
      guard !channels.isEmpty, !payload.isEmpty else { return nil }
      self = .published(channels: channels, payload: payload)
    case "v":
      guard let newline = value.firstIndex(of: "\n"), newline > value.startIndex else { return nil }
      var counts: [String: Int] = [:]
      for pair in value[value.index(after: newline)...].split(separator: ",") {
        let parts = pair.split(separator: "=", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let count = Int(parts[1]), count >= 0 else { return nil }
        counts[String(parts[0])] = count
      }
      self = .shareViewers(node: String(value[..<newline]), counts: counts)
    default: return nil
    }
  }
}

import DomainKit
import Foundation
import MeridianTrackerStore

/// The tracker's state directory: the sign-in (`session.json`) and the history file (`history.sqlite`), readable
/// by the owner only (directory 0700, files 0600).
public struct TrackerStateDirectory: Sendable {
  /// The directory.
  public let url: URL

  /// The directory at `path`, or the default: `$XDG_STATE_HOME/meridian-tracker`, else
  /// `~/.local/state/meridian-tracker`.
  public init(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) {
    if let path {
      url = URL(fileURLWithPath: path)
    } else if let state = environment["XDG_STATE_HOME"], !state.isEmpty {
      url = URL(fileURLWithPath: state).appendingPathComponent("meridian-tracker")
    } else {
      url = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/state/meridian-tracker")
    }
  }

  /// The history database's path.
  public var historyPath: String { url.appendingPathComponent("history.sqlite").path }
  var sessionURL: URL { url.appendingPathComponent("session.json") }

  /// Creates the directory with owner-only permissions (and tightens them if it exists).
  public func prepare() throws {
    try FileManager.default.createDirectory(
      at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: url.path)
  }

  /// Opens (creating and migrating) the history, readable by the owner only, like the rest of the directory.
  public func openHistory() throws -> TrackerStore {
    try prepare()
    let store = try TrackerStore.open(at: historyPath)
    for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: historyPath + suffix) {
      try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: historyPath + suffix)
    }
    return store
  }

  /// The saved sign-in, or nil before `login`.
  public func loadSession() throws -> TrackerSession? {
    guard FileManager.default.fileExists(atPath: sessionURL.path) else { return nil }
    do {
      return try JSONDecoder().decode(TrackerSession.self, from: Data(contentsOf: sessionURL))
    } catch {
      throw TrackerError.corruptState("\(sessionURL.path) is unreadable (\(error)); run `meridian-tracker login` again")
    }
  }

  /// Saves the sign-in atomically, readable by the owner only.
  public func save(_ session: TrackerSession) throws {
    try prepare()
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let temporary = url.appendingPathComponent(".session.json.\(getpid())")
    guard
      FileManager.default.createFile(
        atPath: temporary.path, contents: try encoder.encode(session), attributes: [.posixPermissions: 0o600]),
      rename(temporary.path, sessionURL.path) == 0
    else {
      throw TrackerError.corruptState("cannot write \(sessionURL.path): \(String(cString: strerror(errno)))")
    }
  }
}

/// A signed-in tracker: the server, its bearer token, the account and this device's id.
public struct TrackerSession: Sendable, Hashable, Codable {
  /// The server's base URL.
  public var server: String
  /// The bearer token.
  public var token: String
  /// The account.
  public var userId: UserID
  /// This device's id, generated at the first login and kept.
  public var deviceId: DeviceID

  /// A session.
  public init(server: String, token: String, userId: UserID, deviceId: DeviceID) {
    self.server = server
    self.token = token
    self.userId = userId
    self.deviceId = deviceId
  }
}

/// What the tracker reports to its user.
public enum TrackerError: Error, CustomStringConvertible, Equatable {
  /// No sign-in yet.
  case notSignedIn(String)
  /// The state directory is damaged.
  case corruptState(String)
  /// A source file or stream can't be read.
  case badSource(String)
  /// The server refused the token.
  case tokenRejected
  /// A flag's value is wrong.
  case badArgument(String)
  /// Uploads kept failing after the source ended (the fixes stay queued).
  case uploadFailed(String)
  /// The server refused a batch for good (the fixes stay queued).
  case uploadRefused(String)
  /// The server closed the live socket and forbade reconnecting (the close code).
  case liveConnectionClosed(String)

  /// One sentence for the terminal.
  public var description: String {
    switch self {
    case .notSignedIn(let directory): "not signed in (no session in \(directory)); run `meridian-tracker login` first"
    case .corruptState(let message): message
    case .badSource(let message): message
    case .tokenRejected: "the server rejected the saved token; run `meridian-tracker login` again"
    case .badArgument(let message): message
    case .uploadFailed(let reason): "gave up uploading: \(reason)"
    case .uploadRefused(let answer): "the server refused the upload: \(answer)"
    case .liveConnectionClosed(let code): "the server closed the live connection (\(code)) and refuses reconnecting"
    }
  }
}

import ArgumentParser
import DomainKit
import Foundation
import Logging
import MeridianStoreSQLite

/// The `meridian-tracker` command line: `login`, `run`, `watch`, `history …` and `status`. The executable only
/// calls ``main()``; every command lives here so that it can be tested.
public struct MeridianTrackerCommand: AsyncParsableCommand {
  /// The command tree.
  public static let configuration = CommandConfiguration(
    commandName: "meridian-tracker",
    abstract: "The Meridian device agent: records, filters, stores and uploads positions.",
    subcommands: [Login.self, Run.self, Watch.self, Status.self, History.self])

  /// A command with no subcommand (prints the help).
  public init() {}

  /// Parses `arguments` (the command line without the program name), runs the command and exits: what the
  /// executable's `main` does. (Called from outside, `main()` would resolve to the synchronous entry point.)
  public static func run(arguments: [String]) async -> Never {
    do {
      var command = try parseAsRoot(arguments)
      if var asynchronous = command as? any AsyncParsableCommand {
        try await asynchronous.run()
      } else {
        try command.run()
      }
      exit()
    } catch {
      exit(withError: error)
    }
  }
}

/// Options every command shares.
struct StateOptions: ParsableArguments {
  @Option(name: .long, help: "The state directory (default: $XDG_STATE_HOME/meridian-tracker or ~/.local/state/…).")
  var state: String?

  var directory: TrackerStateDirectory { TrackerStateDirectory(path: state) }

  func session() throws -> TrackerSession {
    guard let session = try directory.loadSession() else { throw TrackerError.notSignedIn(directory.url.path) }
    return session
  }
}

/// Runs `body`, turning the tracker's and the server's errors into one line on standard error and exit status 1.
func reportingErrors(_ body: () async throws -> Void) async throws {
  do {
    try await body()
  } catch let error as TrackerError {
    throw ValidationOrFailure(message: error.description)
  } catch let error as ExitCode {
    throw error
  } catch let error as CleanExit {
    throw error
  } catch {
    throw ValidationOrFailure(message: "\(error)")
  }
}

/// A failure printed as one line, exit status 1.
struct ValidationOrFailure: Error, CustomStringConvertible {
  let message: String
  var description: String { message }
}

struct Login: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Sign in (phone + one-time code, or email + password) and keep the session in the state directory.")

  @OptionGroup var options: StateOptions
  @Option(help: "The server's base URL, e.g. http://127.0.0.1:8080.") var server: String
  @Option(help: "Sign in with this phone number (a code is sent by SMS).") var phone: String?
  @Option(help: "The one-time code, for scripts (otherwise asked on the terminal).") var code: String?
  @Option(help: "Sign in with this email address.") var email: String?
  @Flag(help: "Read the password from standard input (for scripts).") var passwordStdin = false
  @Flag(help: "Create the email account if it doesn't exist yet.") var create = false

  func validate() throws {
    guard (phone == nil) != (email == nil) else { throw ValidationError("give exactly one of --phone and --email") }
    if code != nil && phone == nil { throw ValidationError("--code goes with --phone") }
    if (passwordStdin || create) && email == nil {
      throw ValidationError("--password-stdin and --create go with --email")
    }
  }

  func run() async throws {
    try await reportingErrors {
      let connection = try TrackerConnection(server: server)
      defer { Task { try? await connection.shutdown() } }
      let method: TrackerConnection.SignIn
      if let phone {
        var code = self.code
        if code == nil {
          _ = try await connection.signIn(.phone(phone, code: nil))
          print("A code was sent to \(phone). Code: ", terminator: "")
          code = readLine()?.trimmingCharacters(in: .whitespaces)
        }
        guard let code, !code.isEmpty else { throw TrackerError.badArgument("no code given") }
        method = .phone(phone, code: code)
      } else {
        let password: String?
        if passwordStdin {
          password = readLine(strippingNewline: true)
        } else {
          password = String(validatingCString: getpass("Password: "))
        }
        guard let password, !password.isEmpty else { throw TrackerError.badArgument("no password given") }
        method = .email(email ?? "", password: password, create: create)
      }
      guard let session = try await connection.signIn(method) else { return }
      let directory = options.directory
      let deviceID = try directory.loadSession()?.deviceId ?? DeviceID("tracker-" + UUID().uuidString.lowercased())
      try directory.save(
        TrackerSession(server: server, token: session.token, userId: session.userId, deviceId: deviceID))
      print("Signed in as \(session.userId) on \(server); device \(deviceID).")
    }
  }
}

struct Run: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Record fixes from a source, keep them locally and upload those the reporting policy sends.")

  @OptionGroup var options: StateOptions
  @Option(help: "Replay a GPX track.") var gpx: String?
  @Option(help: "Replay a CSV track.") var csv: String?
  @Option(help: "Replay a GeoJSON track.") var geojson: String?
  @Flag(help: "Read JSON fixes, one per line, from standard input.") var stdin = false
  @OptionGroup var live: LiveSourceOptions
  @Option(help: "Replay this many times faster than recorded (0: as fast as possible).") var speed: Double = 1
  @Flag(help: "Keep the track's own times instead of replaying it as happening now.") var keepTimes = false
  @Option(help: "foreground (every fix), background (10 m) or closed (100 m).") var mode: AppState = .foreground
  @Option(help: "high (≤ 10 m), medium (≤ 1 km), low (≤ 3 km) or significant (500 m moves).")
  var accuracy: AccuracyProfile = .high
  @Option(help: "Horizontal accuracy (m) assumed for fixes that carry none, as GPX tracks don't.")
  var defaultAccuracy: Double = 5
  @Flag(help: "Print one JSON line per fix and a JSON summary.") var json = false
  @Option(help: "Fixes per upload request (1…1000).") var batchSize = 500
  @Flag(
    inversion: .prefixedNo,
    help: "Send fixes over the live socket while it is connected (HTTP when it isn't, and for backlogs).")
  var liveSocket = true

  func validate() throws {
    let sources = [gpx != nil, csv != nil, geojson != nil, stdin].filter { $0 }.count + live.count
    guard sources == 1 else {
      throw ValidationError("give exactly one source: --gpx, --csv, --geojson, --stdin, --simulate or --gpsd")
    }
    guard speed >= 0, speed.isFinite else { throw ValidationError("--speed must be 0 or more") }
    guard (1...1000).contains(batchSize) else { throw ValidationError("--batch-size must be between 1 and 1000") }
    guard defaultAccuracy > 0, defaultAccuracy.isFinite else { throw ValidationError("--default-accuracy must be > 0") }
  }

  var source: FixSource {
    if let simulatedOrGPSD = try? live.source(speed: speed) { return simulatedOrGPSD }
    if let gpx { return .replay(URL(fileURLWithPath: gpx), format: .gpx, speed: speed, keepTimes: keepTimes) }
    if let csv { return .replay(URL(fileURLWithPath: csv), format: .csv, speed: speed, keepTimes: keepTimes) }
    if let geojson {
      return .replay(URL(fileURLWithPath: geojson), format: .geojson, speed: speed, keepTimes: keepTimes)
    }
    return .standardInput
  }

  func run() async throws {
    try await reportingErrors {
      let session = try options.session()
      let store = try options.directory.openHistory()
      let connection = try TrackerConnection(server: session.server)
      var logger = Logger(label: "meridian-tracker")
      logger.logLevel = json ? .warning : .info
      let client = try connection.client(token: session.token)
      let link = liveSocket ? LiveLink(session: session, client: client) : nil
      await link?.start()
      let agent = TrackerAgent(
        store: store,
        uploader: Uploader(
          store: store, client: client, deviceID: session.deviceId, batchSize: batchSize, live: link),
        policy: ReportingPolicy(appState: mode, profile: accuracy), logger: logger)
      let json = self.json
      let summary = try await agent.run(source.fixes(defaultAccuracy: defaultAccuracy)) { fix, decision in
        let sent = decision == .send
        if json {
          print(
            #"{"timestamp":\#(fix.timestamp),"latitude":\#(fix.latitude),"longitude":\#(fix.longitude),"sent":\#(sent)}"#
          )
        } else {
          let reason = if case .skip(let why) = decision { " (kept locally: \(why))" } else { "" }
          print(
            String(
              format: "%@ %.6f %.6f%@", Timestamp.date(fix.timestamp).formatted(.iso8601), fix.latitude, fix.longitude,
              reason))
        }
      }
      await link?.stop()
      try await connection.shutdown()
      if json {
        print(
          #"{"received":\#(summary.received),"recorded":\#(summary.recorded),"queued":\#(summary.queued),"uploaded":\#(summary.uploaded),"uploadedOverSocket":\#(summary.uploadedOverSocket)}"#
        )
      } else {
        print(
          "received \(summary.received), recorded \(summary.recorded), queued \(summary.queued), uploaded \(summary.uploaded)"
            + " (\(summary.uploadedOverSocket) over the live socket)"
        )
      }
    }
  }
}

struct Watch: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Print friends' positions as they arrive over the live socket, until Ctrl-C.")

  @OptionGroup var options: StateOptions
  @Option(help: "Watch only the members of your group with this name (e.g. Family).") var group: String?
  @Option(help: "Exit after this many position updates (for scripts).") var count: Int?
  @Flag(help: "Print one JSON object per line.") var json = false

  func run() async throws {
    try await reportingErrors {
      let session = try options.session()
      let connection = try TrackerConnection(server: session.server)
      let watcher = FriendWatcher(session: session, client: try connection.client(token: session.token))
      let json = self.json
      let limit = count
      let received = Counter()
      let watching = Task {
        try await watcher.watch(group: group) { update in
          Self.print(update, json: json)
          if case .location = update, let limit, received.increment() >= limit { Foundation.exit(0) }
        }
      }
      try await watching.value
      try await connection.shutdown()
    }
  }

  /// A thread-safe count of updates.
  final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func increment() -> Int {
      lock.withLock {
        value += 1
        return value
      }
    }
  }

  static func print(_ update: FriendWatcher.Update, json: Bool) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    switch update {
    case .watching(let people):
      if json {
        emitJSON(["watching": people.map(\.userId.rawValue)])
      } else {
        let names = people.map { $0.fullName ?? $0.userId.rawValue }
        Swift.print(
          people.isEmpty ? "Nobody shares a location with you yet." : "Watching \(names.joined(separator: ", ")).")
      }
    case .location(let location, let name):
      guard let fix = location.fixes.last else { return }
      if json, let data = try? encoder.encode(location) {
        Swift.print(String(decoding: data, as: UTF8.self))
      } else if !json {
        Swift.print(
          String(
            format: "%@ %@ %.6f %.6f ±%.0f m", Timestamp.date(fix.timestamp).formatted(.iso8601),
            name ?? location.userId.rawValue, fix.latitude, fix.longitude, fix.horizontalAccuracy ?? 0))
      }
    case .stoppedSharing(let user):
      if json { emitJSON(["stoppedSharing": user.rawValue]) } else { Swift.print("\(user) stopped sharing with you.") }
    case .connection(let state):
      if !json { FileHandle.standardError.write(Data("connection: \(state)\n".utf8)) }
    }
    fflush(nil)
  }

  static func emitJSON(_ value: [String: some Encodable]) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    if let data = try? encoder.encode(value) { Swift.print(String(decoding: data, as: UTF8.self)) }
  }
}

struct Status: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Queue length, last successful upload and local history size.")

  @OptionGroup var options: StateOptions
  @Flag(help: "Print JSON.") var json = false

  func run() async throws {
    try await reportingErrors {
      let session = try options.session()
      let store = try options.directory.openHistory()
      let (history, queued) = try await store.counts()
      let lastUpload = try await store.value(TrackerStore.lastUploadKey).flatMap(Int64.init)
      let connection = try await ConnectionReport.load(from: store)
      if json {
        let report = StatusReport(
          server: session.server, userId: session.userId, deviceId: session.deviceId, history: history, queued: queued,
          lastUpload: lastUpload, connection: connection)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
      } else {
        print("server       \(session.server)")
        print("account      \(session.userId), device \(session.deviceId)")
        print("history      \(history) fixes")
        print("queued       \(queued) fixes")
        print("last upload  \(lastUpload.map { Timestamp.date($0).formatted(.iso8601) } ?? "never")")
        print("connection   \(connection.map(Self.describe) ?? "the agent has not run")")
      }
    }
  }

  /// `connection` as a line: the state and since when (an agent killed without a chance to say so still reads as
  /// its last state).
  static func describe(_ connection: ConnectionReport) -> String {
    let since = Timestamp.date(connection.since).formatted(.iso8601)
    return switch connection.state {
    case .live: "uploading over the live socket since \(since)"
    case .http: "uploading over HTTP since \(since)"
    case .offline: "server unreachable since \(since): \(connection.detail ?? "unknown error")"
    case .stopped: "agent stopped at \(since)"
    }
  }
}

/// `status --json`.
struct StatusReport: Codable {
  var server: String
  var userId: UserID
  var deviceId: DeviceID
  var history: Int
  var queued: Int
  var lastUpload: Int64?
  var connection: ConnectionReport?
}

extension AppState: @retroactive ExpressibleByArgument {}
extension AccuracyProfile: @retroactive ExpressibleByArgument {}

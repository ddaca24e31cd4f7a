import ArgumentParser
import DomainKit
import Foundation
import Logging
import MeridianTrackerStore
import NetworkingKit

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
  /// executable's `main` does. Ctrl-C or SIGTERM interrupt the command, which shuts its connections down, says what
  /// it left and exits with 128 + the signal's number (130 for Ctrl-C). (Called from outside, `main()` would resolve
  /// to the synchronous entry point.)
  public static func run(arguments: [String]) async -> Never {
    let (outcome, signal) = await Interruption.run { await execute(arguments) }
    var status = outcome.status
    if status == interruptedStatus, let signal { status = 128 + signal }
    if let message = outcome.message {
      if status == 0 {
        Console.line(message)
      } else {
        Console.error(message)
      }
    }
    Foundation.exit(status)
  }

  /// The exit status of an interrupted command (128 + SIGINT).
  public static let interruptedStatus: Int32 = 130

  /// Parses `arguments` and runs the command in this process, without exiting: returns the exit status and the
  /// message to print (help on standard output, an error on standard error). Cancelling the calling task interrupts
  /// the command like Ctrl-C (status ``interruptedStatus``).
  public static func execute(_ arguments: [String]) async -> (status: Int32, message: String?) {
    do {
      var command = try parseAsRoot(arguments)
      if var asynchronous = command as? any AsyncParsableCommand {
        try await asynchronous.run()
      } else {
        try command.run()
      }
      return (0, nil)
    } catch let interrupted as Interrupted {
      return (interruptedStatus, "Interrupted: \(interrupted.message)")
    } catch is CancellationError {
      return (interruptedStatus, "Interrupted.")
    } catch {
      let message = fullMessage(for: error)
      return (exitCode(for: error).rawValue, message.isEmpty ? nil : message)
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

/// Runs `body`, turning the tracker's and the server's errors into one line on standard error and exit status 1;
/// an interruption passes through.
func reportingErrors(_ body: () async throws -> Void) async throws {
  do {
    try await body()
  } catch let error as TrackerError {
    throw ValidationOrFailure(message: error.description)
  } catch let error as NetworkingError {
    throw ValidationOrFailure(message: sentence(for: error))
  } catch let error as ExitCode {
    throw error
  } catch let error as CleanExit {
    throw error
  } catch let error as Interrupted {
    throw error
  } catch is CancellationError {
    throw Interrupted(message: "stopped before the end.")
  } catch {
    throw ValidationOrFailure(message: "\(error)")
  }
}

/// A server's answer or a connection failure, as a sentence for the terminal.
func sentence(for error: NetworkingError) -> String {
  if case .unauthorized = error { return TrackerError.tokenRejected.description }
  if let transport = error.transportError, transport.isUnreachable {
    return "the server can't be reached (\(transport)); is it running, and is the address right?"
  }
  return "\(error)"
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
  @Option(
    help: """
      The server's base URL, e.g. http://127.0.0.1:8080; repeat it or give a comma-separated list for several nodes \
      of one deployment (the tracker moves on to the next when one doesn't answer).
      """)
  var server: [String]
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
      try await TrackerConnection.with(servers: try ServerList(server)) { connection in try await signIn(connection) }
    }
  }

  /// Signs in over `connection` and saves the session.
  func signIn(_ connection: TrackerConnection) async throws {
    let method: TrackerConnection.SignIn
    if let phone {
      var code = self.code
      if code == nil {
        _ = try await connection.signIn(.phone(phone, code: nil))
        Console.write("A code was sent to \(phone). Code: ", to: .standardOutput)
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
    let servers = connection.servers.description
    try directory.save(
      TrackerSession(server: servers, token: session.token, userId: session.userId, deviceId: deviceID))
    Console.line("Signed in as \(session.userId) on \(servers); device \(deviceID).")
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
        Console.line(String(decoding: try encoder.encode(report), as: UTF8.self))
      } else {
        Console.line("server       \(session.server)")
        Console.line("account      \(session.userId), device \(session.deviceId)")
        Console.line("history      \(history) fixes")
        Console.line("queued       \(queued) fixes")
        Console.line("last upload  \(lastUpload.map { Timestamp.date($0).formatted(.iso8601) } ?? "never")")
        Console.line("connection   \(connection.map(Self.describe) ?? "the agent has not run")")
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

import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import Testing

/// Records the one-time codes the server "sends", so tests can sign in by phone.
actor CapturingSMSSender: SMSSender {
  private(set) var codes: [String: [String]] = [:]

  func sendCode(_ code: String, to phone: String) async throws {
    codes[phone, default: []].append(code)
  }

  func lastCode(for phone: String) -> String? { codes[phone]?.last }
}

/// A real meridian-server on 127.0.0.1 with a port of its own and a database in a temporary directory.
struct TestServer: Sendable {
  let running: RunningServer
  let sms: CapturingSMSSender
  let directory: URL
  let transport: AsyncHTTPClientTransport
  /// How ``client(token:compressionThreshold:transport:)`` reaches the server: ``ServerAccess/effective`` when it
  /// started.
  var access = ServerAccess.effective

  var app: ServerApp { running.app }
  var port: Int { running.port }

  /// Starts a server; `configure` adjusts the test configuration. By default it gets a new temporary directory and
  /// a free port below the ephemeral range.
  /// `clock` is the server's clock when given; `wall`, the wall clock under the server's own ``SteadyClock`` (for
  /// tests of a clock stepped back or forward; its monotonic clock stands still).
  static func start(
    directory: URL? = nil, port: Int = 0, clock: TestClock? = nil, wall: TestClock? = nil,
    _ configure: (inout ServerConfiguration) -> Void = { _ in }
  ) async throws -> TestServer {
    StallWatchdog.start()
    let isNewDirectory = directory == nil
    let directory =
      directory
      ?? FileManager.default.temporaryDirectory.appendingPathComponent("meridian-server-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var configuration = ServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = port
    configuration.databasePath = directory.appendingPathComponent("meridian.sqlite").path
    configuration.bcryptCost = 4
    configuration.maxBodyBytes = 512 * 1024
    configuration.adminToken = ServerConfiguration.developmentAdminToken
    // Hundreds of tests share two cores: a connection may take longer than a server's 3 s to be lent (tests of the
    // deadlines set their own).
    configuration.databaseTimeouts.connectionWait = .seconds(30)
    configure(&configuration)
    // A new server on a new SQLite file starts from a migrated copy (tests of migrating give their own directory).
    if isNewDirectory, case .sqlite(let path) = configuration.database, !FileManager.default.fileExists(atPath: path) {
      try MigratedSQLiteFile.copy(to: path)
    }
    var logger = Logger(label: "meridian-server-test")
    logger.logLevel = .warning
    let sms = CapturingSMSSender()
    // A port below the ephemeral range (Linux: 32768–60999), so that no outgoing connection of this busy process is
    // ever given a test server's port and a server can be restarted on its own; one another test holds is replaced.
    // The monotonic clock under it stands still: only the test moves time, however slow a loaded machine is.
    let frozen = ContinuousClock.now
    let steady = wall.map { wall in SteadyClock(wall: { wall.now }, monotonic: { frozen }) }
    let now: @Sendable () -> Int64 =
      if let clock { { clock.now } } else if let steady { { steady.now() } } else { { Timestamp.milliseconds(Date()) } }
    let choosesPort = configuration.port == 0
    var attempt = 1
    while true {
      if choosesPort { configuration.port = Int.random(in: 10_000..<32_000) }
      do {
        return TestServer(
          running: try await RunningServer.start(
            configuration: configuration, smsSender: sms, logger: logger,
            now: now),
          sms: sms, directory: directory, transport: AsyncHTTPClientTransport(), access: ServerAccess.effective)
      } catch  where choosesPort && attempt < 50 && isAddressInUse(error) {
        attempt += 1
      }
    }
  }

  /// Whether `error` is a refused bind.
  static func isAddressInUse(_ error: any Error) -> Bool {
    "\(error)".localizedCaseInsensitiveContains("address already in use")
  }

  /// A client of this server, with `token` as bearer credentials, on this server's transport unless given another
  /// (one that outlives the server across a restart): its routes in process when ``access`` is `.router`, else
  /// AsyncHTTPClient to its port.
  func client(
    token: String? = nil, compressionThreshold: Int? = 4096, transport: AsyncHTTPClientTransport? = nil
  ) throws -> NetworkClient {
    var configuration = NetworkClient.Configuration()
    configuration.retryBudgets = nil
    configuration.compressionThreshold = compressionThreshold
    let url = try #require(URL(string: "http://127.0.0.1:\(port)"))
    let chosen: any HTTPTransport =
      if let transport { transport } else if access == .router { RouterTransport(responder: app.responder) } else {
        self.transport
      }
    return try NetworkClient(
      baseURL: url, transport: chosen,
      credentials: BearerTokenCredentials(token: token) { _ in nil },
      configuration: configuration)
  }

  /// Shuts the server down gracefully and removes its files (unless `keepingFiles`).
  func stop(keepingFiles: Bool = false) async throws {
    try await transport.shutdown()
    try await running.stop()
    if !keepingFiles { try? FileManager.default.removeItem(at: directory) }
  }

  /// A new server on this (stopped) server's port and database. A refused bind (the port held a moment longer) is
  /// tried again for a few seconds.
  func restarted() async throws -> TestServer {
    var attempt = 1
    while true {
      do {
        return try await Self.start(directory: directory, port: port)
      } catch  where attempt < 20 && Self.isAddressInUse(error) {
        attempt += 1
        try await Task.sleep(for: .milliseconds(250))
      }
    }
  }

  /// Runs `body` against a fresh server and always stops it.
  static func with(
    clock: TestClock? = nil, wall: TestClock? = nil, _ configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: (TestServer) async throws -> Void
  ) async throws {
    let server = try await start(clock: clock, wall: wall, configure)
    do {
      try await body(server)
    } catch {
      try await server.stop()
      throw error
    }
    try await server.stop()
  }

  /// Registers an email account and returns its session and a signed-in client.
  func signUp(_ name: String) async throws -> (session: AuthSession, client: NetworkClient) {
    let session = try await client().send(
      API.register, body: EmailCredentials(email: "\(name)@example.com", password: "correct horse"))
    let client = try client(token: session.token)
    _ = try await client.send(API.updateProfile, body: ProfileUpdate(fullName: name.capitalized))
    return (session, client)
  }
}

/// Expects `body` to fail with the error envelope `code` and HTTP `status`.
func expectAPIError(
  _ code: APIErrorCode, status: Int, sourceLocation: SourceLocation = #_sourceLocation,
  _ body: () async throws -> some Any
) async {
  do {
    _ = try await body()
    Issue.record("expected \(status) \(code.rawValue), got success", sourceLocation: sourceLocation)
  } catch let error as NetworkingError {
    guard let server = error.serverError else {
      Issue.record("expected \(status) \(code.rawValue), got \(error)", sourceLocation: sourceLocation)
      return
    }
    #expect(server.code == code.rawValue, "\(server)", sourceLocation: sourceLocation)
    #expect(server.status.code == status, "\(server)", sourceLocation: sourceLocation)
  } catch {
    Issue.record("expected \(status) \(code.rawValue), got \(error)", sourceLocation: sourceLocation)
  }
}

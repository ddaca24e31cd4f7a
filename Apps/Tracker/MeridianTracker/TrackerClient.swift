import DomainKit
import Foundation
import MeridianAPI
import NetworkingKit
import NetworkingKitAsyncHTTPClient

/// The tracker's connection to its servers (one, or several nodes of one deployment): one AsyncHTTPClient transport
/// that follows a ``ServerList``, and `NetworkClient`s over it.
public final class TrackerConnection: Sendable {
  /// The transport; ``shutdown()`` closes it.
  public let transport: ServerListTransport
  /// The servers, and the one in use now.
  public var servers: ServerList { transport.servers }
  /// The first server's base URL, which requests are built for (the transport sends them to the current server).
  public var server: URL { servers.servers[0].url }

  /// A connection to `server`: one URL (`http://host:port`) or a comma-separated list of them.
  public convenience init(server: String) throws {
    self.init(servers: try ServerList([server]))
  }

  /// A connection to `servers`.
  public init(servers: ServerList) {
    transport = ServerListTransport(servers: servers)
  }

  /// A client sending `token` as bearer credentials.
  public func client(token: String? = nil) throws -> NetworkClient {
    try NetworkClient(
      baseURL: server, transport: transport,
      credentials: token.map { token in BearerTokenCredentials(token: token) { _ in nil } })
  }

  /// Closes the transport.
  public func shutdown() async throws { try await transport.shutdown() }

  /// Runs `body` with a connection to `servers`, and shuts the connection down when `body` returns, throws or is
  /// cancelled: a client that is never shut down traps in AsyncHTTPClient's deinit.
  public static func with<T: Sendable>(
    servers: ServerList, _ body: (TrackerConnection) async throws -> T
  ) async throws -> T {
    let connection = TrackerConnection(servers: servers)
    let result: Result<T, any Error>
    do {
      result = .success(try await body(connection))
    } catch {
      result = .failure(error)
    }
    // Outside the (possibly cancelled) caller's task, so that the shutdown always runs to its end.
    try? await Task { try await connection.shutdown() }.value
    return try result.get()
  }

  /// How to sign in.
  public enum SignIn: Sendable {
    /// Phone and one-time code; `code` nil asks the server to send one and returns without a session.
    case phone(String, code: String?)
    /// Email and password; `create` registers the account when it doesn't exist yet.
    case email(String, password: String, create: Bool)
  }

  /// Signs in and returns the session (nil after requesting a code).
  public func signIn(_ method: SignIn) async throws -> AuthSession? {
    let client = try client()
    switch method {
    case .phone(let phone, nil):
      _ = try await client.send(API.requestOTP, body: OTPRequest(phone: phone))
      return nil
    case .phone(let phone, let code?):
      return try await client.send(API.verifyOTP, body: OTPVerification(phone: phone, code: code))
    case .email(let email, let password, let create):
      let credentials = EmailCredentials(email: email, password: password)
      do {
        return try await client.send(API.login, body: credentials)
      } catch let error as NetworkingError where create && error.serverError?.code == "invalid_credentials" {
        return try await client.send(API.register, body: credentials)
      }
    }
  }
}

import DomainKit
import Foundation
import MeridianAPI
import NetworkingKit
import NetworkingKitAsyncHTTPClient

/// The tracker's connection to a server: one AsyncHTTPClient transport and `NetworkClient`s over it.
public final class TrackerConnection: Sendable {
  /// The transport; ``shutdown()`` closes it.
  public let transport: AsyncHTTPClientTransport
  /// The server's base URL.
  public let server: URL

  /// A connection to `server` (`http://host:port`).
  public init(server: String) throws {
    guard let url = URL(string: server), let scheme = url.scheme, ["http", "https"].contains(scheme),
      url.host != nil
    else { throw TrackerError.badArgument("--server must be an http(s) URL such as http://127.0.0.1:8080") }
    self.server = url
    transport = AsyncHTTPClientTransport()
  }

  /// A client sending `token` as bearer credentials.
  public func client(token: String? = nil) throws -> NetworkClient {
    try NetworkClient(
      baseURL: server, transport: transport,
      credentials: token.map { token in BearerTokenCredentials(token: token) { _ in nil } })
  }

  /// Closes the transport.
  public func shutdown() async throws { try await transport.shutdown() }

  /// Runs `body` with a connection to `server`, and shuts the connection down when `body` returns, throws or is
  /// cancelled: a client that is never shut down traps in AsyncHTTPClient's deinit.
  public static func with<T: Sendable>(
    server: String, _ body: (TrackerConnection) async throws -> T
  ) async throws -> T {
    let connection = try TrackerConnection(server: server)
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

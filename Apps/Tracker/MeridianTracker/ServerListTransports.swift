import Foundation
import HTTPTypes
import NetworkingKit
import NetworkingKitAsyncHTTPClient
import RealtimeKit
import RealtimeKitWebSocketClient

/// An HTTP transport that sends each request to the current server of a ``ServerList`` and moves on when it doesn't
/// answer.
///
/// A refused connection never reached the server, so the request goes to the next server at once (each server once).
/// A timeout or a lost connection may have: the transport moves on and reports the failure, and `NetworkClient`'s
/// retry policy decides whether the request is sent again (to the next server) — for an upload, with the same
/// `Idempotency-Key`.
public struct ServerListTransport: HTTPTransport {
  /// The servers; shared with the live socket, so that both move on together.
  public let servers: ServerList
  /// The transport requests go out on.
  public let base: AsyncHTTPClientTransport

  /// A transport over `base` to `servers`.
  public init(servers: ServerList, base: AsyncHTTPClientTransport = AsyncHTTPClientTransport()) {
    self.servers = servers
    self.base = base
  }

  /// Sends `request`, built for any server of the list, to the current one.
  public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> TransportResponse {
    var refusals = 0
    while true {
      let (position, server) = servers.current
      do {
        return try await base.send(Self.request(request, for: server, in: servers), body: body, options: options)
      } catch let error as TransportError where ServerList.isUnanswered(error) && !Task.isCancelled {
        servers.moveOn(from: position)
        refusals += 1
        guard error.isUnreachable, refusals < servers.servers.count else { throw error }
      }
    }
  }

  /// `request` (built for one of `list`'s servers, with its base path) addressed to `server` instead.
  static func request(_ request: HTTPRequest, for server: ServerList.Server, in list: ServerList) -> HTTPRequest {
    guard
      let origin = list.servers.first(where: {
        $0.scheme == request.scheme && $0.authority == request.authority
          && (request.path ?? "").hasPrefix($0.basePath)
      }), origin != server
    else { return request }
    var request = request
    request.scheme = server.scheme
    request.authority = server.authority
    request.path = server.basePath + (request.path ?? "/").dropFirst(origin.basePath.count)
    return request
  }

  /// Closes the underlying transport.
  public func shutdown() async throws { try await base.shutdown() }
}

/// The live socket's transport: connects to the current server of a ``ServerList`` and, when it can't, to the next
/// ones in turn. `RealtimeClient` reconnects after a lost connection and resumes its subscriptions and outbox, so
/// a socket whose server died carries on on the next one.
public struct ServerListRealtimeTransport: RealtimeClientTransport {
  /// The servers; shared with the HTTP transport.
  public let servers: ServerList

  /// A transport to `servers`.
  public init(servers: ServerList) { self.servers = servers }

  /// The socket URL (`ws(s)://host:port/…/ws`) of `server`.
  public static func socketURL(of server: ServerList.Server) -> String {
    (server.scheme == "https" ? "wss" : "ws") + "://" + server.authority + server.basePath + RealtimeProtocol.path
  }

  /// Connects to the first server that answers, starting with the current one.
  public func connect() async throws -> RealtimeClientConnection {
    var lastError: any Error = CancellationError()
    for _ in servers.servers.indices {
      let (position, server) = servers.current
      do {
        return try await WebSocketRealtimeTransport(url: Self.socketURL(of: server)).connect()
      } catch {
        try Task.checkCancellation()
        servers.moveOn(from: position)
        lastError = error
      }
    }
    throw lastError
  }
}

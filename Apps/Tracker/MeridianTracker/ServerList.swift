import Foundation
import NetworkingKit
import Synchronization

/// The servers a tracker may talk to (several nodes of one deployment), in order, and the one it talks to now.
///
/// Everything the tracker sends goes to the current server; when that one doesn't answer (connection refused or
/// reset, timeout) the caller moves on to the next, wrapping around, and stays there until it fails in turn. The
/// outbox's idempotency keys make a batch re-sent to another node of the same database count once.
public final class ServerList: Sendable, CustomStringConvertible {
  /// One server: its base URL as given and the parts a request is built from.
  public struct Server: Sendable, Hashable, CustomStringConvertible {
    /// The base URL, e.g. `http://127.0.0.1:8080`.
    public let url: URL
    /// `http` or `https`.
    public let scheme: String
    /// `host:port`.
    public let authority: String
    /// The path every endpoint's path follows (empty for none).
    public let basePath: String

    public var description: String { url.absoluteString }
  }

  /// The servers in the order given; never empty.
  public let servers: [Server]
  private let index = Mutex(0)

  /// Servers from `arguments`, each one URL or a comma-separated list of them (`--server a --server b` and
  /// `--server a,b` give the same list).
  ///
  /// - Throws: ``TrackerError/badArgument(_:)`` when there is none or one isn't an `http(s)://host[:port]` URL.
  public init(_ arguments: [String]) throws {
    let texts = arguments.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
      .filter { !$0.isEmpty }
    guard !texts.isEmpty else { throw TrackerError.badArgument("give a server, e.g. --server http://127.0.0.1:8080") }
    servers = try texts.map { text in
      guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil,
        let factory = try? RequestFactory(baseURL: url)
      else {
        throw TrackerError.badArgument(
          "'\(text)' is not a server URL; --server takes http(s) URLs such as http://127.0.0.1:8080")
      }
      return Server(url: url, scheme: factory.scheme, authority: factory.authority, basePath: factory.basePath)
    }
  }

  /// The server in use now and its position in ``servers``.
  public var current: (position: Int, server: Server) {
    let position = index.withLock { $0 }
    return (position, servers[position])
  }

  /// Moves on from the server at `position`, which didn't answer, to the next one (after the last, the first). Does
  /// nothing when another caller has moved on already, so that two requests failing at once skip one server, not two.
  public func moveOn(from position: Int) {
    index.withLock { index in
      if index == position { index = (position + 1) % servers.count }
    }
  }

  /// Whether `error` says the server didn't answer, so that the next one should be tried: the connection was refused,
  /// reset or closed early, or timed out (an HTTP status is an answer).
  public static func isUnanswered(_ error: any Error) -> Bool {
    if let error = error as? TransportError { return error.kind != .other }
    if let error = error as? NetworkingError, let transport = error.transportError { return transport.kind != .other }
    return false
  }

  /// The list as the tracker saves it: the URLs, comma-separated (one server is its URL alone).
  public var description: String { servers.map(\.description).joined(separator: ",") }
}

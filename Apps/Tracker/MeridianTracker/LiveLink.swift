import DomainKit
import Foundation
import MeridianAPI
import NetworkingKit
import RealtimeKit
import RealtimeKitWebSocketClient

extension RealtimeClient {
  /// A client of the live socket (`/ws`) of the servers `client` talks to, signed in with `token`: the socket follows
  /// the client's ``ServerList`` (moving on together with its HTTP requests) when it has one, else its base URL.
  static func meridian(for client: NetworkClient, token: String) -> RealtimeClient {
    let factory = client.factory
    let transport: any RealtimeClientTransport =
      (client.transport as? ServerListTransport).map { ServerListRealtimeTransport(servers: $0.servers) }
      ?? WebSocketRealtimeTransport(
        url: (factory.scheme == "https" ? "wss" : "ws") + "://" + factory.authority + factory.basePath
          + RealtimeProtocol.path)
    return RealtimeClient(
      transport: transport,
      configuration: RealtimeClientConfiguration(clientName: "meridian-tracker", clientVersion: "1") { token })
  }
}

/// The tracker's live socket. While it is connected, the uploader sends small batches as `publish`es on the user's
/// own channel (`user:<id>`); the server stores them like `POST /v1/fixes`, acknowledges once they are durable and
/// fans them out to live viewers. Whatever the socket can't carry now (not connected, too many fixes for one frame,
/// over the server's publish rate, no answer in time, refused) goes over HTTP instead, so the socket only ever
/// makes delivery faster, never less certain.
public actor LiveLink {
  /// The most fixes sent in one publish (about 25 KB of JSON; larger backlogs go over HTTP).
  public static let maxFixesPerPublish = 100

  let client: RealtimeClient
  let channel: ChannelName?
  let timeout: Duration
  private var lastPublish: ContinuousClock.Instant?

  /// A link for a signed-in tracker; ``start()`` connects it.
  ///
  /// - Parameter timeout: how long a publish may wait for its `ack` before the batch goes over HTTP.
  public init(session: TrackerSession, client: NetworkClient, timeout: Duration = .seconds(10)) {
    self.client = RealtimeClient.meridian(for: client, token: session.token)
    self.channel = ChannelName.user(session.userId.rawValue)
    self.timeout = timeout
  }

  /// Connects, and keeps reconnecting until ``stop()``.
  public func start() async { await client.start() }

  /// Closes the socket.
  public func stop() async { await client.stop() }

  /// Whether the socket is connected and signed in now.
  public var isConnected: Bool {
    get async {
      if case .connected = await client.state { return true }
      return false
    }
  }

  /// Publishes `batch` with `id` (the batch's idempotency key). Returns `true` once the server acknowledged it (the
  /// fixes are durable), `false` when it has to go over HTTP instead.
  func send(_ batch: FixBatch, id: String) async -> Bool {
    guard let channel, batch.fixes.count <= Self.maxFixesPerPublish, await isConnected, let limits = await client.limits
    else { return false }
    let now = ContinuousClock.now
    if let lastPublish, lastPublish.duration(to: now) < .seconds(1) / max(limits.publishPerSecond, 1) {
      return false
    }
    // Room for the frame around the payload: type, id, channel.
    guard let payload = try? JSONValue(encoding: batch), payload.jsonText.utf8.count + 512 <= limits.maxFrameBytes
    else { return false }
    lastPublish = now
    let client = self.client
    let timeout = self.timeout
    do {
      try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await client.publish(payload, to: channel, id: id) }
        group.addTask {
          try await Task.sleep(for: timeout)
          throw CancellationError()
        }
        try await group.next()
        group.cancelAll()
      }
      return true
    } catch {
      return false
    }
  }
}

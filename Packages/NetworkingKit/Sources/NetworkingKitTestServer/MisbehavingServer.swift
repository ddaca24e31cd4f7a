import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A real HTTP/1.1 server on a loopback port, for tests and benchmarks, that answers whatever its handler says —
/// including on purpose wrong things: resets halfway through a body, slow answers, connections closed unanswered.
///
/// ```swift
/// let server = try await MisbehavingServer.start { request in
///   request.path == "/flaky" && request.index < 2 ? .status(503, headers: [("Retry-After", "1")]) : .text("ok")
/// }
/// defer { Task { try await server.shutdown() } }
/// ```
public final class MisbehavingServer: Sendable {
  /// A request as the server received it.
  public struct Request: Sendable {
    /// `GET`, `POST`, ….
    public var method: String
    /// The request target (path and query).
    public var uri: String
    /// The header fields in order.
    public var headers: [(name: String, value: String)]
    /// The body bytes.
    public var body: [UInt8]
    /// How many requests for the same path arrived before this one (0 for the first).
    public var index: Int

    /// The path without the query.
    public var path: String { String(uri.split(separator: "?", maxSplits: 1).first ?? "") }

    /// The first value of a header field (case-insensitive name).
    public func header(_ name: String) -> String? {
      headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
  }

  /// What the server does with a request.
  public indirect enum Action: Sendable {
    /// Answer with a status, header fields and a body (`Content-Length` is added).
    case respond(status: Int, headers: [(String, String)], body: [UInt8])
    /// Send the head announcing `declaredLength` body bytes, then `partialBody`, then reset the connection (RST).
    case resetMidBody(status: Int, declaredLength: Int, partialBody: [UInt8])
    /// Close the connection without answering.
    case close
    /// Do `action` after `delay`.
    case delayed(Duration, Action)

    /// A status with an optional UTF-8 body.
    public static func status(_ status: Int, headers: [(String, String)] = [], body: String = "") -> Action {
      .respond(status: status, headers: headers, body: Array(body.utf8))
    }

    /// A 200 JSON answer.
    public static func json(_ body: String, status: Int = 200, headers: [(String, String)] = []) -> Action {
      .respond(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(body.utf8))
    }
  }

  /// The port the server listens on (chosen by the OS).
  public let port: Int
  private let channel: any Channel
  private let log: RequestLog

  private init(port: Int, channel: any Channel, log: RequestLog) {
    self.port = port
    self.channel = channel
    self.log = log
  }

  /// The server's base URL, `http://127.0.0.1:<port>`.
  public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

  /// Starts a server on `127.0.0.1` and a port the OS chooses.
  public static func start(
    recordsRequests: Bool = true,
    handler: @escaping @Sendable (Request) -> Action
  ) async throws -> MisbehavingServer {
    let log = RequestLog(recording: recordsRequests)
    let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.backlog, value: 256)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
      .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
          try channel.pipeline.syncOperations.addHandler(ConnectionHandler(log: log, handler: handler))
        }
      }
    let channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
    guard let port = channel.localAddress?.port else { throw ChannelError.inappropriateOperationForState }
    return MisbehavingServer(port: port, channel: channel, log: log)
  }

  /// Every request received so far, in arrival order.
  public var requests: [Request] { log.all }

  /// The requests received for `path`.
  public func requests(for path: String) -> [Request] { log.all.filter { $0.path == path } }

  /// Stops listening (open connections are left to the clients to close).
  public func shutdown() async throws {
    try await channel.close()
  }
}

final class RequestLog: Sendable {
  private struct State {
    var requests: [MisbehavingServer.Request] = []
    var counts: [String: Int] = [:]
  }

  private let state = Mutex(State())
  private let recording: Bool

  init(recording: Bool) { self.recording = recording }

  func record(_ request: inout MisbehavingServer.Request) {
    let path = request.path
    let recording = recording
    state.withLock { state in
      request.index = state.counts[path, default: 0]
      state.counts[path] = request.index + 1
      if recording { state.requests.append(request) }
    }
  }

  var all: [MisbehavingServer.Request] { state.withLock { $0.requests } }
}

final class ConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundOut = HTTPServerResponsePart

  private let log: RequestLog
  private let handler: @Sendable (MisbehavingServer.Request) -> MisbehavingServer.Action
  private var head: HTTPRequestHead?
  private var body: [UInt8] = []

  init(log: RequestLog, handler: @escaping @Sendable (MisbehavingServer.Request) -> MisbehavingServer.Action) {
    self.log = log
    self.handler = handler
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head):
      self.head = head
      body.removeAll(keepingCapacity: true)
    case .body(var buffer):
      body += buffer.readBytes(length: buffer.readableBytes) ?? []
    case .end:
      guard let head else { return }
      var request = MisbehavingServer.Request(
        method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) }, body: body,
        index: 0)
      log.record(&request)
      perform(handler(request), keepAlive: head.isKeepAlive, context: context)
    }
  }

  private func perform(_ action: MisbehavingServer.Action, keepAlive: Bool, context: ChannelHandlerContext) {
    switch action {
    case .respond(let status, let headers, let body):
      var fields = HTTPHeaders(headers)
      fields.replaceOrAdd(name: "Content-Length", value: String(body.count))
      if !keepAlive { fields.replaceOrAdd(name: "Connection", value: "close") }
      let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: fields)
      context.write(wrapOutboundOut(.head(head)), promise: nil)
      if !body.isEmpty {
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
      }
      let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
      if !keepAlive {
        let channel = context.channel
        done.whenComplete { _ in channel.close(promise: nil) }
      }
    case .resetMidBody(let status, let declaredLength, let partialBody):
      let fields = HTTPHeaders([("Content-Length", String(declaredLength))])
      let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: fields)
      context.write(wrapOutboundOut(.head(head)), promise: nil)
      let channel = context.channel
      context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(channel.allocator.buffer(bytes: partialBody)))))
        .whenComplete { _ in
          // SO_LINGER with a zero timeout turns close() into a TCP reset.
          let provider = channel as? any SocketOptionProvider
          let linger =
            provider?.setSoLinger(linger(l_onoff: 1, l_linger: 0)) ?? channel.eventLoop.makeSucceededVoidFuture()
          linger.whenComplete { _ in channel.close(promise: nil) }
        }
    case .close:
      context.close(promise: nil)
    case .delayed(let delay, let next):
      let components = delay.components
      let nanoseconds = components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
      let isolated = context.eventLoop.assumeIsolated()
      let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
      isolated.scheduleTask(in: .nanoseconds(nanoseconds)) {
        let (handler, context) = loopBound.value
        guard context.channel.isActive else { return }
        handler.perform(next, keepAlive: keepAlive, context: context)
      }
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    context.close(promise: nil)
  }
}

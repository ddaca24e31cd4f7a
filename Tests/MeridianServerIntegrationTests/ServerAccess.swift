import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeridianServer
import NIOCore
import NIOEmbedded
import NetworkingKit
import Synchronization
import Testing

/// How a test's ``TestServer/client(token:compressionThreshold:transport:)`` reaches the server: over a socket
/// (AsyncHTTPClient to the server's port), or in process, straight to its routes (HummingbirdTesting's `.router`
/// way), which skips the HTTP round trip. The server listens on its port either way, so a test of the live socket,
/// of raw bytes or of another process still reaches it there.
enum ServerAccess: Sendable {
  /// AsyncHTTPClient to 127.0.0.1 and the server's port.
  case socket
  /// The server's routes called in this process: same store, writer and hub, no connection.
  case router

  /// The access of servers the current test starts: `.socket` unless its suite or test says
  /// ``Trait/inProcess``.
  @TaskLocal static var current: ServerAccess = .socket

  /// ``current``, unless `MERIDIAN_TEST_ACCESS` is `socket` or `router`, which sends every test that way (to
  /// compare the two, or to try a suite in process before marking it).
  static var effective: ServerAccess {
    switch ProcessInfo.processInfo.environment["MERIDIAN_TEST_ACCESS"] {
    case "socket": .socket
    case "router": .router
    default: current
    }
  }
}

/// Sets ``ServerAccess/current`` for a suite or a test.
struct ServerAccessTrait: SuiteTrait, TestTrait, TestScoping {
  let access: ServerAccess

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    try await ServerAccess.$current.withValue(access) { try await function() }
  }
}

extension Trait where Self == ServerAccessTrait {
  /// The suite's (or test's) clients call the server's routes in process: for what a socket changes nothing.
  static var inProcess: Self { ServerAccessTrait(access: .router) }
  /// This test's clients go over the socket (in a suite that is ``inProcess``): for what a connection changes.
  static var overSocket: Self { ServerAccessTrait(access: .socket) }
}

/// A transport that hands each request to a server's routes in this process, as Hummingbird's own server does
/// (an error the routes throw is a 500, the `Server` header is set), from 127.0.0.1.
struct RouterTransport: HTTPTransport {
  let responder: RouterResponder<MeridianRequestContext>
  let logger: Logger

  init(responder: RouterResponder<MeridianRequestContext>) {
    self.responder = responder
    var logger = Logger(label: "meridian-server-test")
    logger.logLevel = .warning
    self.logger = logger
  }

  func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> TransportResponse {
    var head = request
    if let body { head.headerFields[.contentLength] = String(body.count) }
    let request = Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: body ?? Data())))
    let channel = NIOAsyncTestingChannel()
    channel.remoteAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 40_000)
    let context = MeridianRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
    var response: Response
    do {
      response = try await responder.respond(to: request, context: context)
    } catch {
      response = Response(status: .internalServerError)
    }
    response.headers[.server] = "meridian-server"
    let collected = CollectedBody()
    try await response.body.write(CollectingBodyWriter(into: collected))
    let body = collected.bytes.withLock { $0 }
    guard body.readableBytes <= options.maxResponseBytes else {
      throw ResponseTooLargeError(limit: options.maxResponseBytes)
    }
    if request.method != .head { response.headers[.contentLength] = String(body.readableBytes) }
    return TransportResponse(head: response.head, body: Data(body.readableBytesView))
  }
}

/// The bytes of a response body, as written.
private final class CollectedBody: Sendable {
  let bytes = Mutex(ByteBuffer())
}

/// Writes a response body into a ``CollectedBody``.
private struct CollectingBodyWriter: ResponseBodyWriter {
  let into: CollectedBody

  mutating func write(_ buffer: ByteBuffer) async throws {
    into.bytes.withLock { $0.writeImmutableBuffer(buffer) }
  }

  consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

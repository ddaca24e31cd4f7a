import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import RealtimeKit

/// The HTTP/1 child channel of ``Hummingbird/HTTPServerBuilder/realtime(hub:configuration:)`` without
/// permessage-deflate: upgrades `GET <path>` offering `meridian.v1` to a WebSocket that a channel handler feeds into
/// the hub, and serves every other request with the application's router.
///
/// An upgraded connection is its NIO channel and pipeline, the hub's state, and one task that only awaits the
/// channel's close: no `NIOAsyncChannel`, and no deep async stack parked on it while it is idle (a parked task keeps
/// the slabs of its deepest stack; hummingbird-websocket's handler plus the hub's `serve` loop held about 17 KB). The
/// hub handles its messages with a task that exists only while some are queued (``RealtimeKit/RealtimeInbound``).
///
/// Until the upgrade, an `HTTPRequestTimeoutHandler` after the request decoder answers malformed requests (400, 431)
/// and slow ones (408) and closes them, and closes idle connections (``RealtimeWebSocketConfiguration/timeouts``).
struct RealtimeHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
  enum UpgradeResult: Sendable {
    /// The pipeline now serves the WebSocket; nothing is left for a task to do.
    case websocket
    case notUpgraded(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
    case failedUpgrade(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
  }

  struct Value: ServerChildChannelValue {
    let upgradeResult: EventLoopFuture<UpgradeResult>
    let channel: any Channel
  }

  let responder: HTTPChannelHandler.Responder
  let hub: RealtimeHub
  let configuration: RealtimeWebSocketConfiguration

  init(
    responder: @escaping HTTPChannelHandler.Responder, hub: RealtimeHub, configuration: RealtimeWebSocketConfiguration
  ) {
    self.responder = Self.upgradeRedirecting(responder)
    self.hub = hub
    self.configuration = configuration
  }

  func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
    channel.eventLoop.makeCompletedFuture {
      let hub = self.hub
      let path = self.configuration.path
      let maxBytes = hub.configuration.limits.maxFrameBytes
      let closeTimeout = TimeAmount(self.configuration.closeTimeout)
      let http1 = self.configuration.http1
      // The channel keeps its receive buffer between reads: start it small, since idle realtime connections are the
      // common case (NIO's default starts at 2 KB); it grows at once when reads fill it.
      try channel.syncOptions?.setOption(
        ChannelOptions.recvAllocator,
        value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)
      )
      let upgradeAttempted = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
      let timeoutHandler = NIOLoopBoundBox<HTTPRequestTimeoutHandler?>(nil, eventLoop: channel.eventLoop)
      let endpoints = self.configuration.endpoints
      let upgrader = NIOTypedWebSocketServerUpgrader<UpgradeResult>(
        maxFrameSize: endpoints.reduce(maxBytes) { max($0, $1.maxMessageBytes) },
        shouldUpgrade: { channel, head in
          upgradeAttempted.value = true
          if RealtimeWebSocketEndpoint.matching(head.uri, in: endpoints) != nil {
            if let handler = timeoutHandler.value {
              channel.pipeline.syncOperations.removeHandler(handler, promise: nil)
            }
            return channel.eventLoop.makeSucceededFuture(HTTPHeaders())
          }
          let offered = head.headers[canonicalForm: "Sec-WebSocket-Protocol"]
          guard RealtimeUpgrade.accepts(uri: head.uri, offered: offered.map(String.init), path: path) else {
            return channel.eventLoop.makeSucceededFuture(nil)
          }
          // The upgrade is accepted: the timeouts end here, before the upgrade removes the request decoder, which hands
          // the bytes after the request (WebSocket frames) to the next handler.
          if let handler = timeoutHandler.value { channel.pipeline.syncOperations.removeHandler(handler, promise: nil) }
          return channel.eventLoop.makeSucceededFuture(
            HTTPHeaders([("Sec-WebSocket-Protocol", RealtimeProtocol.subprotocol)]))
        },
        upgradePipelineHandler: { channel, head in
          channel.eventLoop.makeCompletedFuture {
            let handler =
              if let (endpoint, query) = RealtimeWebSocketEndpoint.matching(head.uri, in: endpoints) {
                RealtimeWebSocketHandler(maxMessageBytes: endpoint.maxMessageBytes, closeTimeout: closeTimeout) {
                  connection, resume in endpoint.open(query, connection, resume)
                }
              } else {
                RealtimeWebSocketHandler(maxMessageBytes: maxBytes, closeTimeout: closeTimeout) { connection, resume in
                  hub.open(connection: connection, resume: resume)
                }
              }
            try channel.pipeline.syncOperations.addHandler(handler)
            return .websocket
          }
        }
      )
      let serverUpgradeConfiguration = NIOTypedHTTPServerUpgradeConfiguration(
        upgraders: [upgrader],
        notUpgradingCompletionHandler: { channel in
          channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try channel.pipeline.syncOperations.addHandlers(http1.additionalChannelHandlers())
            try channel.pipeline.syncOperations.addHandler(
              HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger)
            )
            let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
              wrappingChannelSynchronously: channel,
              configuration: .init(isOutboundHalfClosureEnabled: true)
            )
            return upgradeAttempted.value ? .failedUpgrade(asyncChannel) : .notUpgraded(asyncChannel)
          }
        }
      )
      var pipeline = NIOUpgradableHTTPServerPipelineConfiguration<UpgradeResult>(
        upgradeConfiguration: serverUpgradeConfiguration)
      pipeline.enablePipelining = false  // HTTP is pipelined by NIOAsyncChannel
      pipeline.enableErrorHandling = false  // HTTPRequestTimeoutHandler answers malformed requests
      pipeline.enableResponseHeaderValidation = false  // HTTPTypes validates
      pipeline.decoderConfiguration.maxHeaderFieldSize = http1.httpDecoder.maxHeaderFieldSize
      pipeline.decoderConfiguration.maxHeaderListSize = http1.httpDecoder.maxHeaderListSize
      pipeline.decoderConfiguration.maxHeaderFieldCount = http1.httpDecoder.maxHeaderFieldCount
      let upgradeResult = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
        configuration: pipeline)
      timeoutHandler.value = try HTTPRequestTimeoutHandler.add(
        to: channel, timeouts: self.configuration.timeouts, logger: logger)
      return Value(upgradeResult: upgradeResult, channel: channel)
    }
  }

  func handle(value: Value, logger: Logger) async {
    let result: UpgradeResult
    do {
      result = try await value.upgradeResult.get()
    } catch {
      logger.debug("Connection ended before the upgrade", metadata: ["error.type": "\(error)"])
      value.channel.close(promise: nil)
      return
    }
    switch result {
    case .websocket:
      await Self.waitForClose(value.channel)
    case .notUpgraded(let http1):
      await handleHTTP(asyncChannel: http1, logger: logger)
    case .failedUpgrade(let http1):
      await Self.refuseUpgrade(http1, logger: logger)
    }
  }

  /// The channel handler serves an upgraded connection. This task only waits for it to close, with a shallow stack,
  /// so that the server's task group still tracks the connection and cancelling the server closes it. (Graceful
  /// shutdown sends `ChannelShouldQuiesceEvent`, which the handler answers with a close frame.)
  @inline(never)
  static func waitForClose(_ channel: any Channel) async {
    await withTaskCancellationHandler {
      try? await channel.closeFuture.get()
    } onCancel: {
      channel.close(promise: nil)
    }
  }

  @inline(never)
  static func refuseUpgrade(_ http1: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, logger: Logger) async {
    logger.debug("WebSocket upgrade refused")
    do {
      try await http1.executeThenClose { _, outbound in
        try await outbound.write(
          contentsOf: [
            .head(HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])),
            .end(nil),
          ]
        )
      }
    } catch {
      logger.trace("Failed to refuse the upgrade", metadata: ["error.type": "\(error)"])
    }
  }

  /// NIO only upgrades the first request of a connection: answer a later upgrade request with a redirect to the same
  /// URI and close, so that the client retries on a new connection (as hummingbird-websocket does).
  static func upgradeRedirecting(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
    struct RedirectCloseError: Error {}
    return { request, responseWriter, channel in
      guard request.headers[.upgrade]?.lowercased() == "websocket" else {
        try await responder(request, responseWriter, channel)
        return
      }
      var path = request.uri.path
      if let query = request.uri.query { path += "?\(query)" }
      try await responseWriter.writeResponse(
        HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: path]))
      throw RedirectCloseError()
    }
  }
}

/// hummingbird-websocket's HTTP/1 child channel (the permessage-deflate path of
/// ``Hummingbird/HTTPServerBuilder/realtime(hub:configuration:)``) with an `HTTPRequestTimeoutHandler` after the request
/// decoder; the upgrade closure must remove it (by ``HTTPRequestTimeoutHandler/name``) before accepting.
struct RealtimeDeflateHTTP1Channel: ServerChildChannel {
  let base: HTTP1WebSocketUpgradeChannel
  let timeouts: RealtimeWebSocketConfiguration.HTTPTimeouts

  func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1WebSocketUpgradeChannel.Value> {
    base.setup(channel: channel, logger: logger).flatMapThrowing { value in
      try HTTPRequestTimeoutHandler.add(to: channel, timeouts: timeouts, logger: logger)
      return value
    }
  }

  func handle(value: HTTP1WebSocketUpgradeChannel.Value, logger: Logger) async {
    await base.handle(value: value, logger: logger)
    // hummingbird-websocket leaves the channel open when the upgrade result fails.
    value.channel.close(promise: nil)
  }
}

/// Serves one upgraded WebSocket: aggregates fragments, validates UTF-8, answers pings, runs the close handshake, and
/// hands text and binary messages to the hub (or another endpoint's protocol). Holds reads while the receiver's backlog
/// for the connection is full.
final class RealtimeWebSocketHandler: ChannelDuplexHandler, RemovableChannelHandler {
  typealias InboundIn = WebSocketFrame
  typealias OutboundIn = WebSocketFrame
  typealias OutboundOut = WebSocketFrame

  /// Attaches the socket to what serves it: the hub, or another endpoint's protocol.
  typealias Open =
    @Sendable (_ connection: any RealtimeServerConnection, _ resume: @escaping @Sendable () -> Void) -> (
      any RealtimeMessageReceiver
    )?

  private let open: Open
  private let maxMessageBytes: Int
  private let closeTimeout: TimeAmount
  private var context: ChannelHandlerContext?
  private var inbound: (any RealtimeMessageReceiver)?
  /// The fragments of a message whose final frame has not arrived yet.
  private var fragments: ByteBuffer?
  private var fragmentsAreText = false
  private var sentClose = false
  private var receivedClose = false
  private var closeTimer: Scheduled<Void>?
  /// The hub's backlog for this connection is full: reads are held until it drains.
  private var readsHeld = false
  private var readPending = false

  init(maxMessageBytes: Int, closeTimeout: TimeAmount, open: @escaping Open) {
    self.open = open
    self.maxMessageBytes = maxMessageBytes
    self.closeTimeout = closeTimeout
  }

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
    let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
    let eventLoop = context.eventLoop
    inbound = open(
      NIORealtimeConnection(handler: handler, channel: context.channel),
      { eventLoop.execute { handler.value.resumeReads() } }
    )
    if inbound == nil { startClose(.normalClosure, reason: nil, promise: nil) }
    if !context.channel.isActive { end() }
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    end()
    self.context = nil
  }

  func channelInactive(context: ChannelHandlerContext) {
    end()
    context.fireChannelInactive()
  }

  private func end() {
    closeTimer?.cancel()
    closeTimer = nil
    fragments = nil
    inbound?.finish()
    inbound = nil
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let frame = unwrapInboundIn(data)
    guard !receivedClose else { return }
    guard frame.reservedBits.isEmpty else { return fail(.protocolError) }
    switch frame.opcode {
    case .text, .binary:
      guard fragments == nil else { return fail(.protocolError) }
      guard frame.length <= maxMessageBytes else { return fail(.messageTooLarge) }
      if frame.fin {
        deliver(frame.unmaskedData, text: frame.opcode == .text)
      } else {
        guard frame.length <= maxMessageBytes else { return fail(.messageTooLarge) }
        fragments = frame.unmaskedData
        fragmentsAreText = frame.opcode == .text
      }
    case .continuation:
      guard var buffer = fragments else { return fail(.protocolError) }
      guard buffer.readableBytes + frame.length <= maxMessageBytes else { return fail(.messageTooLarge) }
      fragments = nil  // unique again, so the append below does not copy
      var data = frame.unmaskedData
      buffer.writeBuffer(&data)
      if frame.fin {
        deliver(buffer, text: fragmentsAreText)
      } else {
        fragments = buffer
      }
    case .ping:
      guard frame.fin, !sentClose else { return }
      context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)))
        .whenFailure { [channel = context.channel] _ in channel.close(promise: nil) }
    case .pong:
      break
    case .connectionClose:
      receivedClose = true
      received(close: frame.unmaskedData, context: context)
    default:
      fail(.protocolError)
    }
  }

  private func deliver(_ data: ByteBuffer, text: Bool) {
    guard !sentClose, let inbound else { return }
    let message: RealtimeInboundMessage
    if text {
      guard let string = Self.validatedString(data) else { return fail(.dataInconsistentWithMessage) }
      message = .text(string)
    } else {
      message = .binary(byteCount: data.readableBytes)
    }
    if !inbound.receive(message) { readsHeld = true }
  }

  static func validatedString(_ buffer: ByteBuffer) -> String? {
    if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
      var buffer = buffer
      return try? buffer.readUTF8ValidatedString(length: buffer.readableBytes)
    } else {
      return String(bytes: buffer.readableBytesView, encoding: .utf8)
    }
  }

  /// The client's close frame: completes our close handshake, or answers theirs (echoing a valid code, as
  /// hummingbird-websocket does) and closes the connection.
  private func received(close data: ByteBuffer, context: ChannelHandlerContext) {
    guard !sentClose else {
      context.close(promise: nil)
      return
    }
    var data = data
    let code: WebSocketErrorCode
    if data.readableBytes == 0 {
      code = .normalClosure
    } else if let received = data.readWebSocketErrorCode(),
      data.readableBytes == 0 || Self.validatedString(data) != nil
    {
      if case .unknown(let raw) = received, raw < 3000 || raw > 4999 {
        code = .protocolError
      } else {
        code = .normalClosure
      }
    } else {
      code = .protocolError
    }
    sentClose = true
    context.writeAndFlush(wrapOutboundOut(Self.closeFrame(code, reason: nil, allocator: context.channel.allocator)))
      .whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
  }

  /// Fails the connection: sends a close frame with `code` and stops handing messages to the hub.
  private func fail(_ code: WebSocketErrorCode) {
    fragments = nil
    startClose(code, reason: nil, promise: nil)
  }

  /// Sends a close frame (once) and closes the connection when the client answers or after the close timeout.
  func startClose(_ code: WebSocketErrorCode, reason: String?, promise: EventLoopPromise<Void>?) {
    guard let context, !sentClose else {
      promise?.succeed()
      return
    }
    sentClose = true
    context.writeAndFlush(
      wrapOutboundOut(Self.closeFrame(code, reason: reason, allocator: context.channel.allocator)), promise: promise)
    closeTimer = context.eventLoop.scheduleTask(in: closeTimeout) { [channel = context.channel] in
      channel.close(promise: nil)
    }
    // Keep reading: the answer to the close frame is what completes the handshake.
    resumeReads()
  }

  /// Sends a text message unless the close handshake has started.
  func send(_ text: String, promise: EventLoopPromise<Void>?) {
    guard let context, !sentClose else {
      promise?.fail(ChannelError.ioOnClosedChannel)
      return
    }
    context.writeAndFlush(
      wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: context.channel.allocator.buffer(string: text))),
      promise: promise
    )
  }

  func read(context: ChannelHandlerContext) {
    if readsHeld {
      readPending = true
    } else {
      context.read()
    }
  }

  func resumeReads() {
    readsHeld = false
    guard readPending, let context else { return }
    readPending = false
    context.read()
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if event is ChannelShouldQuiesceEvent {
      // Server shutting down without the hub having closed this connection first.
      startClose(.goingAway, reason: nil, promise: nil)
    } else {
      context.fireUserInboundEventTriggered(event)
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    // Frame decoding errors were answered with a close frame by NIO's WebSocketProtocolErrorHandler; I/O errors end
    // the connection.
    context.close(promise: nil)
  }

  static func closeFrame(_ code: WebSocketErrorCode, reason: String?, allocator: ByteBufferAllocator) -> WebSocketFrame
  {
    var buffer = allocator.buffer(capacity: 2 + (reason?.utf8.count ?? 0))
    buffer.write(webSocketErrorCode: code)
    if let reason { buffer.writeString(reason) }
    return WebSocketFrame(fin: true, opcode: .connectionClose, data: buffer)
  }
}

/// The hub's view of a connection served by ``RealtimeWebSocketHandler``.
struct NIORealtimeConnection: RealtimeServerConnection {
  let handler: NIOLoopBound<RealtimeWebSocketHandler>
  let channel: any Channel

  /// Returns once the message is handed to the event loop while the channel is writable; otherwise waits until it
  /// is written, so that a slow consumer's messages back up in the hub's bounded send queue.
  func send(_ text: String) async throws {
    guard channel.isWritable else {
      let promise = channel.eventLoop.makePromise(of: Void.self)
      channel.eventLoop.execute { handler.value.send(text, promise: promise) }
      try await promise.futureResult.get()
      return
    }
    guard channel.isActive else { throw ChannelError.ioOnClosedChannel }
    channel.eventLoop.execute { handler.value.send(text, promise: nil) }
  }

  func close(code: RealtimeCloseCode, reason: String) async {
    let promise = channel.eventLoop.makePromise(of: Void.self)
    channel.eventLoop.execute {
      handler.value.startClose(WebSocketErrorCode(codeNumber: Int(code.rawValue)), reason: reason, promise: promise)
    }
    try? await promise.futureResult.get()
  }

  func abort() async {
    try? await channel.close()
  }
}

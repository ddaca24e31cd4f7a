import Logging
import NIOCore
import NIOHTTP1

/// Guards an HTTP/1 connection of ``Hummingbird/HTTPServerBuilder/realtime(hub:configuration:)``, right after the
/// request decoder:
///
/// - a malformed request is answered `400` (`431` for oversized headers) with `Connection: close`;
/// - a request whose head or body arrives too slowly is answered `408` with `Connection: close`;
/// - a connection with no request in progress is closed quietly after the idle timeout;
/// - a request or response with `Connection: close` (or an HTTP/1.0 request without keep-alive) ends the connection
///   after the response.
///
/// An answered connection is closed for output at once (the client reads the answer, then end of stream), then fully
/// once the client closes or after ``lingerTimeout``: its remaining bytes are read and dropped meanwhile, because
/// closing a socket with unread bytes resets the connection and can destroy the answer before the client reads it.
///
/// No timer runs while the application produces a response to a fully read request. The handler must leave the
/// pipeline before an accepted WebSocket upgrade removes the request decoder (which hands the bytes after the request to
/// the next handler).
final class HTTPRequestTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
  typealias InboundIn = HTTPServerRequestPart
  typealias InboundOut = HTTPServerRequestPart
  typealias OutboundIn = HTTPServerResponsePart
  typealias OutboundOut = HTTPServerResponsePart

  /// How long an answered, half-closed connection waits for the client to close before closing it.
  static let lingerTimeout = TimeAmount.seconds(1)

  private enum Reading {
    /// Between requests: no byte of a next request has arrived.
    case idle
    /// Bytes of a request have arrived, its head is not complete.
    case head
    /// The head has arrived, the request's end has not.
    case body
  }

  private enum Timer {
    case idle
    case header
    case body
    case linger
  }

  private let timeouts: RealtimeWebSocketConfiguration.HTTPTimeouts
  private let logger: Logger
  private var reading = Reading.idle
  /// Requests whose head has been read and whose response has not ended.
  private var unanswered = 0
  /// A response head has been written and its end has not.
  private var responding = false
  private var readPart = false
  private var closeAfterResponse = false
  /// A malformed request that follows requests still being answered: answered after them.
  private var pendingAnswer: HTTPResponseStatus?
  /// The connection has been answered (or is being closed): inbound parts and errors are dropped, writes refused.
  private var closing = false
  private var timer: (kind: Timer, task: Scheduled<Void>)?

  init(timeouts: RealtimeWebSocketConfiguration.HTTPTimeouts, logger: Logger) {
    self.timeouts = timeouts
    self.logger = logger
  }

  /// The handler's name in the pipeline.
  static let name = "RealtimeKit.HTTPRequestTimeoutHandler"

  /// Adds a handler right after the request decoder of `channel`'s HTTP/1 pipeline; call on the channel's event loop.
  @discardableResult
  static func add(
    to channel: any Channel, timeouts: RealtimeWebSocketConfiguration.HTTPTimeouts, logger: Logger
  ) throws -> HTTPRequestTimeoutHandler {
    let handler = HTTPRequestTimeoutHandler(timeouts: timeouts, logger: logger)
    let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
    try channel.pipeline.syncOperations.addHandler(handler, name: name, position: .after(decoder))
    return handler
  }

  func handlerAdded(context: ChannelHandlerContext) {
    if context.channel.isActive { arm(.idle, context: context) }
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    closing = true
    disarm()
  }

  func channelActive(context: ChannelHandlerContext) {
    if timer == nil { arm(.idle, context: context) }
    context.fireChannelActive()
  }

  func channelInactive(context: ChannelHandlerContext) {
    closing = true
    disarm()
    context.fireChannelInactive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !closing else { return }
    readPart = true
    switch unwrapInboundIn(data) {
    case .head(let head):
      reading = .body
      unanswered += 1
      if !head.isKeepAlive { closeAfterResponse = true }
      arm(.body, context: context)
    case .body:
      break
    case .end:
      reading = .idle
      if unanswered == 0 { arm(.idle, context: context) } else { disarm() }
    }
    // Last: accepting a WebSocket upgrade removes this handler while the head is passed on.
    context.fireChannelRead(data)
  }

  /// Fires after every read from the socket, also when the decoder has not produced a part yet: bytes of a request
  /// have arrived and its head is not complete.
  func channelReadComplete(context: ChannelHandlerContext) {
    if !closing, !readPart, reading == .idle, pendingAnswer == nil {
      reading = .head
      arm(.header, context: context)
    }
    readPart = false
    context.fireChannelReadComplete()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    if closing, error is HTTPParserError || error is ByteToMessageDecoderError { return }
    guard let error = error as? HTTPParserError else {
      context.fireErrorCaught(error)
      return
    }
    // Handled here: the application's own answer to a parse error would wait for the client to close.
    logger.debug("Malformed HTTP request", metadata: ["error.type": "\(error)"])
    let status: HTTPResponseStatus = error == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest
    if canAnswer {
      answer(status, context: context)
    } else if reading == .body {
      context.close(promise: nil)  // the request being answered is the malformed one
    } else {
      pendingAnswer = status
      reading = .idle
      disarm()
    }
  }

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    guard !closing else {
      promise?.fail(ChannelError.outputClosed)
      return
    }
    switch unwrapOutboundIn(data) {
    case .head(let head):
      // An interim response (`100 Continue`) leaves the request's response to come.
      if !(100..<200).contains(head.status.code) || head.status == .switchingProtocols {
        responding = true
        if head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "close" }) {
          closeAfterResponse = true
        }
      }
      context.write(data, promise: promise)
    case .body:
      context.write(data, promise: promise)
    case .end:
      responding = false
      unanswered = max(0, unanswered - 1)
      context.write(data, promise: promise)
      guard unanswered == 0 else { return }
      if let status = pendingAnswer {
        answer(status, context: context)
      } else if closeAfterResponse {
        finish(context: context)
      } else if reading == .idle {
        arm(.idle, context: context)
      }
    }
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if event is ChannelShouldQuiesceEvent {
      guard reading != .idle || unanswered > 0 else {
        context.close(promise: nil)
        return
      }
      closeAfterResponse = true
    }
    context.fireUserInboundEventTriggered(event)
  }

  /// Whether a response written now answers the request in progress (and not an earlier one still unanswered).
  private var canAnswer: Bool {
    !responding && unanswered == (reading == .body ? 1 : 0)
  }

  /// Writes `status` with `Connection: close` and ends the connection.
  private func answer(_ status: HTTPResponseStatus, context: ChannelHandlerContext) {
    let head = HTTPResponseHead(
      version: .http1_1, status: status, headers: HTTPHeaders([("Connection", "close"), ("Content-Length", "0")]))
    context.write(wrapOutboundOut(.head(head)), promise: nil)
    context.write(wrapOutboundOut(.end(nil)), promise: nil)
    finish(context: context)
  }

  /// Closes the output once the written bytes are sent, then the connection when the client closes or after
  /// ``lingerTimeout``.
  private func finish(context: ChannelHandlerContext) {
    closing = true
    context.flush()
    let channel = context.channel
    let closed = context.eventLoop.makePromise(of: Void.self)
    closed.futureResult.whenFailure { error in
      if let error = error as? ChannelError, error == .outputClosed { return }  // already half-closed
      channel.close(promise: nil)
    }
    context.close(mode: .output, promise: closed)
    arm(.linger, context: context)
  }

  private func timedOut(_ kind: Timer, context: ChannelHandlerContext) {
    timer = nil
    switch kind {
    case .idle:
      logger.debug("Idle HTTP connection closed")
      context.close(promise: nil)
    case .header, .body:
      logger.debug("HTTP request timed out", metadata: ["http.timeout": "\(kind)"])
      if canAnswer {
        answer(.requestTimeout, context: context)
      } else {
        context.close(promise: nil)
      }
    case .linger:
      context.close(promise: nil)
    }
  }

  private func arm(_ kind: Timer, context: ChannelHandlerContext) {
    disarm()
    let delay: TimeAmount =
      switch kind {
      case .idle: TimeAmount(timeouts.idle)
      case .header: TimeAmount(timeouts.header)
      case .body: TimeAmount(timeouts.body)
      case .linger: Self.lingerTimeout
      }
    let task = context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
      self.timedOut(kind, context: context)
    }
    timer = (kind, task)
  }

  private func disarm() {
    timer?.task.cancel()
    timer = nil
  }
}

@available(*, unavailable)
extension HTTPRequestTimeoutHandler: Sendable {}

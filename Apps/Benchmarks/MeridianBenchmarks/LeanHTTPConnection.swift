import NIOCore
import NIOPosix

/// A keep-alive HTTP/1.1 connection for load generation that costs the shared cores as little as possible: each
/// request goes out as one prepared buffer in one write, and an answer is only framed (`Content-Length`) and its
/// status read. It shows the server's own cost, where the shared API client (AsyncHTTPClient under NetworkingKit)
/// adds its own to both sides of a comparison.
struct LeanHTTPConnection: Sendable {
  private let channel: any Channel
  private let reader: ResponseReader

  /// Connects to `127.0.0.1:port`.
  static func connect(port: Int) async throws -> LeanHTTPConnection {
    let reader = ResponseReader()
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(reader) }
      }
      .connect(host: "127.0.0.1", port: port).get()
    return LeanHTTPConnection(channel: channel, reader: reader)
  }

  /// Sends `request` (a whole HTTP/1.1 request) and returns the answer's status code once the answer is complete.
  func send(_ request: ByteBuffer) async throws -> Int {
    let answer = channel.eventLoop.makePromise(of: Int.self)
    let (channel, reader) = (self.channel, self.reader)
    channel.eventLoop.execute {
      reader.expect(answer)
      channel.writeAndFlush(request, promise: nil)
    }
    return try await answer.futureResult.get()
  }

  /// Closes the connection.
  func close() async throws { try await channel.close() }

  /// A request as bytes: the request line, `Host`, `fields` and, with a body, its `Content-Length`.
  static func request(_ method: String, _ path: String, fields: [(String, String)] = [], body: [UInt8] = [])
    -> ByteBuffer
  {
    var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    for (name, value) in fields { head += "\(name): \(value)\r\n" }
    if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
    head += "\r\n"
    var buffer = ByteBuffer(string: head)
    buffer.writeBytes(body)
    return buffer
  }

  /// Frames answers on the connection's event loop and completes the waiting request's promise with each status.
  private final class ResponseReader: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private var waiting: EventLoopPromise<Int>?
    private var received = ByteBuffer()

    func expect(_ answer: EventLoopPromise<Int>) { waiting = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      var bytes = unwrapInboundIn(data)
      received.writeBuffer(&bytes)
      let view = received.readableBytesView
      guard let headEnd = view.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
      let head = String(decoding: view[view.startIndex..<headEnd.lowerBound], as: UTF8.self)
      var bodyLength = 0
      for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
        bodyLength = Int(line.dropFirst("content-length:".count).filter { $0 != " " }) ?? 0
      }
      let answerLength = headEnd.upperBound - view.startIndex + bodyLength
      guard received.readableBytes >= answerLength else { return }
      received.moveReaderIndex(forwardBy: answerLength)
      received.discardReadBytes()
      let status = head.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
      let answer = waiting
      waiting = nil
      answer?.succeed(status)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
      waiting?.fail(error)
      waiting = nil
      context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
      waiting?.fail(ChannelError.eof)
      waiting = nil
    }
  }
}

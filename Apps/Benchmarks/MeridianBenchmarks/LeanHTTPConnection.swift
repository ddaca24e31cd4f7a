import NIOCore
import NIOPosix

/// A keep-alive HTTP/1.1 connection for load generation that costs the shared cores as little as possible: each
/// request goes out as one prepared buffer in one write, and an answer is only framed (`Content-Length`) and its
/// status read. It shows the server's own cost, where the shared API client (AsyncHTTPClient under NetworkingKit)
/// adds its own to both sides of a comparison.
struct LeanHTTPConnection: Sendable {
  private let channel: any Channel
  /// The connection's handler, used only on its event loop.
  private let reader: NIOLoopBoundBox<ResponseReader>

  /// Connects to `127.0.0.1:port`.
  static func connect(port: Int) async throws -> LeanHTTPConnection {
    let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
    let reader = NIOLoopBoundBox.makeBoxSendingValue(ResponseReader(), eventLoop: eventLoop)
    let channel = try await ClientBootstrap(group: eventLoop)
      .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(reader.value) }
      }
      .connect(host: "127.0.0.1", port: port).get()
    return LeanHTTPConnection(channel: channel, reader: reader)
  }

  /// Sends `request` (a whole HTTP/1.1 request) and returns the answer's status code once the answer is complete.
  /// One request at a time per connection: the next one is sent after this one's answer.
  func send(_ request: ByteBuffer) async throws -> Int {
    let answer = channel.eventLoop.makePromise(of: Int.self)
    let (channel, reader) = (self.channel, self.reader)
    channel.eventLoop.execute {
      reader.value.expect(answer)
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
  private final class ResponseReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private var waiting: EventLoopPromise<Int>?
    private var received = ByteBuffer()

    func expect(_ answer: EventLoopPromise<Int>) { waiting = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      var bytes = unwrapInboundIn(data)
      received.writeBuffer(&bytes)
      let answer: (status: Int, length: Int)?
      do {
        answer = try received.withUnsafeReadableBytes(Self.frame)
      } catch {
        errorCaught(context: context, error: error)
        return
      }
      guard let answer, received.readableBytes >= answer.length else { return }
      received.moveReaderIndex(forwardBy: answer.length)
      received.discardReadBytes()
      let promise = waiting
      waiting = nil
      promise?.succeed(answer.status)
    }

    /// An answer this reader can't frame.
    struct FramingError: Error, CustomStringConvertible {
      let description: String
    }

    private static let contentLength = Array("content-length:".utf8)

    /// The status and the whole length (head and body) of the answer `bytes` start with, once its head is complete
    /// (nil before): the status line's code and the `Content-Length` field, read from the bytes without making
    /// strings.
    /// - Throws: ``FramingError`` for a head without `HTTP/1.x nnn` or without `Content-Length`.
    static func frame(_ bytes: UnsafeRawBufferPointer) throws -> (status: Int, length: Int)? {
      let (cr, lf, space, tab): (UInt8, UInt8, UInt8, UInt8) = (13, 10, 32, 9)
      guard bytes.count >= 4,
        let headEnd = (0...(bytes.count - 4)).first(where: { index in
          bytes[index] == cr && bytes[index + 1] == lf && bytes[index + 2] == cr && bytes[index + 3] == lf
        })
      else { return nil }
      let isDigit = { (byte: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
      /// The decimal number at `start` after optional whitespace, and how many digits it has.
      func number(from start: Int) -> (value: Int, digits: Int) {
        var (value, index) = (0, start)
        while index < headEnd, bytes[index] == space || bytes[index] == tab { index += 1 }
        let first = index
        while index < headEnd, index - first < 18, isDigit(bytes[index]) {
          value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
          index += 1
        }
        return (value, index - first)
      }
      // "HTTP/1.1 200 OK": the version, a space, three digits.
      let status = number(from: 9)
      guard headEnd >= 12, zip(bytes[0..<7], "HTTP/1.".utf8).allSatisfy(==), bytes[8] == space, status.digits == 3
      else {
        throw FramingError(description: "the answer does not start with a status line")
      }
      var bodyLength: Int?
      var lineStart = 0
      while lineStart < headEnd {
        let field = Self.contentLength
        // ASCII letters fold to lower case by setting 0x20; the field's other bytes ('-', ':') must match as they are.
        let matches =
          lineStart + field.count <= headEnd
          && field.indices.allSatisfy { offset in
            let byte = bytes[lineStart + offset]
            return byte == field[offset]
              || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") && byte | 0x20 == field[offset])
          }
        if matches { bodyLength = number(from: lineStart + field.count).value }
        while lineStart < headEnd, bytes[lineStart] != lf { lineStart += 1 }
        lineStart += 1
      }
      guard let bodyLength else { throw FramingError(description: "the answer has no Content-Length") }
      return (status.value, headEnd + 4 + bodyLength)
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

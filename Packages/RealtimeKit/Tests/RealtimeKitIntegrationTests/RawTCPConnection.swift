import NIOCore
import NIOPosix

/// A plain TCP connection to the test server, for bytes that an HTTP or WebSocket client would refuse to send. What
/// the server sends is recorded on the channel's event loop; the test polls it. The connection stays open after the
/// server's end of stream, as a careless or hostile client's would, until ``close()``.
struct RawTCPConnection: Sendable {
  let channel: any Channel
  private let recorder: NIOLoopBound<Recorder>

  /// What the server has sent so far, whether it has ended its stream, and whether the connection is gone.
  struct Snapshot: Sendable {
    var bytes: [UInt8]
    var ended: Bool
    var closed: Bool
    var text: String { String(decoding: bytes, as: UTF8.self) }
  }

  static func open(port: Int) async throws -> RawTCPConnection {
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Recorder()) }
      }
      .connect(host: "127.0.0.1", port: port)
      .get()
    let recorder = try await channel.eventLoop.submit {
      NIOLoopBound(try channel.pipeline.syncOperations.handler(type: Recorder.self), eventLoop: channel.eventLoop)
    }.get()
    return RawTCPConnection(channel: channel, recorder: recorder)
  }

  func send(_ text: String) async throws {
    try await send(Array(text.utf8))
  }

  func send(_ bytes: [UInt8]) async throws {
    try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
  }

  func snapshot() async throws -> Snapshot {
    try await channel.eventLoop.submit { [recorder] in
      Snapshot(bytes: recorder.value.bytes, ended: recorder.value.ended, closed: recorder.value.closed)
    }.get()
  }

  /// Polls until `predicate` holds or `timeout` passes; returns the last snapshot.
  func wait(
    upTo timeout: Duration = .seconds(3), until predicate: @Sendable (Snapshot) -> Bool
  ) async throws -> Snapshot {
    let deadline = ContinuousClock.now + timeout
    var snapshot = try await snapshot()
    while !predicate(snapshot), ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(10))
      snapshot = try await self.snapshot()
    }
    return snapshot
  }

  /// Waits for the server to end its stream (or the connection to go), for at most `timeout`.
  func waitForEnd(upTo timeout: Duration = .seconds(3)) async throws -> Snapshot {
    try await wait(upTo: timeout) { $0.ended || $0.closed }
  }

  /// Whether the server closes its socket within `timeout`, although this side stays open: sends a byte every 50 ms
  /// until the server's socket, once closed, answers with a reset.
  func waitUntilReleased(upTo timeout: Duration = .seconds(3)) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      if try await snapshot().closed { return true }
      try? await send("\r\n")
      try await Task.sleep(for: .milliseconds(50))
    }
    return try await snapshot().closed
  }

  func close() async {
    try? await channel.close()
  }

  final class Recorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var bytes: [UInt8] = []
    var ended = false
    var closed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      bytes += unwrapInboundIn(data).readableBytesView
    }

    func channelInactive(context: ChannelHandlerContext) {
      closed = true
      context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
      if let event = event as? ChannelEvent, event == .inputClosed { ended = true }
      context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
      context.close(promise: nil)
    }
  }
}

/// A masked client text frame (RFC 6455 §5.2), for writing WebSocket bytes by hand.
func maskedTextFrame(_ text: String) -> [UInt8] {
  let payload = Array(text.utf8)
  var frame: [UInt8] = [0x81]
  if payload.count < 126 {
    frame.append(0x80 | UInt8(payload.count))
  } else {
    frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
  }
  let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
  frame += mask
  frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
  return frame
}

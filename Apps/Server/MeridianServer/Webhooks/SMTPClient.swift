import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Why an email was not sent: the step, and the server's reply or what went wrong.
struct SMTPError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The step (`connect`, `greeting`, `EHLO`, `STARTTLS`, `AUTH`, `MAIL FROM`, `RCPT TO`, `DATA`, `message`).
  var step: String
  /// The server's reply code, when it answered.
  var code: Int?
  /// The reply's text, or what happened.
  var reason: String

  var description: String {
    "SMTP \(step): " + (code.map { "answered \($0) \(reason)" } ?? reason)
  }
}

/// One SMTP reply: its code and its lines' texts.
struct SMTPReply: Sendable, Hashable {
  var code: Int
  var lines: [String]
}

/// Sends one email per session to the operator's SMTP server (RFC 5321) on SwiftNIO: greeting, EHLO, STARTTLS when
/// the server offers it (``SMTPSettings/StartTLS``), AUTH PLAIN when configured (only over TLS), MAIL FROM, RCPT TO,
/// DATA with the message dot-stuffed, QUIT. Every step — connecting, and each command until its reply — has
/// ``SMTPSettings/stepTimeout``, and the whole session `deadline`: past either the connection is closed and the
/// session fails with the step it was in.
struct SMTPClient: Sendable {
  let settings: SMTPSettings
  /// The end of the whole session.
  let deadline: ContinuousClock.Instant
  /// The name this client gives in EHLO.
  var clientName = "meridian.invalid"

  /// Sends `email`; returns the server's reply code to its DATA (250).
  /// - Throws: ``SMTPError``.
  func send(_ email: AlertEmail) async throws -> Int {
    let session = try await Session.connect(settings, deadline: deadline)
    do {
      let code = try await session.send(email, settings: settings, clientName: clientName)
      await session.close()
      return code
    } catch {
      await session.close()
      throw error
    }
  }

  /// `message` as DATA's content: bare CR and LF become CRLF, a line starting with "." gets another (RFC 5321
  /// §4.5.2), and it ends with CRLF "." CRLF.
  static func dotStuffed(_ message: String) -> String {
    let lines = message.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
      .split(separator: "\n", omittingEmptySubsequences: false)
    var body = lines.map { $0.hasPrefix(".") ? "." + $0 : String($0) }
    if body.last == "" { body.removeLast() }
    return body.map { $0 + "\r\n" }.joined() + ".\r\n"
  }

  /// One connection: replies arrive on `replies`, each step bounded by a timer that closes the channel.
  private final class Session: Sendable {
    let channel: any Channel
    let replies: AsyncThrowingStream<SMTPReply, any Error>
    let deadline: ContinuousClock.Instant
    let stepTimeout: Duration
    let host: String

    private init(
      channel: any Channel, replies: AsyncThrowingStream<SMTPReply, any Error>, settings: SMTPSettings,
      deadline: ContinuousClock.Instant
    ) {
      self.channel = channel
      self.replies = replies
      self.deadline = deadline
      self.stepTimeout = settings.stepTimeout
      self.host = settings.host
    }

    static func connect(_ settings: SMTPSettings, deadline: ContinuousClock.Instant) async throws -> Session {
      let (replies, continuation) = AsyncThrowingStream.makeStream(of: SMTPReply.self)
      let timeout = min(settings.stepTimeout, deadline - .now)
      let channel: any Channel
      do {
        channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
          .connectTimeout(.nanoseconds(nanoseconds(max(timeout, .milliseconds(1)))))
          .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
              try channel.pipeline.syncOperations.addHandler(SMTPReplyDecoder(continuation))
            }
          }
          .connect(host: settings.host, port: settings.port).get()
      } catch {
        throw SMTPError(step: "connect", reason: "\(settings.host):\(settings.port): \(error)")
      }
      return Session(channel: channel, replies: replies, settings: settings, deadline: deadline)
    }

    /// The whole exchange after connecting.
    func send(_ email: AlertEmail, settings: SMTPSettings, clientName: String) async throws -> Int {
      var iterator = replies.makeAsyncIterator()
      try await step("greeting", expect: 220, &iterator)
      var extensions = try await step("EHLO", "EHLO \(clientName)", expect: 250, &iterator).lines.dropFirst()
        .map { $0.uppercased() }
      var secure = false
      let offered = extensions.contains { $0 == "STARTTLS" || $0.hasPrefix("STARTTLS ") }
      if settings.startTLS == .required && !offered {
        throw SMTPError(step: "STARTTLS", reason: "required, but the server does not offer it")
      }
      if offered && settings.startTLS != .never {
        try await step("STARTTLS", "STARTTLS", expect: 220, &iterator)
        try await startTLS()
        secure = true
        extensions = try await step("EHLO", "EHLO \(clientName)", expect: 250, &iterator).lines.dropFirst()
          .map { $0.uppercased() }
      }
      if let username = settings.username, let password = settings.password {
        guard secure else {
          throw SMTPError(step: "AUTH", reason: "credentials are sent only over TLS, and the server offers no STARTTLS")
        }
        let token = Data(("\0" + username + "\0" + password).utf8).base64EncodedString()
        try await step("AUTH", "AUTH PLAIN " + token, expect: 235, &iterator)
      }
      try await step("MAIL FROM", "MAIL FROM:<\(email.from)>", expect: 250, &iterator)
      try await step("RCPT TO", "RCPT TO:<\(email.to)>", expect: 250...251, &iterator)
      try await step("DATA", "DATA", expect: 354, &iterator)
      let accepted = try await step(
        "message", SMTPClient.dotStuffed(email.message), raw: true, expect: 250, &iterator)
      _ = try? await step("QUIT", "QUIT", expect: 221, &iterator)
      return accepted.code
    }

    /// Writes `command` (with CRLF, unless `raw`) and awaits the reply, within the step's deadline; a reply other
    /// than `expect` is an ``SMTPError``.
    @discardableResult
    func step(
      _ name: String, _ command: String? = nil, raw: Bool = false, expect: ClosedRange<Int>,
      _ iterator: inout AsyncThrowingStream<SMTPReply, any Error>.AsyncIterator
    ) async throws -> SMTPReply {
      let timeout = min(stepTimeout, deadline - .now)
      guard timeout > .zero else { throw SMTPError(step: name, reason: "the session's deadline passed") }
      let channel = channel
      let timedOut = Flag()
      let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Self.nanoseconds(timeout))) {
        timedOut.value.withLock { $0 = true }
        channel.close(promise: nil)
      }
      defer { timer.cancel() }
      let reply: SMTPReply?
      do {
        if let command {
          var buffer = channel.allocator.buffer(capacity: command.utf8.count + 2)
          buffer.writeString(raw ? command : command + "\r\n")
          try await channel.writeAndFlush(buffer)
        }
        reply = try await iterator.next()
      } catch {
        if timedOut.value.withLock({ $0 }) { throw SMTPError(step: name, reason: "no answer within \(timeout)") }
        throw SMTPError(step: name, reason: "\(error)")
      }
      guard let reply else {
        if timedOut.value.withLock({ $0 }) { throw SMTPError(step: name, reason: "no answer within \(timeout)") }
        throw SMTPError(step: name, reason: "the server closed the connection")
      }
      guard expect.contains(reply.code) else {
        throw SMTPError(step: name, code: reply.code, reason: reply.lines.joined(separator: " "))
      }
      return reply
    }

    func step(
      _ name: String, _ command: String? = nil, raw: Bool = false, expect: Int,
      _ iterator: inout AsyncThrowingStream<SMTPReply, any Error>.AsyncIterator
    ) async throws -> SMTPReply {
      try await step(name, command, raw: raw, expect: expect...expect, &iterator)
    }

    /// Puts TLS (the system's trust roots, the host name verified) under the reply decoder.
    func startTLS() async throws {
      let host = host
      let channel = channel
      do {
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        try await channel.eventLoop.submit {
          let handler = try NIOSSLClientHandler(context: context, serverHostname: Self.isAddress(host) ? nil : host)
          try channel.pipeline.syncOperations.addHandler(handler, position: .first)
        }.get()
      } catch {
        throw SMTPError(step: "STARTTLS", reason: "\(error)")
      }
    }

    func close() async {
      try? await channel.close()
    }

    /// Whether a step's timer fired, shared with it.
    final class Flag: Sendable {
      let value = Mutex(false)
    }

    static func isAddress(_ host: String) -> Bool {
      host.contains(":") || host.split(separator: ".").allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
      let parts = duration.components
      return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }
  }
}

/// Splits the server's bytes into replies (RFC 5321 §4.2: `250-…` lines continue, `250 …` ends one) for the
/// session's stream; a line longer than 4,096 bytes, or one without a code, ends the stream with an error.
private final class SMTPReplyDecoder: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer

  let continuation: AsyncThrowingStream<SMTPReply, any Error>.Continuation
  var pending = ByteBuffer()
  var lines: [String] = []

  init(_ continuation: AsyncThrowingStream<SMTPReply, any Error>.Continuation) {
    self.continuation = continuation
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    var bytes = unwrapInboundIn(data)
    pending.writeBuffer(&bytes)
    while let end = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
      let length = end - pending.readerIndex
      guard var line = pending.readString(length: length) else { break }
      pending.moveReaderIndex(forwardBy: 1)
      if line.hasSuffix("\r") { line.removeLast() }
      let scalars = Array(line.utf8)
      guard scalars.count >= 3, let code = Int(String(decoding: scalars.prefix(3), as: UTF8.self)),
        scalars.count == 3 || scalars[3] == UInt8(ascii: " ") || scalars[3] == UInt8(ascii: "-")
      else {
        fail(context, "a reply without a code: \(line.prefix(80))")
        return
      }
      lines.append(String(decoding: scalars.dropFirst(4), as: UTF8.self))
      if scalars.count == 3 || scalars[3] == UInt8(ascii: " ") {
        continuation.yield(SMTPReply(code: code, lines: lines))
        lines = []
      }
    }
    if pending.readableBytes > 4096 { fail(context, "a reply line longer than 4,096 bytes") }
    pending.discardReadBytes()
  }

  func channelInactive(context: ChannelHandlerContext) {
    continuation.finish()
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    continuation.finish(throwing: error)
    context.close(promise: nil)
  }

  private func fail(_ context: ChannelHandlerContext, _ reason: String) {
    continuation.finish(throwing: SMTPError(step: "reply", reason: reason))
    context.close(promise: nil)
  }
}

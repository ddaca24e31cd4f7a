import Foundation

/// Why a message could not be decoded; maps onto an `error` message or a close.
public struct RealtimeDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The `error` code to answer with (`bad_frame`, `unknown_type` or `invalid_channel`).
  public var code: RealtimeErrorCode
  /// What was wrong.
  public var message: String
  /// The message's `id`, when it could be read.
  public var id: String?
  /// The message's `channel`, when it could be read.
  public var channel: String?
  /// Whether the message exceeded the size limit; the connection is then closed with ``RealtimeCloseCode/messageTooBig``.
  public var isTooLarge: Bool

  /// Creates a decoding error.
  public init(
    code: RealtimeErrorCode, message: String, id: String? = nil, channel: String? = nil, isTooLarge: Bool = false
  ) {
    self.code = code
    self.message = message
    self.id = id
    self.channel = channel
    self.isTooLarge = isTooLarge
  }

  /// The `error` message that answers this failure.
  public var errorFrame: RealtimeError { RealtimeError(code: code, message: message, id: id, channel: channel) }

  /// `code: message`.
  public var description: String { "\(code): \(message)" }
}

/// The strict JSON codec of `meridian.v1`: one JSON object per message, unknown `type`s and malformed fields are
/// reported as errors, never as crashes.
public enum RealtimeCodec {
  // MARK: Client → server

  /// Decodes a client message, rejecting messages over `maxBytes`.
  public static func decodeClientFrame(_ text: String, maxBytes: Int = RealtimeLimits().maxFrameBytes)
    throws(RealtimeDecodingError) -> ClientFrame
  {
    let object = try parseObject(text, maxBytes: maxBytes)
    let type = try object.string("type")
    switch type {
    case "hello":
      let client = object.members["client"]
      guard case .object(let clientMembers)? = client else {
        throw RealtimeDecodingError(
          code: .badFrame, message: "hello needs an object `client` with `name` and `version`")
      }
      let clientObject = Members(members: clientMembers, type: "hello.client")
      var resume: [SubscribeRequest] = []
      if let entries = object.members["resume"], entries != .null {
        guard case .array(let values) = entries else {
          throw RealtimeDecodingError(code: .badFrame, message: "hello.resume must be an array")
        }
        for value in values {
          guard case .object(let members) = value else {
            throw RealtimeDecodingError(code: .badFrame, message: "hello.resume entries must be objects")
          }
          resume.append(try subscribeRequest(Members(members: members, type: "hello.resume")))
        }
      }
      return .hello(
        Hello(
          token: try object.string("token"),
          clientName: try clientObject.string("name", maxLength: 64),
          clientVersion: try clientObject.string("version", maxLength: 64),
          resume: resume
        )
      )
    case "subscribe":
      return .subscribe(try subscribeRequest(object))
    case "unsubscribe":
      return .unsubscribe(try object.channel())
    case "publish":
      let id = try object.string("id", maxLength: 64)
      guard !id.isEmpty else { throw RealtimeDecodingError(code: .badFrame, message: "publish.id must not be empty") }
      let channel: ChannelName
      do {
        channel = try object.channel()
      } catch {
        var error = error
        error.id = id
        throw error
      }
      guard let payload = object.members["payload"] else {
        throw RealtimeDecodingError(code: .badFrame, message: "publish needs a `payload`", id: id)
      }
      return .publish(PublishRequest(id: id, channel: channel, payload: payload))
    case "ping":
      return .ping
    default:
      throw RealtimeDecodingError(code: .unknownType, message: "unknown message type `\(type.prefix(64))`")
    }
  }

  /// Encodes a client message as JSON text.
  public static func encode(_ frame: ClientFrame) -> String {
    var members: [String: JSONValue] = ["type": .string(frame.type)]
    switch frame {
    case .hello(let hello):
      members["token"] = .string(hello.token)
      members["client"] = ["name": .string(hello.clientName), "version": .string(hello.clientVersion)]
      if !hello.resume.isEmpty { members["resume"] = .array(hello.resume.map { .object(subscribeMembers($0)) }) }
    case .subscribe(let request):
      members.merge(subscribeMembers(request)) { _, new in new }
    case .unsubscribe(let channel):
      members["channel"] = .string(channel.rawValue)
    case .publish(let request):
      members["id"] = .string(request.id)
      members["channel"] = .string(request.channel.rawValue)
      members["payload"] = request.payload
    case .ping:
      break
    }
    return JSONValue.object(members).jsonText
  }

  // MARK: Server → client

  /// Decodes a server message; an unknown `type` throws with code `unknown_type`, which clients ignore.
  public static func decodeServerFrame(_ text: String, maxBytes: Int = 16 << 20) throws(RealtimeDecodingError)
    -> ServerFrame
  {
    let object = try parseObject(text, maxBytes: maxBytes)
    let type = try object.string("type")
    switch type {
    case "welcome":
      guard case .object(let limitMembers)? = object.members["limits"] else {
        throw RealtimeDecodingError(code: .badFrame, message: "welcome needs an object `limits`")
      }
      let limits = Members(members: limitMembers, type: "welcome.limits")
      return .welcome(
        Welcome(
          session: try object.string("session"),
          serverTime: try object.int("serverTime"),
          heartbeatMilliseconds: Int(try object.int("heartbeatMs")),
          heartbeatTimeoutMilliseconds: Int(try object.int("heartbeatTimeoutMs")),
          limits: RealtimeLimits(
            maxFrameBytes: Int(try limits.int("maxFrameBytes")),
            maxSubscriptions: Int(try limits.int("maxSubscriptions")),
            publishPerSecond: Int(try limits.int("publishPerSecond")),
            publishBurst: Int(try limits.int("publishBurst"))
          )
        )
      )
    case "subscribed", "reload":
      let position = ChannelPosition(
        channel: try object.channel(),
        offset: try object.offset("offset"),
        epoch: try object.string("epoch")
      )
      return type == "subscribed" ? .subscribed(position) : .reload(position)
    case "event":
      return .event(
        RealtimeEvent(
          channel: try object.channel(),
          offset: try object.offset("offset"),
          time: try object.int("time"),
          payload: object.members["payload"] ?? .null
        )
      )
    case "ack":
      return .ack(
        PublishAck(id: try object.string("id"), channel: try object.channel(), offset: try object.offset("offset")))
    case "unsubscribed":
      let reason = UnsubscribeReason(rawValue: try object.string("reason")) ?? .revoked
      return .unsubscribed(try object.channel(), reason: reason)
    case "error":
      return .error(
        RealtimeError(
          code: RealtimeErrorCode(rawValue: try object.string("code")),
          message: (try? object.string("message")) ?? "",
          fatal: object.members["fatal"] == .bool(true),
          id: object.members["id"]?.stringValue,
          channel: object.members["channel"]?.stringValue
        )
      )
    case "pong":
      return .pong(time: (try? object.int("time")) ?? 0)
    default:
      throw RealtimeDecodingError(code: .unknownType, message: "unknown message type `\(type.prefix(64))`")
    }
  }

  /// Encodes a server message as JSON text.
  public static func encode(_ frame: ServerFrame) -> String {
    var members: [String: JSONValue] = ["type": .string(frame.type)]
    switch frame {
    case .welcome(let welcome):
      members["session"] = .string(welcome.session)
      members["serverTime"] = .int(welcome.serverTime)
      members["heartbeatMs"] = .int(Int64(welcome.heartbeatMilliseconds))
      members["heartbeatTimeoutMs"] = .int(Int64(welcome.heartbeatTimeoutMilliseconds))
      members["limits"] = [
        "maxFrameBytes": .int(Int64(welcome.limits.maxFrameBytes)),
        "maxSubscriptions": .int(Int64(welcome.limits.maxSubscriptions)),
        "publishPerSecond": .int(Int64(welcome.limits.publishPerSecond)),
        "publishBurst": .int(Int64(welcome.limits.publishBurst)),
      ]
    case .subscribed(let position), .reload(let position):
      members["channel"] = .string(position.channel.rawValue)
      members["offset"] = .int(Int64(position.offset))
      members["epoch"] = .string(position.epoch)
    case .event(let event):
      return encodeEvent(
        channel: event.channel, offset: event.offset, time: event.time, payloadJSON: event.payload.jsonText)
    case .ack(let ack):
      members["id"] = .string(ack.id)
      members["channel"] = .string(ack.channel.rawValue)
      members["offset"] = .int(Int64(ack.offset))
    case .unsubscribed(let channel, let reason):
      members["channel"] = .string(channel.rawValue)
      members["reason"] = .string(reason.rawValue)
    case .error(let error):
      members["code"] = .string(error.code.rawValue)
      members["message"] = .string(error.message)
      members["fatal"] = .bool(error.fatal)
      if let id = error.id { members["id"] = .string(id) }
      if let channel = error.channel { members["channel"] = .string(channel) }
    case .pong(let time):
      members["time"] = .int(time)
    }
    return JSONValue.object(members).jsonText
  }

  /// Encodes an `event` around an already-serialized payload, so a fan-out serializes each payload once.
  public static func encodeEvent(channel: ChannelName, offset: UInt64, time: RealtimeTimestamp, payloadJSON: String)
    -> String
  {
    var output = ""
    // The whole event at once: growing the text while appending would copy it several times.
    output.reserveCapacity(payloadJSON.utf8.count + channel.rawValue.utf8.count + 96)
    output += "{\"channel\":"
    JSONValue.writeString(channel.rawValue, to: &output)
    output += ",\"offset\":\(offset),\"payload\":"
    output += payloadJSON
    output += ",\"time\":\(time),\"type\":\"event\"}"
    return output
  }

  // MARK: Helpers

  struct Members {
    var members: [String: JSONValue]
    var type: String

    func string(_ key: String, maxLength: Int = 4096) throws(RealtimeDecodingError) -> String {
      guard case .string(let value)? = members[key] else {
        throw RealtimeDecodingError(code: .badFrame, message: "\(type) needs a string `\(key)`", channel: channelText)
      }
      guard value.count <= maxLength else {
        throw RealtimeDecodingError(
          code: .badFrame,
          message: "\(type).\(key) is longer than \(maxLength) characters",
          channel: channelText
        )
      }
      return value
    }

    func int(_ key: String) throws(RealtimeDecodingError) -> Int64 {
      guard let value = members[key]?.intValue else {
        throw RealtimeDecodingError(code: .badFrame, message: "\(type) needs an integer `\(key)`", channel: channelText)
      }
      return value
    }

    func offset(_ key: String) throws(RealtimeDecodingError) -> UInt64 {
      let value = try int(key)
      guard value >= 0 else {
        throw RealtimeDecodingError(
          code: .badFrame, message: "\(type).\(key) must not be negative", channel: channelText)
      }
      return UInt64(value)
    }

    var channelText: String? { members["channel"]?.stringValue.map { String($0.prefix(200)) } }

    func channel() throws(RealtimeDecodingError) -> ChannelName {
      guard case .string(let raw)? = members["channel"] else {
        throw RealtimeDecodingError(code: .badFrame, message: "\(type) needs a string `channel`")
      }
      guard let channel = ChannelName(raw) else {
        throw RealtimeDecodingError(
          code: .invalidChannel,
          message: "`\(raw.prefix(200))` is not a channel name (<namespace>:<id>)",
          channel: String(raw.prefix(200))
        )
      }
      return channel
    }
  }

  static func parseObject(_ text: String, maxBytes: Int) throws(RealtimeDecodingError) -> Members {
    let count = text.utf8.count
    guard count <= maxBytes else {
      throw RealtimeDecodingError(
        code: .badFrame,
        message: "message of \(count) bytes exceeds the limit of \(maxBytes)",
        isTooLarge: true
      )
    }
    guard case .object(let members) = try JSONValue.parse(Data(text.utf8)) else {
      throw RealtimeDecodingError(code: .badFrame, message: "a message must be a JSON object")
    }
    guard case .string(let type)? = members["type"] else {
      throw RealtimeDecodingError(code: .badFrame, message: "a message needs a string `type`")
    }
    return Members(members: members, type: type)
  }

  static func subscribeRequest(_ object: Members) throws(RealtimeDecodingError) -> SubscribeRequest {
    let channel = try object.channel()
    let hasOffset = object.members["offset"].map { $0 != .null } ?? false
    guard hasOffset else { return SubscribeRequest(channel: channel) }
    return SubscribeRequest(
      channel: channel,
      resume: ResumePosition(offset: try object.offset("offset"), epoch: try object.string("epoch", maxLength: 64))
    )
  }

  static func subscribeMembers(_ request: SubscribeRequest) -> [String: JSONValue] {
    var members: [String: JSONValue] = ["channel": .string(request.channel.rawValue)]
    if let resume = request.resume {
      members["offset"] = .int(Int64(resume.offset))
      members["epoch"] = .string(resume.epoch)
    }
    return members
  }
}

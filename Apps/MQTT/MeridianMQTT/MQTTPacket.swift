/// The control packets of MQTT 3.1.1 (OASIS Standard, 29 October 2014) a client needs: connecting with a user name,
/// password and clean-session flag, subscribing, publishing at QoS 0 and 1 in both directions, keep-alive and
/// disconnecting. QoS 2 (PUBREC, PUBREL, PUBCOMP) and UNSUBSCRIBE are not spoken: a client that never asks for QoS 2
/// never receives it (the server downgrades to the subscription's QoS, §3.8.4).
public enum MQTTPacket: Sendable, Hashable {
  /// CONNECT (§3.1), the first packet a client sends.
  case connect(MQTTConnect)
  /// CONNACK (§3.2): whether the server kept a session for the client, and its verdict.
  case connectAcknowledgement(sessionPresent: Bool, returnCode: MQTTConnectReturnCode)
  /// PUBLISH (§3.3), in either direction.
  case publish(MQTTPublish)
  /// PUBACK (§3.4): the receiver of a QoS 1 PUBLISH took responsibility for it.
  case publishAcknowledgement(packetIdentifier: UInt16)
  /// SUBSCRIBE (§3.8): topic filters and the highest QoS wanted on each.
  case subscribe(packetIdentifier: UInt16, subscriptions: [MQTTSubscription])
  /// SUBACK (§3.9): one return code per filter, the QoS granted (0, 1, 2) or 0x80 for a failure.
  case subscribeAcknowledgement(packetIdentifier: UInt16, returnCodes: [UInt8])
  /// PINGREQ (§3.12).
  case pingRequest
  /// PINGRESP (§3.13).
  case pingResponse
  /// DISCONNECT (§3.14): the client closes cleanly (the server discards its will).
  case disconnect

  /// The control packet type of the fixed header (§2.2.1, table 2.1).
  public var type: UInt8 {
    switch self {
    case .connect: 1
    case .connectAcknowledgement: 2
    case .publish: 3
    case .publishAcknowledgement: 4
    case .subscribe: 8
    case .subscribeAcknowledgement: 9
    case .pingRequest: 12
    case .pingResponse: 13
    case .disconnect: 14
    }
  }
}

/// The quality of service of a message (§4.3).
public enum MQTTQoS: UInt8, Sendable, Hashable, Comparable {
  /// At most once: no acknowledgement.
  case atMostOnce = 0
  /// At least once: the receiver answers PUBACK; the sender delivers again until it does.
  case atLeastOnce = 1
  /// Exactly once (recognised in packets, not spoken by this client).
  case exactlyOnce = 2

  public static func < (lhs: MQTTQoS, rhs: MQTTQoS) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The fields of a CONNECT packet (§3.1).
public struct MQTTConnect: Sendable, Hashable {
  /// The client identifier (§3.1.3.1): with `cleanSession` false the broker keeps the session under it.
  public var clientIdentifier: String
  /// Whether the broker discards any session of this client identifier and keeps none after it (§3.1.2.4).
  public var cleanSession: Bool
  /// The longest silence in seconds before the broker closes the connection (times 1.5); 0 turns it off.
  public var keepAliveSeconds: UInt16
  /// The user name, if any.
  public var username: String?
  /// The password, if any (binary data in 3.1.1; only with a user name).
  public var password: [UInt8]?
  /// The message the broker publishes when the connection ends without DISCONNECT.
  public var will: MQTTPublish?

  /// A CONNECT.
  public init(
    clientIdentifier: String, cleanSession: Bool, keepAliveSeconds: UInt16, username: String? = nil,
    password: [UInt8]? = nil, will: MQTTPublish? = nil
  ) {
    self.clientIdentifier = clientIdentifier
    self.cleanSession = cleanSession
    self.keepAliveSeconds = keepAliveSeconds
    self.username = username
    self.password = password
    self.will = will
  }
}

/// The verdict of a CONNACK (§3.2.2.3, table 3.1).
public enum MQTTConnectReturnCode: Sendable, Hashable {
  /// 0: connection accepted.
  case accepted
  /// 1: the server does not speak the protocol level asked.
  case unacceptableProtocolVersion
  /// 2: the client identifier is not allowed.
  case identifierRejected
  /// 3: the MQTT service is unavailable.
  case serverUnavailable
  /// 4: the user name or password is malformed or wrong.
  case badUsernameOrPassword
  /// 5: the client is not authorized to connect.
  case notAuthorized
  /// 6–255: reserved.
  case reserved(UInt8)

  /// The code's byte.
  public var rawValue: UInt8 {
    switch self {
    case .accepted: 0
    case .unacceptableProtocolVersion: 1
    case .identifierRejected: 2
    case .serverUnavailable: 3
    case .badUsernameOrPassword: 4
    case .notAuthorized: 5
    case .reserved(let code): code
    }
  }

  /// The code of a byte.
  public init(rawValue: UInt8) {
    switch rawValue {
    case 0: self = .accepted
    case 1: self = .unacceptableProtocolVersion
    case 2: self = .identifierRejected
    case 3: self = .serverUnavailable
    case 4: self = .badUsernameOrPassword
    case 5: self = .notAuthorized
    default: self = .reserved(rawValue)
    }
  }
}

/// An application message (§3.3).
public struct MQTTPublish: Sendable, Hashable {
  /// The topic name (no wildcards).
  public var topic: String
  /// The payload, opaque to MQTT.
  public var payload: [UInt8]
  /// The quality of service.
  public var qos: MQTTQoS
  /// Whether the broker keeps it as the topic's last message for future subscribers.
  public var retain: Bool
  /// Whether this is a redelivery of a message sent before (QoS > 0 only).
  public var duplicate: Bool
  /// The packet identifier (present exactly when QoS > 0).
  public var packetIdentifier: UInt16?

  /// A message; give `packetIdentifier` when `qos` is above 0.
  public init(
    topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false, duplicate: Bool = false,
    packetIdentifier: UInt16? = nil
  ) {
    self.topic = topic
    self.payload = payload
    self.qos = qos
    self.retain = retain
    self.duplicate = duplicate
    self.packetIdentifier = packetIdentifier
  }
}

/// One topic filter of a SUBSCRIBE and the highest QoS wanted on it (§3.8.3).
public struct MQTTSubscription: Sendable, Hashable {
  /// The filter, with `+` and `#` wildcards.
  public var topicFilter: String
  /// The highest QoS the broker may deliver with.
  public var qos: MQTTQoS

  /// A subscription.
  public init(_ topicFilter: String, qos: MQTTQoS) {
    self.topicFilter = topicFilter
    self.qos = qos
  }
}

/// What is wrong with bytes that claim to be an MQTT packet; the connection that carried them is closed (§4.8).
public enum MQTTProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A remaining length of more than four bytes (§2.2.3).
  case malformedRemainingLength
  /// A packet longer than the receiver takes.
  case packetTooLarge(Int)
  /// A packet type this client does not speak, or a reserved one.
  case unsupportedPacketType(UInt8)
  /// Fixed-header flags the spec forbids for the type (§2.2.2).
  case invalidFlags(type: UInt8, flags: UInt8)
  /// A packet whose fields do not fill its remaining length exactly, or a string that is not UTF-8.
  case malformed(String)

  public var description: String {
    switch self {
    case .malformedRemainingLength: "the remaining length is longer than four bytes"
    case .packetTooLarge(let size): "a packet of \(size) bytes is larger than allowed"
    case .unsupportedPacketType(let type): "packet type \(type) is not supported"
    case .invalidFlags(let type, let flags): "flags \(flags) are invalid for packet type \(type)"
    case .malformed(let why): "malformed packet: \(why)"
    }
  }
}

import Foundation
import HTTPTypes

/// The body of a failure response, decoded so that ``ServerError`` can carry its code and message.
public protocol ErrorEnvelope: Decodable, Sendable {
  /// A stable, machine-readable code such as `token_invalid`.
  var code: String { get }
  /// A human-readable message.
  var message: String { get }
}

/// The default envelope: `{"error": {"code": "...", "message": "..."}}`. Servers encode it too.
public struct StandardErrorEnvelope: ErrorEnvelope, Codable, Hashable {
  /// The inner object.
  public struct Detail: Codable, Sendable, Hashable {
    /// The stable code.
    public var code: String
    /// The message.
    public var message: String
  }

  /// The `error` object.
  public var error: Detail

  /// Creates an envelope.
  public init(code: String, message: String) {
    self.error = Detail(code: code, message: message)
  }

  /// The stable code.
  public var code: String { error.code }
  /// The message.
  public var message: String { error.message }
}

/// A failure answered by the server: a non-2xx status, with the envelope's code and message when the body had one.
public struct ServerError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The status.
  public var status: HTTPResponse.Status
  /// The envelope's code, if the body was an envelope.
  public var code: String?
  /// The envelope's message, if the body was an envelope.
  public var message: String?
  /// How long the server asked the client to wait (`Retry-After`), if it did.
  public var retryAfter: Duration?

  /// Creates a server error.
  public init(status: HTTPResponse.Status, code: String? = nil, message: String? = nil, retryAfter: Duration? = nil) {
    self.status = status
    self.code = code
    self.message = message
    self.retryAfter = retryAfter
  }

  /// `HTTP 503 unavailable: Try again later`.
  public var description: String {
    var text = "HTTP \(status.code)"
    if let code { text += " \(code)" }
    if let message { text += ": \(message)" }
    return text
  }
}

/// A failure below HTTP: the request got no complete response.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What went wrong, as far as retrying and telling the user are concerned.
  public enum Kind: String, Sendable, Hashable {
    /// The host refused the connection: nothing listens there. Not retried; tell the user at once.
    case connectionRefused
    /// No route to the host, no network, or the name didn't resolve. Not retried; tell the user at once.
    case noNetwork
    /// The attempt's time ran out (connecting, waiting or reading). Retried.
    case timedOut
    /// The connection broke before the response was complete (reset, closed early). Retried.
    case connectionLost
    /// Anything else (TLS, a malformed response). Not retried.
    case other
  }

  /// The kind of failure.
  public var kind: Kind
  /// What the underlying library said.
  public var detail: String

  /// Creates a transport error.
  public init(_ kind: Kind, detail: String = "") {
    self.kind = kind
    self.detail = detail
  }

  /// Whether the user should be told at once that there is no connection (refused or no network).
  public var isUnreachable: Bool { kind == .connectionRefused || kind == .noNetwork }

  /// Whether another attempt may succeed (timeouts and lost connections).
  public var isRetryable: Bool { kind == .timedOut || kind == .connectionLost }

  /// `timedOut: <detail>`.
  public var description: String { detail.isEmpty ? kind.rawValue : "\(kind.rawValue): \(detail)" }
}

/// A response whose body didn't decode into the endpoint's type.
public struct ResponseDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The path of the field that failed, e.g. `fixes[3].lat` (empty for the root).
  public var fieldPath: String
  /// What was wrong there.
  public var reason: String
  /// The response status.
  public var status: HTTPResponse.Status

  /// Creates a decoding error.
  public init(fieldPath: String, reason: String, status: HTTPResponse.Status) {
    self.fieldPath = fieldPath
    self.reason = reason
    self.status = status
  }

  /// Makes a decoding error from whatever the decoder threw.
  public init(_ error: any Error, status: HTTPResponse.Status) {
    self.status = status
    guard let error = error as? DecodingError else {
      self.fieldPath = ""
      self.reason = String(describing: error)
      return
    }
    switch error {
    case .keyNotFound(let key, let context):
      self.fieldPath = Self.path(context.codingPath + [key])
      self.reason = "missing"
    case .typeMismatch(let type, let context):
      self.fieldPath = Self.path(context.codingPath)
      self.reason = "expected \(type): \(context.debugDescription)"
    case .valueNotFound(let type, let context):
      self.fieldPath = Self.path(context.codingPath)
      self.reason = "expected \(type), found null"
    case .dataCorrupted(let context):
      self.fieldPath = Self.path(context.codingPath)
      self.reason = context.debugDescription
    @unknown default:
      self.fieldPath = ""
      self.reason = String(describing: error)
    }
  }

  /// Renders a coding path as `fixes[3].lat`.
  public static func path(_ codingPath: [any CodingKey]) -> String {
    var result = ""
    for key in codingPath {
      if let index = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == String(index) {
        result += "[\(index)]"
      } else {
        if !result.isEmpty { result += "." }
        result += key.stringValue
      }
    }
    return result
  }

  /// `response field 'fixes[3].lat': expected Double ...`.
  public var description: String {
    "response field '\(fieldPath.isEmpty ? "<root>" : fieldPath)' (HTTP \(status.code)): \(reason)"
  }
}

/// Every failure ``NetworkClient`` reports.
public indirect enum NetworkingError: Error, Sendable, CustomStringConvertible {
  /// The server answered with a failure status (after any retries).
  case server(ServerError)
  /// The token is missing, invalid or expired (HTTP 401 or an envelope code such as `token_invalid`),
  /// and refreshing didn't help: sign in again.
  case unauthorized(ServerError)
  /// The success body didn't decode; the error names the field.
  case decoding(ResponseDecodingError)
  /// The request got no complete response (after any retries).
  case transport(TransportError)
  /// The host's retry budget is empty, so a retry was refused to spare an ailing server; `lastError` is what the
  /// last attempt got.
  case retryBudgetExhausted(host: String, lastError: NetworkingError)
  /// The overall deadline passed, or the next wait would have crossed it; `lastError` is what the last attempt got.
  case deadlineExceeded(lastError: NetworkingError?)
  /// The request couldn't be built (a body that doesn't encode, a bad base URL).
  case invalidRequest(String)
  /// The response (decompressed) was larger than the configured limit.
  case responseTooLarge(limit: Int)
  /// The response body was not valid for its `Content-Encoding`.
  case invalidContentEncoding(String)

  /// The server error behind this error, looking through budget and deadline wrappers.
  public var serverError: ServerError? {
    switch self {
    case .server(let error), .unauthorized(let error): error
    case .retryBudgetExhausted(_, let last): last.serverError
    case .deadlineExceeded(let last): last?.serverError
    default: nil
    }
  }

  /// The wait the server asked for with `Retry-After`, looking through budget and deadline wrappers. When the request
  /// ended because the wait was longer than ``RetryPolicy/maxRetryAfter``, this is the server's full requested wait
  /// (never shortened): schedule the request again after it.
  public var retryAfter: Duration? { serverError?.retryAfter }

  /// The transport error behind this error, looking through budget and deadline wrappers.
  public var transportError: TransportError? {
    switch self {
    case .transport(let error): error
    case .retryBudgetExhausted(_, let last): last.transportError
    case .deadlineExceeded(let last): last?.transportError
    default: nil
    }
  }

  /// A sentence for logs.
  public var description: String {
    switch self {
    case .server(let error): "server error \(error)"
    case .unauthorized(let error): "not signed in (\(error)); sign in again"
    case .decoding(let error): "could not decode \(error)"
    case .transport(let error) where error.isUnreachable: "server unreachable (\(error)); check the network"
    case .transport(let error): "connection failed (\(error))"
    case .retryBudgetExhausted(let host, let last): "retry budget for \(host) is empty; last error: \(last)"
    case .deadlineExceeded(let last): "deadline exceeded" + (last.map { "; last error: \($0)" } ?? "")
    case .invalidRequest(let reason): "invalid request: \(reason)"
    case .responseTooLarge(let limit): "response larger than \(limit) bytes"
    case .invalidContentEncoding(let reason): "invalid response encoding: \(reason)"
    }
  }
}

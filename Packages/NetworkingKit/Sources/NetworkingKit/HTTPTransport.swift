import Foundation
import HTTPTypes

/// Sends one HTTP request and returns its complete response. ``NetworkClient`` adds everything else
/// (retries, credentials, compression, decoding) on top of any transport.
///
/// Implementations throw ``TransportError`` for failures below HTTP, classifying them so that
/// "no network / refused" is told at once and "timed out / connection lost" is retried, and throw
/// `CancellationError` when the task is cancelled. They must not follow the body's `Content-Encoding`
/// unless ``decodesContentEncoding`` says so.
public protocol HTTPTransport: Sendable {
  /// Sends `request` with `body` and waits for the whole response, within `options.timeout`.
  func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> TransportResponse

  /// Whether the transport already decodes `Content-Encoding: gzip` (URLSession on Apple platforms does).
  var decodesContentEncoding: Bool { get }
}

extension HTTPTransport {
  /// Transports don't decode content encodings unless they say so.
  public var decodesContentEncoding: Bool { false }
}

/// Limits for one attempt.
public struct TransportOptions: Sendable, Hashable {
  /// The longest the attempt may take, from sending to the last byte of the response.
  public var timeout: Duration
  /// The largest body the transport accepts; more is ``NetworkingError/responseTooLarge(limit:)``.
  public var maxResponseBytes: Int

  /// Creates options.
  public init(timeout: Duration, maxResponseBytes: Int) {
    self.timeout = timeout
    self.maxResponseBytes = maxResponseBytes
  }
}

/// A complete response.
public struct TransportResponse: Sendable {
  /// The status and header fields.
  public var head: HTTPResponse
  /// The body as received (possibly compressed).
  public var body: Data

  /// Creates a response.
  public init(head: HTTPResponse, body: Data) {
    self.head = head
    self.body = body
  }

  /// Creates a response from a status, fields and body.
  public init(status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: Data = Data()) {
    self.head = HTTPResponse(status: status, headerFields: headerFields)
    self.body = body
  }
}

/// Thrown by a transport when a response is larger than ``TransportOptions/maxResponseBytes``.
public struct ResponseTooLargeError: Error, Sendable, Hashable {
  /// The limit that was exceeded.
  public var limit: Int
  /// Creates the error.
  public init(limit: Int) { self.limit = limit }
}

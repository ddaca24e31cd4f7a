import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import NetworkingKit

/// An ``HTTPTransport`` over AsyncHTTPClient, for Linux services and command-line tools.
///
/// ```swift
/// let transport = AsyncHTTPClientTransport()          // its own HTTPClient, shut down with shutdown()
/// let shared = AsyncHTTPClientTransport(client: .shared)  // or any client you own
/// ```
public struct AsyncHTTPClientTransport: HTTPTransport {
  /// The client requests go through.
  public let client: HTTPClient

  /// Uses `client` (which its owner shuts down).
  public init(client: HTTPClient) {
    self.client = client
  }

  /// Creates a transport with its own client, configured by ``makeConfiguration()``; call ``shutdown()`` when done.
  public init() {
    self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: Self.makeConfiguration())
  }

  /// The configuration this transport's own client uses: failed connection attempts aren't retried inside the
  /// connection pool, so that a refused connection is reported at once (``NetworkClient`` decides about retries),
  /// no redirects are followed silently for non-GET methods, and response bodies stay compressed (the client
  /// decodes them within its size limit).
  public static func makeConfiguration() -> HTTPClient.Configuration {
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool.retryConnectionEstablishment = false
    configuration.timeout.connect = .seconds(10)
    configuration.decompression = .disabled
    return configuration
  }

  /// Shuts the client down.
  public func shutdown() async throws {
    try await client.shutdown()
  }

  /// Sends one request; the response body is collected up to `options.maxResponseBytes`.
  public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> TransportResponse {
    var outgoing = HTTPClientRequest(
      url: "\(request.scheme ?? "http")://\(request.authority ?? "")\(request.path ?? "/")")
    outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
    var headers = HTTPHeaders()
    headers.reserveCapacity(request.headerFields.count)
    for field in request.headerFields { headers.add(name: field.name.rawName, value: field.value) }
    outgoing.headers = headers
    if let body { outgoing.body = .bytes(ByteBuffer(data: body)) }
    let timeout = options.timeout.components
    let deadline =
      NIODeadline.now() + .nanoseconds(timeout.seconds * 1_000_000_000 + timeout.attoseconds / 1_000_000_000)
    do {
      let response = try await client.execute(outgoing, deadline: deadline)
      let buffer = try await response.body.collect(upTo: options.maxResponseBytes)
      var fields = HTTPFields()
      fields.reserveCapacity(response.headers.count)
      for (name, value) in response.headers {
        if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
      }
      let head = HTTPResponse(
        status: HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
        headerFields: fields)
      return TransportResponse(head: head, body: Data(buffer: buffer, byteTransferStrategy: .automatic))
    } catch is NIOTooManyBytesError {
      throw ResponseTooLargeError(limit: options.maxResponseBytes)
    } catch {
      if Task.isCancelled { throw CancellationError() }
      throw Self.classify(error)
    }
  }

  /// Maps AsyncHTTPClient and SwiftNIO errors onto the kinds the retry policy knows.
  public static func classify(_ error: any Error) -> any Error {
    let detail = String(describing: error)
    if let error = error as? HTTPClientError {
      switch error {
      case .cancelled: return CancellationError()
      case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded, .getConnectionFromPoolTimeout,
        .tlsHandshakeTimeout:
        return TransportError(.timedOut, detail: detail)
      case .remoteConnectionClosed: return TransportError(.connectionLost, detail: detail)
      default: return TransportError(.other, detail: detail)
      }
    }
    if let error = error as? NIOConnectionError {
      let kinds = error.connectionErrors.map { kind(of: $0.error) }
      if !kinds.isEmpty && kinds.allSatisfy({ $0 == .connectionRefused }) {
        return TransportError(.connectionRefused, detail: detail)
      }
      if kinds.contains(.timedOut) { return TransportError(.timedOut, detail: detail) }
      return TransportError(.noNetwork, detail: detail)
    }
    return TransportError(kind(of: error) ?? .other, detail: detail)
  }

  private static func kind(of error: any Error) -> TransportError.Kind? {
    if let error = error as? IOError {
      switch error.errnoCode {
      case ECONNREFUSED: return .connectionRefused
      case ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN, EADDRNOTAVAIL: return .noNetwork
      case ECONNRESET, EPIPE, ECONNABORTED: return .connectionLost
      case ETIMEDOUT: return .timedOut
      default: return nil
      }
    }
    if let error = error as? ChannelError {
      switch error {
      case .connectTimeout: return .timedOut
      case .eof, .ioOnClosedChannel, .outputClosed, .alreadyClosed, .inputClosed: return .connectionLost
      default: return nil
      }
    }
    if error is NIOConnectionError { return .connectionRefused }
    if error is HTTPParserError { return .connectionLost }
    return nil
  }
}

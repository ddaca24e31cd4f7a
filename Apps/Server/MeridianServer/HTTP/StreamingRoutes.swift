import DomainKit
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeridianAPI
import MeridianStore
import NIOCore
import NetworkingKit

/// A request body as it arrives, within a route's limits: buffers of the wire bytes, or — with
/// `Content-Encoding: gzip` — of the bytes they inflate to. Passing the wire limit or the decompressed one is 413
/// `body_too_large`, a corrupt gzip stream 400 `unsupported_encoding`; another encoding is refused (415) before a
/// byte is read. It is read once.
struct StreamedBody: AsyncSequence, Sendable {
  typealias Element = ByteBuffer

  private let body: RequestBody
  private let limits: RouteRegistrar.BodyLimits
  private let gzip: Bool

  /// The body of `request` within `limits`; 415 `unsupported_encoding` for an encoding other than gzip.
  init(_ request: Request, limits: RouteRegistrar.BodyLimits) throws(APIError) {
    body = request.body
    self.limits = limits
    switch request.headers[.contentEncoding]?.lowercased() {
    case nil, "identity": gzip = false
    case "gzip": gzip = true
    case let other?:
      throw APIError(
        status: 415, code: .unsupportedEncoding,
        message: "Content-Encoding \(QuotedValue.quote(other)) is not supported; use gzip.")
    }
  }

  /// The whole body (inflated), within the limits: the wire bytes collected, then inflated at once.
  func collect() async throws -> Data {
    let wire: Data
    do {
      wire = Data(try await body.collect(upTo: limits.wire).readableBytesView)
    } catch is NIOTooManyBytesError {
      throw Self.wireTooLarge(limits)
    }
    guard gzip else { return wire }
    return try Self.inflating(limits) { try Gzip.decompress(wire, limit: limits.decompressed) }
  }

  /// `work`'s answer, its gzip failures turned into the API's: 413 past the decompressed limit, 400 for a corrupt
  /// stream.
  static func inflating<T>(_ limits: RouteRegistrar.BodyLimits, _ work: () throws -> T) throws -> T {
    do {
      return try work()
    } catch Gzip.Failure.limitExceeded {
      throw inflatedTooLarge(limits)
    } catch let failure as Gzip.Failure {
      throw APIError(status: 400, code: .unsupportedEncoding, message: "The gzip body is corrupt: \(failure).")
    }
  }

  static func wireTooLarge(_ limits: RouteRegistrar.BodyLimits) -> APIError {
    APIError(
      status: 413, code: .bodyTooLarge, message: "The request body is larger than \(limits.wire) bytes; send less.")
  }

  static func inflatedTooLarge(_ limits: RouteRegistrar.BodyLimits) -> APIError {
    APIError(
      status: 413, code: .bodyTooLarge,
      message: "The decompressed body is larger than \(limits.decompressed) bytes; send less.")
  }

  func makeAsyncIterator() -> Iterator {
    Iterator(base: body.makeAsyncIterator(), limits: limits, gzip: gzip)
  }

  /// Reads the wire buffers, counts them against the limit and inflates them when the body is gzip.
  struct Iterator: AsyncIteratorProtocol {
    var base: RequestBody.AsyncIterator
    let limits: RouteRegistrar.BodyLimits
    let gzip: Bool
    private var received = 0
    private var inflater: GzipInflater?
    /// What the last wire buffer inflated to, handed out from `position` on.
    private var inflated: [ByteBuffer] = []
    private var position = 0
    private var ended = false

    init(base: RequestBody.AsyncIterator, limits: RouteRegistrar.BodyLimits, gzip: Bool) {
      self.base = base
      self.limits = limits
      self.gzip = gzip
    }

    mutating func next() async throws -> ByteBuffer? {
      while true {
        if position < inflated.count {
          position += 1
          return inflated[position - 1]
        }
        if ended { return nil }
        guard let buffer = try await base.next() else {
          ended = true
          if gzip { inflated = try inflate(nil) }
          position = 0
          continue
        }
        received += buffer.readableBytes
        guard received <= limits.wire else { throw StreamedBody.wireTooLarge(limits) }
        guard gzip else { return buffer }
        inflated = try inflate(buffer)
        position = 0
      }
    }

    /// What `buffer` inflates to (with nil: checks that the gzip stream ended), the inflater's failures turned into
    /// the API's.
    private mutating func inflate(_ buffer: ByteBuffer?) throws -> [ByteBuffer] {
      let inflater =
        try self.inflater ?? StreamedBody.inflating(limits) { try GzipInflater(limit: limits.decompressed) }
      self.inflater = inflater
      return try StreamedBody.inflating(limits) {
        guard let buffer else {
          try inflater.finish()
          return []
        }
        var output: [ByteBuffer] = []
        try buffer.withUnsafeReadableBytes { bytes in
          try inflater.feed(bytes) { output.append(ByteBuffer(bytes: $0)) }
        }
        return output
      }
    }
  }
}

/// What the handler of a streaming route receives (``RouteRegistrar/onStream(_:limits:_:)``): the body as it
/// arrives, the caller its group's authenticator recognised, the parameters read on demand, and the request's fields.
struct StreamingRouteCall<Parameters: Sendable>: Sendable {
  /// The body as it arrives, within the route's limits (inflated when gzip).
  let body: StreamedBody
  /// Who the request was authenticated as; nil on a route without credentials.
  let caller: Caller?
  /// The request's header fields.
  let headers: HTTPFields
  /// The query as sent, for a protocol that reads it itself (OsmAnd).
  let query: String
  /// The client address without port.
  let clientAddress: String
  /// The request's logger.
  let logger: Logger
  let readParameters: @Sendable () throws -> Parameters

  /// The signed-in user, if any.
  var user: UserID? { caller?.user }

  /// The signed-in user; throws `token_invalid` on a route without authentication.
  func authenticated() throws(APIError) -> UserID {
    guard let user else { throw .tokenInvalid }
    return user
  }

  /// The path and query parameters, read with the endpoint's own types (400 naming a bad one).
  func parameters() throws -> Parameters { try readParameters() }
}

extension RouteRegistrar {
  /// Registers `handler` for an endpoint whose body is read as it arrives (images, history files, the phone apps'
  /// formats) and whose answer the handler writes itself: the registrar authenticates it as ``on(_:status:_:)``
  /// does, refuses an unknown `Content-Encoding`, and hands over the body within `limits` (the registrar's by
  /// default) as a ``StreamedBody``.
  func onStream<Parameters, Body, Response>(
    _ endpoint: Endpoint<Parameters, Body, Response>, limits: BodyLimits? = nil,
    _ handler: @escaping @Sendable (StreamingRouteCall<Parameters>) async throws -> Hummingbird.Response
  ) {
    let limits = limits ?? self.limits
    let store = self.store
    let template = endpoint.path
    routes(for: endpoint).on(RouterPath(endpoint.pathTemplate), method: endpoint.method) { request, context in
      let call = StreamingRouteCall<Parameters>(
        body: try StreamedBody(request, limits: limits), caller: context.identity, headers: request.headers,
        query: request.uri.query ?? "", clientAddress: context.clientAddress, logger: context.logger,
        readParameters: { try Self.parameters(of: request, template: template) })
      return try await Self.keepingWritesInView(of: call.user, method: endpoint.method, store: store) {
        try await Self.checkingAccount(of: call.user, store: store) { try await handler(call) }
      }
    }
  }

  /// `value` as a JSON answer with `status` and `headers`.
  static func json(
    _ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
  ) throws -> Hummingbird.Response {
    var headers = headers
    headers[.contentType] = "application/json"
    return Hummingbird.Response(
      status: status, headers: headers,
      body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(value))))
  }
}

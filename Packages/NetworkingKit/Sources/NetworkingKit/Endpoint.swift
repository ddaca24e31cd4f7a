import Foundation
import HTTPTypes

/// One operation of an HTTP API, defined once and shared by clients (through ``RequestFactory`` and
/// ``NetworkClient``) and by the server that registers a route for it.
///
/// ```swift
/// struct UserRef: Sendable { var id: String }
///
/// enum API {
///   static let profile = Endpoint<UserRef, NoBody, Profile>(.get, "/v1/users/\(\.id, "id")/profile")
///   static let postFixes = Endpoint<Void, FixBatch, FixReceipt>(.post, "/v1/fixes", idempotency: .key)
/// }
/// ```
///
/// - `Parameters`: the values the path and query are built from (`Void` when there are none).
/// - `Body`: the request body type (``NoBody`` when there is none).
/// - `Response`: the decoded success type (``NoContent`` for an empty answer).
public struct Endpoint<Parameters: Sendable, Body: Sendable, Response: Sendable>: Sendable {
  /// The HTTP method.
  public var method: HTTPRequest.Method
  /// The path template, relative to the base URL (e.g. `/v1/users/{id}/profile`).
  public var path: PathTemplate<Parameters>
  /// The query items for a set of parameters.
  public var query: @Sendable (Parameters) -> [QueryItem]
  /// Header fields sent with every request of this endpoint.
  public var headerFields: HTTPFields
  /// How the body is encoded.
  public var requestBody: RequestBodyCoding<Body>
  /// How a success response is decoded.
  public var responseBody: ResponseDecoding<Response>
  /// The error envelope a failure response carries.
  public var errorEnvelope: any ErrorEnvelope.Type
  /// Whether failed attempts may be retried.
  public var idempotency: Idempotency
  /// Whether the request carries the credentials' bearer token.
  public var authentication: Authentication

  /// Defines an endpoint with every part explicit.
  public init(
    _ method: HTTPRequest.Method,
    _ path: PathTemplate<Parameters>,
    query: @escaping @Sendable (Parameters) -> [QueryItem] = { _ in [] },
    headerFields: HTTPFields = [:],
    body: RequestBodyCoding<Body>,
    response: ResponseDecoding<Response>,
    errorEnvelope: any ErrorEnvelope.Type = StandardErrorEnvelope.self,
    idempotency: Idempotency = .byMethod,
    authentication: Authentication = .bearer
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.headerFields = headerFields
    self.requestBody = body
    self.responseBody = response
    self.errorEnvelope = errorEnvelope
    self.idempotency = idempotency
    self.authentication = authentication
  }

  /// The path template with `{name}` parameters, e.g. `/v1/users/{id}/profile`, for route registration.
  public var pathTemplate: String { path.template }

  /// Whether an attempt that failed in a retryable way may be sent again.
  public var isRetryable: Bool {
    switch idempotency {
    case .byMethod: method.isIdempotent
    case .key: true
    case .never: false
    }
  }

  /// The endpoint described without its generic types, for route tables, documentation and tests.
  public var descriptor: EndpointDescriptor {
    EndpointDescriptor(
      method: method,
      pathTemplate: path.template,
      parameterNames: path.parameterNames,
      parametersType: Parameters.self,
      bodyType: Body.self,
      responseType: Response.self,
      errorEnvelopeType: errorEnvelope,
      bodyContentType: requestBody.contentType,
      idempotency: idempotency,
      authentication: authentication
    )
  }
}

extension Endpoint where Body == NoBody, Response: Decodable {
  /// Defines an endpoint without a request body whose success response is JSON.
  public init(
    _ method: HTTPRequest.Method,
    _ path: PathTemplate<Parameters>,
    query: @escaping @Sendable (Parameters) -> [QueryItem] = { _ in [] },
    headerFields: HTTPFields = [:],
    errorEnvelope: any ErrorEnvelope.Type = StandardErrorEnvelope.self,
    idempotency: Idempotency = .byMethod,
    authentication: Authentication = .bearer
  ) {
    self.init(
      method, path, query: query, headerFields: headerFields, body: .none, response: .json(),
      errorEnvelope: errorEnvelope, idempotency: idempotency, authentication: authentication)
  }
}

extension Endpoint where Body: Encodable, Response: Decodable {
  /// Defines an endpoint with a body (JSON unless told otherwise) whose success response is JSON.
  public init(
    _ method: HTTPRequest.Method,
    _ path: PathTemplate<Parameters>,
    query: @escaping @Sendable (Parameters) -> [QueryItem] = { _ in [] },
    headerFields: HTTPFields = [:],
    body: RequestBodyCoding<Body> = .json(),
    errorEnvelope: any ErrorEnvelope.Type = StandardErrorEnvelope.self,
    idempotency: Idempotency = .byMethod,
    authentication: Authentication = .bearer
  ) {
    self.init(
      method, path, query: query, headerFields: headerFields, body: body, response: .json(),
      errorEnvelope: errorEnvelope, idempotency: idempotency, authentication: authentication)
  }
}

/// Whether a request may be sent more than once.
public enum Idempotency: Sendable, Hashable {
  /// Retry only idempotent methods (GET, HEAD, OPTIONS, TRACE, PUT, DELETE).
  case byMethod
  /// Send an `Idempotency-Key` header, generated once per logical request and the same on every attempt,
  /// and retry whatever the method. The server must deduplicate on the key.
  case key
  /// Never retry, whatever the method.
  case never
}

/// Whether an endpoint is called with credentials.
public enum Authentication: Sendable, Hashable {
  /// Send `Authorization: Bearer <token>` from the client's credentials provider, refreshing once on 401.
  case bearer
  /// Send no credentials (sign-in, sign-up, health).
  case none
}

/// A query item; a `nil` value is sent as a bare name (`?flag`).
public struct QueryItem: Sendable, Hashable {
  /// The name.
  public var name: String
  /// The value, or `nil` for a bare name.
  public var value: String?

  /// Creates a query item.
  public init(_ name: String, _ value: String?) {
    self.name = name
    self.value = value
  }

  /// Creates a query item from a value's description.
  public init(_ name: String, _ value: (some CustomStringConvertible)?) {
    self.name = name
    self.value = value?.description
  }
}

/// The marker type of endpoints without a request body.
public struct NoBody: Sendable, Hashable {
  /// The empty body.
  public init() {}
}

/// The success type of endpoints that answer without content (e.g. 202 or 204).
public struct NoContent: Sendable, Hashable, Codable {
  /// The empty response.
  public init() {}
}

/// An endpoint without its generic types: what a server needs to register a route, and what a route table
/// or an OpenAPI check lists.
public struct EndpointDescriptor: Sendable, CustomStringConvertible {
  /// The HTTP method.
  public let method: HTTPRequest.Method
  /// The path template with `{name}` parameters.
  public let pathTemplate: String
  /// The names of the path parameters in order.
  public let parameterNames: [String]
  /// The parameters type.
  public let parametersType: any Any.Type
  /// The request body type (``NoBody`` for none).
  public let bodyType: any Any.Type
  /// The success response type.
  public let responseType: any Any.Type
  /// The error envelope type.
  public let errorEnvelopeType: any ErrorEnvelope.Type
  /// The request body's media type, if any.
  public let bodyContentType: String?
  /// The endpoint's idempotency.
  public let idempotency: Idempotency
  /// Whether credentials are sent.
  public let authentication: Authentication

  /// The path template with `:name` parameters, the style some routers use.
  public var colonPathTemplate: String {
    var result = pathTemplate
    for name in parameterNames { result = result.replacingOccurrences(of: "{\(name)}", with: ":\(name)") }
    return result
  }

  /// `METHOD /path/{template}`.
  public var description: String { "\(method.rawValue) \(pathTemplate)" }
}

extension HTTPRequest.Method {
  /// Whether the method is idempotent by RFC 9110 (GET, HEAD, OPTIONS, TRACE, PUT, DELETE).
  public var isIdempotent: Bool {
    switch self {
    case .get, .head, .options, .trace, .put, .delete: true
    default: false
    }
  }
}

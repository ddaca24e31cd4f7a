import Foundation
import HTTPTypes

/// A request ready for a transport: head and encoded body.
public struct PreparedRequest: Sendable {
  /// Method, scheme, authority, path with query, and header fields.
  public var head: HTTPRequest
  /// The encoded body, if any.
  public var body: Data?

  /// Creates a prepared request.
  public init(head: HTTPRequest, body: Data?) {
    self.head = head
    self.body = body
  }
}

/// Turns an ``Endpoint``, its parameters and body, a base URL and the current credentials into a request.
public struct RequestFactory: Sendable {
  /// `http` or `https`.
  public let scheme: String
  /// `host[:port]`.
  public let authority: String
  /// The base URL's path without a trailing `/` (often empty).
  public let basePath: String
  /// Header fields sent with every request (e.g. `User-Agent`).
  public var defaultHeaderFields: HTTPFields

  /// Creates a factory for a base URL such as `https://api.example.com` or `http://127.0.0.1:8080/api`.
  public init(baseURL: URL, defaultHeaderFields: HTTPFields = [:]) throws(NetworkingError) {
    guard let components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false),
      let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
      let host = components.host, !host.isEmpty
    else {
      throw .invalidRequest("base URL '\(baseURL.absoluteString)' needs an http or https scheme and a host")
    }
    let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    self.scheme = scheme
    self.authority = components.port.map { "\(hostPart):\($0)" } ?? hostPart
    var path = components.percentEncodedPath
    while path.hasSuffix("/") { path.removeLast() }
    self.basePath = path
    self.defaultHeaderFields = defaultHeaderFields
  }

  /// The request for one call. `bearerToken` becomes `Authorization: Bearer …` for endpoints that authenticate;
  /// `idempotencyKey` becomes the `Idempotency-Key` field.
  public func makeRequest<Parameters, Body, Response>(
    _ endpoint: Endpoint<Parameters, Body, Response>,
    parameters: Parameters,
    body: Body,
    bearerToken: String? = nil,
    idempotencyKey: String? = nil,
    headerFields extraFields: HTTPFields = [:]
  ) throws(NetworkingError) -> PreparedRequest {
    var path = basePath + endpoint.path.render(parameters)
    let items = endpoint.query(parameters)
    if !items.isEmpty {
      path += "?" + Self.encodeQuery(items)
    }
    var fields = defaultHeaderFields
    for field in endpoint.headerFields { fields[fields: field.name] = endpoint.headerFields[fields: field.name] }
    for field in extraFields { fields[fields: field.name] = extraFields[fields: field.name] }
    if let accept = endpoint.responseBody.accept, fields[.accept] == nil { fields[.accept] = accept }
    let encoded: Data?
    do {
      encoded = try endpoint.requestBody.encode(body)
    } catch {
      throw .invalidRequest("\(endpoint.descriptor): the body does not encode: \(error)")
    }
    if encoded != nil, let contentType = endpoint.requestBody.contentType, fields[.contentType] == nil {
      fields[.contentType] = contentType
    }
    if endpoint.authentication == .bearer, let bearerToken {
      fields[.authorization] = "Bearer \(bearerToken)"
    }
    if let idempotencyKey { fields[.idempotencyKey] = idempotencyKey }
    let head = HTTPRequest(
      method: endpoint.method, scheme: scheme, authority: authority, path: path.isEmpty ? "/" : path,
      headerFields: fields)
    return PreparedRequest(head: head, body: encoded)
  }

  /// Encodes query items as `a=1&b=x%20y` (RFC 3986 unreserved characters kept, everything else escaped).
  public static func encodeQuery(_ items: [QueryItem]) -> String {
    items.map { item in
      let name = PercentEncoding.encode(item.name, allowing: .queryComponent)
      guard let value = item.value else { return name }
      return name + "=" + PercentEncoding.encode(value, allowing: .queryComponent)
    }.joined(separator: "&")
  }
}

extension HTTPField.Name {
  /// `Idempotency-Key` (IETF draft-ietf-httpapi-idempotency-key-header).
  public static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}

import DomainKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import Logging
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NIOCore
import NetworkingKit

/// The request context of Meridian's routes: Hummingbird's core context plus the client address (for rate limits)
/// and the caller an authenticator middleware recognised (``Caller``, hummingbird-auth's `AuthRequestContext`).
public struct MeridianRequestContext: RequestContext, RemoteAddressRequestContext, AuthRequestContext {
  /// Hummingbird's storage.
  public var coreContext: CoreRequestContextStorage
  /// The connected client's address.
  public let remoteAddress: SocketAddress?
  /// Who the request was authenticated as, by the authenticator of its route group; nil before or without one.
  public var identity: Caller?

  /// A context for a request on `source.channel`.
  public init(source: ApplicationRequestContextSource) {
    coreContext = CoreRequestContextStorage(source: source)
    remoteAddress = source.channel.remoteAddress
    identity = nil
  }

  /// The client address without the port, for rate limits and logs.
  public var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}

extension APIError {
  /// The longest message an error envelope carries (the `…` that marks a cut included): whatever a message quotes
  /// from the request, a megabyte of bad input never comes back as a megabyte of error.
  static let maximumMessageLength = 1_000

  /// `message` cut to ``maximumMessageLength`` characters: every message of an envelope, and of each of its
  /// `fields`, passes here.
  static func bounded(_ message: String) -> String {
    QuotedValue.clip(message, limit: maximumMessageLength - 1)
  }

  /// The error as a JSON response with the standard envelope (and `Retry-After` when it says how long to wait).
  func response() -> Response {
    let message = Self.bounded(envelope.message)
    let boundedFields = fields.map {
      APIFieldError(field: Self.bounded($0.field), code: $0.code, message: Self.bounded($0.message))
    }
    let body =
      fields.isEmpty
      ? (try? JSONEncoder().encode(StandardErrorEnvelope(code: envelope.code, message: message))) ?? Data()
      : (try? JSONEncoder().encode(FieldErrorEnvelope(code: envelope.code, message: message, fields: boundedFields)))
        ?? Data()
    var headers: HTTPFields = [.contentType: "application/json"]
    if let retryAfterSeconds { headers[.retryAfter] = String(retryAfterSeconds) }
    return Response(
      status: HTTPResponse.Status(code: status), headers: headers,
      body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
  }
}

/// Header fields every answer carries: `X-Content-Type-Options: nosniff` (a browser never guesses another type
/// than the one sent) and, unless the route set its own, `Cache-Control: no-store` (answers carry tokens, profiles
/// and locations, which no cache may keep).
struct SecurityHeadersMiddleware: RouterMiddleware {
  typealias Context = MeridianRequestContext

  func handle(
    _ request: Request, context: Context, next: (Request, Context) async throws -> Response
  ) async throws -> Response {
    var response = try await next(request, context)
    response.headers[.xContentTypeOptions] = "nosniff"
    if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
    return response
  }
}

extension HTTPField.Name {
  /// `X-Content-Type-Options`.
  static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}

/// Turns every failure into the error envelope with a stable code; unexpected errors become 500 `internal`
/// and are logged, never shown.
struct ErrorEnvelopeMiddleware: RouterMiddleware {
  typealias Context = MeridianRequestContext

  func handle(
    _ request: Request, context: Context, next: (Request, Context) async throws -> Response
  ) async throws -> Response {
    do {
      return try await next(request, context)
    } catch let error as APIError {
      return error.response()
    } catch let error as HTTPError {
      return Self.apiError(for: error.status).response()
    } catch let error as StoreUnavailableError {
      context.logger.warning(
        "Database unavailable", metadata: Self.failureMetadata(error, request.method, route: context.endpointPath))
      return APIError.databaseUnavailable().response()
    } catch {
      context.logger.error(
        "Request failed", metadata: Self.failureMetadata(error, request.method, route: context.endpointPath))
      return APIError(status: 500, code: .internal, message: "Something went wrong on the server; try again.")
        .response()
    }
  }

  /// What a failure's log line says of the request: the error and the matched route's template
  /// (`GET /v1/shared/{token}`), never the request's path, which may carry a secret (a share link's token).
  static func failureMetadata(_ error: any Error, _ method: HTTPRequest.Method, route: String?) -> Logger.Metadata {
    ["error": "\(error)", "route": "\(method.rawValue) \(route ?? "(no route)")"]
  }

  static func apiError(for status: HTTPResponse.Status) -> APIError {
    switch status {
    case .notFound: APIError(status: 404, code: .routeNotFound, message: "There is no such route.")
    case .methodNotAllowed:
      APIError(status: 405, code: .methodNotAllowed, message: "This route does not accept that method.")
    case .contentTooLarge: APIError(status: 413, code: .bodyTooLarge, message: "The request body is too large.")
    case .unauthorized: .tokenInvalid
    default:
      APIError(
        status: status.code, code: status.code >= 500 ? .internal : .invalidRequest, message: status.reasonPhrase)
    }
  }
}

/// What a handler receives: the decoded parameters and body, the signed-in user, and the raw request.
public struct RouteCall<Parameters: Sendable, Body: Sendable>: Sendable {
  /// Path and query parameters.
  public let parameters: Parameters
  /// The decoded body.
  public let body: Body
  /// The body as received (after gunzip).
  public let bodyBytes: Data
  /// The signed-in user, for endpoints with bearer authentication.
  public let user: UserID?
  /// The hash of the bearer token used, for logout.
  public let tokenHash: String?
  /// The request's header fields.
  public let headers: HTTPFields
  /// The client address without port.
  public let clientAddress: String
  /// The request's logger.
  public let logger: Logger
  /// The request's `Idempotency-Key` on `.key` endpoints; a handler that stores the answer itself (in the same
  /// transaction as its effect) marks it, and the route then doesn't store it again.
  public var idempotency: IdempotencyClaim? = nil

  /// The signed-in user; throws `token_invalid` on an endpoint without authentication.
  public func authenticated() throws(APIError) -> UserID {
    guard let user else { throw .tokenInvalid }
    return user
  }
}

/// Registers routes from MeridianAPI's endpoint definitions: method and path come from the endpoint; the
/// registrar reads parameters, reads (and gunzips) the body, decodes it, hands an idempotency key to the handler,
/// calls it and encodes its answer. Authentication is the route groups' (Hummingbird's idiom, hummingbird-auth's
/// authenticator middleware): endpoints that declare bearer credentials are registered in a group whose
/// authenticator (a user's token by default, ``authenticating(with:everyRoute:basicChallenge:)`` for another) puts
/// the ``Caller`` into the context and refuses a request it did not recognise; the registrar hands that caller on.
struct RouteRegistrar {
  /// The router, reached only through the registrar's groups: no feature registers a route around it.
  private let router: Router<MeridianRequestContext>
  let store: any MeridianStore
  let metrics: ServerMetrics
  let limits: BodyLimits
  let clock: @Sendable () -> Int64
  /// The routes of endpoints that take no credentials.
  private let openRoutes: RouterGroup<MeridianRequestContext>
  /// The routes of endpoints that need a caller: the group's authenticator, then ``RequireCallerMiddleware``.
  private let authenticatedRoutes: RouterGroup<MeridianRequestContext>
  /// Whether every route goes through ``authenticatedRoutes``, whatever its endpoint declares (the phone apps'
  /// Basic routes, which MeridianAPI's clients call without a bearer token).
  private let authenticatesEveryRoute: Bool

  /// A registrar on `router` whose bearer endpoints take a user's token (``UserTokenAuthenticator``).
  init(
    router: Router<MeridianRequestContext>, store: any MeridianStore, metrics: ServerMetrics, limits: BodyLimits,
    clock: @escaping @Sendable () -> Int64
  ) {
    self.router = router
    self.store = store
    self.metrics = metrics
    self.limits = limits
    self.clock = clock
    openRoutes = router.group()
    authenticatedRoutes = router.group()
      .add(middleware: UserTokenAuthenticator(store: store, clock: clock))
      .add(middleware: RequireCallerMiddleware())
    authenticatesEveryRoute = false
  }

  private init(
    _ base: RouteRegistrar, authenticatedRoutes: RouterGroup<MeridianRequestContext>, everyRoute: Bool
  ) {
    router = base.router
    store = base.store
    metrics = base.metrics
    limits = base.limits
    clock = base.clock
    openRoutes = base.openRoutes
    self.authenticatedRoutes = authenticatedRoutes
    authenticatesEveryRoute = everyRoute
  }

  /// A registrar whose authenticated routes take what `authenticator` recognises instead of a user's token (the
  /// admin token: ``AdminTokenAuthenticator``; HTTP Basic: ``PhoneAppBasicAuthenticator``); with `everyRoute`,
  /// every route registered through it is authenticated, whatever its endpoint declares; with `basicChallenge`, its
  /// 401 answers carry `WWW-Authenticate: Basic` (``BasicChallengeMiddleware``).
  func authenticating(
    with authenticator: some RouterMiddleware<MeridianRequestContext>, everyRoute: Bool = false,
    basicChallenge: Bool = false
  ) -> RouteRegistrar {
    let group = router.group()
    if basicChallenge { group.add(middleware: BasicChallengeMiddleware()) }
    group.add(middleware: authenticator).add(middleware: RequireCallerMiddleware())
    return RouteRegistrar(self, authenticatedRoutes: group, everyRoute: everyRoute)
  }

  /// The group `endpoint` is registered in: the authenticated one for endpoints that declare bearer credentials
  /// (or for every endpoint of a registrar that authenticates every route).
  func routes<Parameters, Body, Response>(
    for endpoint: Endpoint<Parameters, Body, Response>
  ) -> RouterGroup<MeridianRequestContext> {
    authenticatesEveryRoute || endpoint.authentication == .bearer ? authenticatedRoutes : openRoutes
  }

  /// The limits of a request body: on the wire, and after gzip decompression.
  struct BodyLimits: Sendable {
    var wire: Int
    var decompressed: Int
  }

  /// Registers `handler` for `endpoint`, answering `status` on success.
  ///
  /// On `.key` endpoints the handler gets the `Idempotency-Key` as ``RouteCall/idempotency`` (checked: 1…255
  /// characters, with the request's fingerprint) and resolves it in the transaction of its own effect, on any node:
  /// the fix upload in its group commit, a coupon purchase with the coupon it stores. A retry then gets the first
  /// answer and another request under the key is refused.
  func on<Parameters, Body, Response>(
    _ endpoint: Endpoint<Parameters, Body, Response>, status: HTTPResponse.Status = .ok,
    _ handler: @escaping @Sendable (RouteCall<Parameters, Body>) async throws -> Response
  ) {
    let store = self.store
    let prepare = preparation(for: endpoint)
    let usesKey = endpoint.idempotency == .key
    let handler = Self.keepingWritesInView(
      Self.checkingAccount(handler, store: store), method: endpoint.method, store: store)
    routes(for: endpoint).on(RouterPath(endpoint.pathTemplate), method: endpoint.method) { request, context in
      var call = try await prepare(request, context)
      let key = usesKey ? request.headers[.idempotencyKey] : nil
      if let key, key.isEmpty || key.utf8.count > 255 {
        throw APIError.invalidRequest("The Idempotency-Key header must have 1 to 255 characters.")
      }
      // The fingerprint is of the request as sent: method, path and the body's bytes (after gunzip). A retry sends
      // the same bytes; another request under the same key is refused even if it only differs in spelling.
      let requestLine = "\(endpoint.method.rawValue) \(request.uri.path)\n"
      if let key, call.user != nil {
        call.idempotency = IdempotencyClaim(
          key: key, requestHash: SecretHash.sha256(Data(requestLine.utf8) + call.bodyBytes))
      }
      guard let encoded = try Self.encode(try await handler(call)) else { return Hummingbird.Response(status: status) }
      return Hummingbird.Response(
        status: status, headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: encoded)))
    }
  }

  /// A body the handler chose the media type of (exports), sent as is.
  struct RawBody: Sendable {
    /// The `Content-Type`.
    var contentType: String
    /// The suggested file name (`Content-Disposition: attachment`), if any.
    var filename: String?
    /// The bytes.
    var data: Data
  }

  /// Registers `handler` for an endpoint whose success answer is raw bytes of a type the handler chooses.
  func onRaw<Parameters, Body>(
    _ endpoint: Endpoint<Parameters, Body, Data>,
    _ handler: @escaping @Sendable (RouteCall<Parameters, Body>) async throws -> RawBody
  ) {
    let prepare = preparation(for: endpoint)
    let handler = Self.keepingWritesInView(
      Self.checkingAccount(handler, store: store), method: endpoint.method, store: store)
    routes(for: endpoint).on(RouterPath(endpoint.pathTemplate), method: endpoint.method) { request, context in
      let raw = try await handler(try await prepare(request, context))
      var headers: HTTPFields = [.contentType: raw.contentType]
      if let filename = raw.filename { headers[.contentDisposition] = "attachment; filename=\"\(filename)\"" }
      return Hummingbird.Response(
        status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: raw.data)))
    }
  }

  /// Where a browser is sent next (a route a person's browser navigates to, not an API client), and the cookie set
  /// on the way.
  struct Redirect: Sendable {
    /// The `Location`.
    var location: String
    /// 302 (to another site) or 303 (after a callback, to this site's page).
    var status: HTTPResponse.Status = .found
    /// `Set-Cookie`, if any.
    var setCookie: String? = nil
  }

  /// Registers `handler` for an endpoint a browser navigates to, whose success answer is a redirect; failures are
  /// the error envelope as everywhere.
  func onRedirect<Parameters, Body>(
    _ endpoint: Endpoint<Parameters, Body, NoContent>,
    _ handler: @escaping @Sendable (RouteCall<Parameters, Body>) async throws -> Redirect
  ) {
    let prepare = preparation(for: endpoint)
    routes(for: endpoint).on(RouterPath(endpoint.pathTemplate), method: endpoint.method) { request, context in
      let redirect = try await handler(try await prepare(request, context))
      var headers: HTTPFields = [.location: redirect.location]
      if let cookie = redirect.setCookie { headers[.setCookie] = cookie }
      return Hummingbird.Response(status: redirect.status, headers: headers)
    }
  }

  /// `handler` reading for the signed-in caller, their write noted after it (``keepingWritesInView(of:method:store:_:)``).
  static func keepingWritesInView<Parameters, Body, Response>(
    _ handler: @escaping @Sendable (RouteCall<Parameters, Body>) async throws -> Response,
    method: HTTPRequest.Method, store: any MeridianStore
  ) -> @Sendable (RouteCall<Parameters, Body>) async throws -> Response {
    { call in try await keepingWritesInView(of: call.user, method: method, store: store) { try await handler(call) } }
  }

  /// What `work` answers, reading for the signed-in `user` (``StoreReader/user``); after a request of theirs that
  /// changes something (not GET or HEAD) succeeded, their write is noted so that their next reads see it wherever the
  /// store reads them from (a replica that may lag: ``WriteFencing``).
  static func keepingWritesInView<Response>(
    of user: UserID?, method: HTTPRequest.Method, store: any MeridianStore, _ work: () async throws -> Response
  ) async throws -> Response {
    guard let user else { return try await work() }
    let response = try await StoreReader.$user.withValue(user) { try await work() }
    if method != .get && method != .head { await store.noteWrite(by: user) }
    return response
  }

  /// `handler`, except that when it fails unexpectedly (not with an ``APIError``) for a signed-in caller whose
  /// account was deleted or disabled meanwhile — after the token was checked, or by another process or node — the
  /// answer is 401 `token_invalid`, as the next request's would be, instead of 500.
  static func checkingAccount<Parameters, Body, Response>(
    _ handler: @escaping @Sendable (RouteCall<Parameters, Body>) async throws -> Response, store: any MeridianStore
  ) -> @Sendable (RouteCall<Parameters, Body>) async throws -> Response {
    { call in try await checkingAccount(of: call.user, store: store) { try await handler(call) } }
  }

  /// What `work` answers; when it fails unexpectedly for a `user` whose account is gone or disabled, 401
  /// `token_invalid` instead (``checkingAccount(_:store:)``).
  static func checkingAccount<Response>(
    of user: UserID?, store: any MeridianStore, _ work: () async throws -> Response
  ) async throws -> Response {
    do {
      return try await work()
    } catch let error as APIError {
      throw error
    } catch let error as StoreUnavailableError {
      throw error  // asking the database about the account would only wait again
    } catch {
      // A check that fails itself (the database is down) leaves the handler's own error to answer.
      if let user, (try? await isActiveAccount(user, store: store)) == false {
        throw APIError.tokenInvalid
      }
      throw error
    }
  }

  /// Whether `user`'s account exists and is not disabled, read from the store (no cache).
  static func isActiveAccount(_ user: UserID, store: any MeridianStore) async throws -> Bool {
    guard try await store.account(user) != nil else { return false }
    return try await !store.isDisabled(user)
  }

  /// What every route does before its handler: reads the path and query parameters with the endpoint's own types,
  /// takes the caller its group's authenticator put into the context, reads (and gunzips) the body within the
  /// limits and decodes it.
  private func preparation<Parameters, Body, Response>(for endpoint: Endpoint<Parameters, Body, Response>)
    -> @Sendable (Request, MeridianRequestContext) async throws -> RouteCall<Parameters, Body>
  {
    let limits = self.limits
    let template = endpoint.path
    let readsJSON = endpoint.requestBody.contentType == "application/json"
    return { request, context in
      let parameters: Parameters = try Self.parameters(of: request, template: template)
      if readsJSON, let type = request.headers[.contentType], !Self.isJSON(type) {
        throw APIError(
          status: 415, code: .unsupportedMediaType,
          message: "This route reads JSON: send 'Content-Type: application/json', not '\(echo(type))'.")
      }
      let data = try await Self.readBody(request, limits: limits)
      let body: Body = try Self.decodeBody(data)
      return RouteCall(
        parameters: parameters, body: body, bodyBytes: data, user: context.identity?.user,
        tokenHash: context.identity?.tokenHash, headers: request.headers, clientAddress: context.clientAddress,
        logger: context.logger)
    }
  }

  /// The path and query parameters of `request`, read with the endpoint's own types: the endpoint's `template`
  /// reads (and percent-decodes) the path parameters; the query is decoded already.
  static func parameters<Parameters>(of request: Request, template: PathTemplate<Parameters>) throws -> Parameters {
    let captures = template.match(request.uri.path) ?? [:]
    var query: [String: [String]] = [:]
    for (name, value) in request.uri.queryParameters { query[String(name), default: []].append(String(value)) }
    return try decodeParameters(captures, query)
  }

  /// Whether a `Content-Type` names JSON: `application/json` or a `+json` type, with any parameters.
  static func isJSON(_ contentType: String) -> Bool {
    // Foundation's trimming bridges to NSString: a fifth of a microsecond on every JSON request.
    let type = String(contentType.prefix { $0 != ";" }).trimmedOfWhitespace.lowercased()
    return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
  }

  static func decodeParameters<Parameters>(_ path: [String: String], _ query: [String: [String]]) throws
    -> Parameters
  {
    if let none = () as? Parameters { return none }
    guard let type = Parameters.self as? any RouteParameters.Type,
      let value = try type.init(path: path, query: query) as? Parameters
    else {
      throw APIError(status: 500, code: .internal, message: "The route's parameters can't be read.")
    }
    return value
  }

  /// The whole body of `request` (gunzipped) within `limits` (``StreamedBody``).
  static func readBody(_ request: Request, limits: BodyLimits) async throws -> Data {
    try await StreamedBody(request, limits: limits).collect()
  }

  static func decodeBody<Body>(_ data: Data) throws -> Body {
    if let none = NoBody() as? Body { return none }
    guard let type = Body.self as? any Decodable.Type else {
      throw APIError(status: 500, code: .internal, message: "The route's body type can't be decoded.")
    }
    guard !data.isEmpty else {
      throw APIError(status: 400, code: .invalidJSON, message: "The request needs a JSON body.")
    }
    // Bodies with a fast reader (fix uploads, the hot path) try it first; what it declines goes to JSONDecoder.
    if let fast = Body.self as? any CommonFormDecodable.Type, let value = fast.decodeCommonForm(data) as? Body {
      return value
    }
    do {
      guard let value = try decodeJSON(type, data) as? Body else {
        throw APIError(status: 500, code: .internal, message: "The route's body type can't be decoded.")
      }
      return value
    } catch let error as FixValidationError {
      throw APIError(status: 400, code: .invalidFix, message: "A fix is invalid: \(error.description)")
    } catch let error as DecodingError {
      throw JSONBodyError.apiError(error, data: data) { data in _ = try decodeJSON(type, data) }
    }
  }

  private static func decodeJSON<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
    try JSONDecoder().decode(type, from: data)
  }

  static func encode<Response>(_ value: Response) throws -> Data? {
    if value is NoContent { return nil }
    if let fast = value as? any CommonFormEncodable { return fast.commonFormJSON }
    guard let encodable = value as? any Encodable else {
      throw APIError(status: 500, code: .internal, message: "The route's answer can't be encoded.")
    }
    return try JSONEncoder().encode(encodable)
  }
}

extension String {
  /// The string without leading and trailing whitespace (`CharacterSet.whitespaces`); the common case, an ASCII
  /// id with nothing to trim, is answered without Foundation's bridging.
  var trimmedOfWhitespace: String {
    func isPlainASCII(_ byte: UInt8?) -> Bool { byte.map { $0 > 0x20 && $0 < 0x80 } ?? true }
    if isPlainASCII(utf8.first) && isPlainASCII(utf8.last) { return self }
    return trimmingCharacters(in: .whitespaces)
  }
}

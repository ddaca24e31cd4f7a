import Foundation
import HTTPTypes

/// Sends ``Endpoint``s through an ``HTTPTransport`` with retries, a per-host retry budget, bearer credentials,
/// gzip bodies and typed decoding.
///
/// ```swift
/// let client = try NetworkClient(
///   baseURL: URL(string: "https://api.example.com")!,
///   transport: AsyncHTTPClientTransport(client: .shared),
///   credentials: BearerTokenCredentials(token: savedToken) { rejected in try await signIn() })
/// let profile = try await client.send(API.profile, parameters: UserRef(id: "42"))
/// ```
public struct NetworkClient: Sendable {
  /// Everything that shapes how requests are sent. The defaults are for production.
  public struct Configuration: Sendable {
    /// When to retry and how long to wait (3 attempts, full jitter 0.5 s…20 s, 60 s deadline).
    public var retryPolicy: RetryPolicy = .default
    /// The longest one attempt may take (default 20 s); never more than what is left of the deadline.
    public var attemptTimeout: Duration = .seconds(20)
    /// Per-host retry budgets; by default ``RetryBudgets/shared``, one bucket per host for the whole process
    /// (AWS standard mode sizes); `nil` disables the budget.
    public var retryBudgets: RetryBudgets? = .shared
    /// Request bodies of at least this many bytes are sent gzip-compressed (default 4 KiB); `nil` never compresses.
    public var compressionThreshold: Int? = 4096
    /// Whether `Accept-Encoding: gzip` is sent and gzip responses are decoded (default `true`).
    public var acceptsGzip = true
    /// The largest response body, after decompression (default 16 MiB).
    public var maxResponseBytes = 16 * 1024 * 1024
    /// Error envelope codes that mean the bearer token was rejected, even without status 401: the client refreshes
    /// the token and replays the request once, as for a 401, and reports ``NetworkingError/unauthorized(_:)`` if
    /// that doesn't help. The default is the Meridian API's `token_invalid` and `token_expired`; set the codes your
    /// API uses (or none).
    public var tokenErrorCodes: Set<String> = ["token_invalid", "token_expired"]
    /// The clock that times waits and the deadline; tests inject a test clock.
    public var clock: any Clock<Duration> = ContinuousClock()
    /// The source of jitter; tests inject a seeded one.
    public var random: RandomSource = .system
    /// Makes idempotency keys (default: ``IdempotencyKeys``, a random prefix and a counter).
    public var makeIdempotencyKey: @Sendable () -> String = IdempotencyKeys().next
    /// Header fields sent with every request.
    public var defaultHeaderFields: HTTPFields = [:]
    /// Called after every attempt with its outcome and what follows, for logs and metrics.
    public var onAttempt: (@Sendable (AttemptEvent) -> Void)?

    /// The defaults.
    public init() {}
  }

  /// Builds the requests.
  public let factory: RequestFactory
  /// Sends them.
  public let transport: any HTTPTransport
  /// Supplies bearer tokens, if the API needs them.
  public let credentials: (any CredentialsProvider)?
  /// The configuration.
  public let configuration: Configuration
  /// The retry budget of the base URL's host, looked up once.
  private let budget: RetryBudget?

  /// Creates a client for a base URL such as `https://api.example.com` (a path prefix is kept).
  public init(
    baseURL: URL,
    transport: any HTTPTransport,
    credentials: (any CredentialsProvider)? = nil,
    configuration: Configuration = Configuration()
  ) throws(NetworkingError) {
    self.factory = try RequestFactory(baseURL: baseURL, defaultHeaderFields: configuration.defaultHeaderFields)
    self.transport = transport
    self.credentials = credentials
    self.configuration = configuration
    self.budget = configuration.retryBudgets?.budget(for: factory.authority)
  }

  /// Sends one logical request and returns the decoded success value.
  ///
  /// Throws ``NetworkingError`` (or `CancellationError`). `idempotencyKey` overrides the generated key; a key
  /// (given, generated for ``Idempotency/key`` endpoints, or in `headerFields`) makes any method retryable.
  public func send<Parameters, Body, Response>(
    _ endpoint: Endpoint<Parameters, Body, Response>,
    parameters: Parameters,
    body: Body,
    headerFields: HTTPFields = [:],
    idempotencyKey: String? = nil
  ) async throws -> Response {
    let key =
      idempotencyKey ?? headerFields[.idempotencyKey]
      ?? (endpoint.idempotency == .key ? configuration.makeIdempotencyKey() : nil)
    let credentials = endpoint.authentication == .bearer ? self.credentials : nil
    var token = try await credentials?.currentToken()
    var request = try factory.makeRequest(
      endpoint, parameters: parameters, body: body, bearerToken: token, idempotencyKey: key,
      headerFields: headerFields)
    try compressBody(&request)
    if configuration.acceptsGzip && request.head.headerFields[.acceptEncoding] == nil {
      request.head.headerFields[.acceptEncoding] = "gzip"
    }
    let context = AttemptContext(
      pathTemplate: endpoint.path.template,
      retryable: endpoint.idempotency != .never && (endpoint.isRetryable || key != nil),
      idempotencyKey: key,
      errorEnvelope: endpoint.errorEnvelope,
      elapsed: Self.stopwatch(configuration.clock))
    var replayed = false
    while true {
      let canRefresh = !replayed && credentials != nil && token != nil
      let response = try await perform(request, context: context, canRefresh: canRefresh)
      let result = Result { () throws(NetworkingError) -> Response in
        try decode(response, as: endpoint.responseBody, envelope: endpoint.errorEnvelope)
      }
      switch result {
      case .success(let value):
        return value
      case .failure(let error):
        guard case .unauthorized = error, canRefresh, let credentials, let rejected = token else { throw error }
        replayed = true
        guard let fresh = try await credentials.refreshToken(rejected: rejected) else { throw error }
        token = fresh
        request.head.headerFields[.authorization] = "Bearer \(fresh)"
      }
    }
  }

  /// What every attempt of one logical request shares.
  struct AttemptContext {
    let pathTemplate: String
    let retryable: Bool
    let idempotencyKey: String?
    let errorEnvelope: any ErrorEnvelope.Type
    let elapsed: @Sendable () -> Duration
  }

  /// The attempt loop: returns the final response (a success, a failure that isn't retried, or the last failure
  /// once attempts run out); throws transport, budget and deadline errors.
  func perform(_ request: PreparedRequest, context: AttemptContext, canRefresh: Bool) async throws
    -> TransportResponse
  {
    let policy = configuration.retryPolicy
    let authority = request.head.authority ?? ""
    var attempt = 1
    var lastRetryCost: Int?
    var lastError: NetworkingError?
    while true {
      try Task.checkCancellation()
      var timeout = configuration.attemptTimeout
      if let deadline = policy.deadline {
        let remaining = deadline - context.elapsed()
        guard remaining > .zero else { throw NetworkingError.deadlineExceeded(lastError: lastError) }
        timeout = min(timeout, remaining)
      }
      // Read only for the attempt event: every clock read is a system call's worth of work on every request.
      let started = configuration.onAttempt == nil ? Duration.zero : context.elapsed()
      let outcome: AttemptEvent.Outcome
      // What this attempt failed with; every path that reaches the retry decision sets it.
      let attemptError: NetworkingError
      var failedResponse: TransportResponse?
      var retryAfter: Duration?
      var cost = budget?.configuration.retryCost ?? 0
      do {
        let response = try await transport.send(
          request.head, body: request.body,
          options: TransportOptions(timeout: timeout, maxResponseBytes: configuration.maxResponseBytes))
        // (`HTTPResponse.status` parses the status pseudo-field on every read.)
        let status = response.head.status
        let code = status.code
        guard context.retryable, policy.retryableStatuses.contains(code) else {
          let succeeded = status.kind == .successful
          if succeeded { budget?.recordSuccess(retryCost: lastRetryCost) }
          let decision: AttemptEvent.Decision =
            canRefresh && !succeeded && rejectsToken(response, envelope: context.errorEnvelope)
            ? .refreshCredentials : .finish
          emit(request, context, attempt, .status(code), decision, started)
          return response
        }
        outcome = .status(code)
        failedResponse = response
        retryAfter = response.head.headerFields[.retryAfter].flatMap { RetryAfter.parse($0) }
        attemptError = failure(response, envelope: context.errorEnvelope)
      } catch let error as TransportError {
        guard context.retryable, error.isRetryable else {
          emit(request, context, attempt, .transport(error.kind), .finish, started)
          throw NetworkingError.transport(error)
        }
        outcome = .transport(error.kind)
        attemptError = .transport(error)
        if error.kind == .timedOut { cost = budget?.configuration.timeoutCost ?? 0 }
      } catch let error as ResponseTooLargeError {
        emit(request, context, attempt, .transport(.other), .finish, started)
        throw NetworkingError.responseTooLarge(limit: error.limit)
      } catch let error as NetworkingError {
        emit(request, context, attempt, .transport(.other), .finish, started)
        throw error
      } catch {
        if error is CancellationError || Task.isCancelled { throw CancellationError() }
        emit(request, context, attempt, .transport(.other), .finish, started)
        throw NetworkingError.transport(TransportError(.other, detail: String(describing: error)))
      }

      lastError = attemptError
      let decision = decide(
        attempt: attempt, retryAfter: retryAfter, elapsed: context.elapsed(), budget: budget, cost: cost)
      emit(request, context, attempt, outcome, decision, started)
      switch decision {
      case .retry(let delay):
        if delay > .zero { try await configuration.clock.sleep(for: delay) }
        attempt += 1
        lastRetryCost = cost
      case .budgetExhausted:
        throw NetworkingError.retryBudgetExhausted(host: authority, lastError: attemptError)
      case .deadlineExceeded:
        throw NetworkingError.deadlineExceeded(lastError: attemptError)
      case .attemptsExhausted, .retryAfterTooLong, .finish, .refreshCredentials:
        // A failure response is returned for `send` to decode into its error (which, for `.retryAfterTooLong`, is
        // the server error carrying the requested wait in `ServerError.retryAfter`); a transport failure is thrown.
        if let failedResponse { return failedResponse }
        throw attemptError
      }
    }
  }

  private func decide(attempt: Int, retryAfter: Duration?, elapsed: Duration, budget: RetryBudget?, cost: Int)
    -> AttemptEvent.Decision
  {
    let policy = configuration.retryPolicy
    guard attempt < policy.maxAttempts else { return .attemptsExhausted }
    var delay = policy.backoff(afterAttempt: attempt, unit: configuration.random.next())
    if let retryAfter {
      // Never wait less than the server asked: a wait beyond the maximum ends the request (the error carries the
      // requested wait); one within it is honoured exactly, instead of the backoff.
      guard retryAfter <= policy.maxRetryAfter else { return .retryAfterTooLong(retryAfter) }
      delay = retryAfter
    }
    if let deadline = policy.deadline, elapsed + delay >= deadline { return .deadlineExceeded }
    if let budget, !budget.tryAcquire(cost) { return .budgetExhausted }
    return .retry(after: delay)
  }

  private func emit(
    _ request: PreparedRequest, _ context: AttemptContext, _ attempt: Int, _ outcome: AttemptEvent.Outcome,
    _ decision: AttemptEvent.Decision, _ started: Duration
  ) {
    guard let onAttempt = configuration.onAttempt else { return }
    onAttempt(
      AttemptEvent(
        method: request.head.method, pathTemplate: context.pathTemplate, authority: request.head.authority ?? "",
        attempt: attempt, outcome: outcome, decision: decision, idempotencyKey: context.idempotencyKey,
        duration: context.elapsed() - started))
  }

  private func compressBody(_ request: inout PreparedRequest) throws(NetworkingError) {
    guard let threshold = configuration.compressionThreshold, let body = request.body, body.count >= threshold,
      request.head.headerFields[.contentEncoding] == nil
    else { return }
    do {
      request.body = try Gzip.compress(body)
    } catch {
      throw .invalidRequest("gzip compression failed: \(error)")
    }
    request.head.headerFields[.contentEncoding] = "gzip"
  }

  /// The body after content decoding, within ``Configuration/maxResponseBytes``.
  func decodedBody(_ response: TransportResponse) throws(NetworkingError) -> Data {
    guard !transport.decodesContentEncoding, let encoding = response.head.headerFields[.contentEncoding],
      encoding.lowercased().contains("gzip")
    else { return response.body }
    do {
      return try Gzip.decompress(response.body, limit: configuration.maxResponseBytes)
    } catch .limitExceeded(let limit) {
      throw .responseTooLarge(limit: limit)
    } catch {
      throw .invalidContentEncoding(error.description)
    }
  }

  /// Decodes a final response: the success value, or the failure it stands for.
  func decode<Response>(
    _ response: TransportResponse, as decoding: ResponseDecoding<Response>, envelope: any ErrorEnvelope.Type
  ) throws(NetworkingError) -> Response {
    guard response.head.status.kind == .successful else { throw failure(response, envelope: envelope) }
    let body = try decodedBody(response)
    do {
      return try decoding.decode(body)
    } catch {
      throw .decoding(ResponseDecodingError(error, status: response.head.status))
    }
  }

  /// The error a failure response stands for: unauthorized for 401 or one of ``Configuration/tokenErrorCodes``,
  /// else a server error.
  func failure(_ response: TransportResponse, envelope: any ErrorEnvelope.Type) -> NetworkingError {
    let decoded = errorEnvelope(response, as: envelope)
    let error = ServerError(
      status: response.head.status, code: decoded?.code, message: decoded?.message,
      retryAfter: response.head.headerFields[.retryAfter].flatMap { RetryAfter.parse($0) })
    if response.head.status == .unauthorized || decoded.map({ configuration.tokenErrorCodes.contains($0.code) }) == true
    {
      return .unauthorized(error)
    }
    return .server(error)
  }

  /// Whether a response rejects the bearer token: 401, or a failure whose envelope code is a token error code.
  func rejectsToken(_ response: TransportResponse, envelope: any ErrorEnvelope.Type) -> Bool {
    if response.head.status == .unauthorized { return true }
    guard response.head.status.kind != .successful, !configuration.tokenErrorCodes.isEmpty,
      let code = errorEnvelope(response, as: envelope)?.code
    else { return false }
    return configuration.tokenErrorCodes.contains(code)
  }

  private func errorEnvelope(_ response: TransportResponse, as envelope: any ErrorEnvelope.Type) -> (any ErrorEnvelope)?
  {
    let body = (try? decodedBody(response)) ?? Data()
    return body.isEmpty ? nil : try? JSONDecoder().decode(envelope, from: body)
  }

  private static func stopwatch<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
    let start = clock.now
    return { start.duration(to: clock.now) }
  }
}

extension NetworkClient {
  /// Sends an endpoint without parameters or body.
  public func send<Response>(
    _ endpoint: Endpoint<Void, NoBody, Response>, headerFields: HTTPFields = [:], idempotencyKey: String? = nil
  ) async throws -> Response {
    try await send(endpoint, parameters: (), body: NoBody(), headerFields: headerFields, idempotencyKey: idempotencyKey)
  }

  /// Sends an endpoint without a body.
  public func send<Parameters, Response>(
    _ endpoint: Endpoint<Parameters, NoBody, Response>, parameters: Parameters, headerFields: HTTPFields = [:],
    idempotencyKey: String? = nil
  ) async throws -> Response {
    try await send(
      endpoint, parameters: parameters, body: NoBody(), headerFields: headerFields, idempotencyKey: idempotencyKey)
  }

  /// Sends an endpoint without parameters.
  public func send<Body, Response>(
    _ endpoint: Endpoint<Void, Body, Response>, body: Body, headerFields: HTTPFields = [:],
    idempotencyKey: String? = nil
  ) async throws -> Response {
    try await send(endpoint, parameters: (), body: body, headerFields: headerFields, idempotencyKey: idempotencyKey)
  }
}

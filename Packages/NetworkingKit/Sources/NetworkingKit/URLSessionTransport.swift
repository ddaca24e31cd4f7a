#if canImport(FoundationNetworking) || canImport(Foundation)
  import Foundation
  import HTTPTypes
  import HTTPTypesFoundation
  #if canImport(FoundationNetworking)
    import FoundationNetworking
  #endif

  /// An ``HTTPTransport`` over `URLSession`, the one Apple apps use (it also works on Linux through
  /// FoundationNetworking).
  public struct URLSessionTransport: HTTPTransport {
    /// The session requests go through.
    public let session: URLSession

    /// Creates a transport over `session` (by default an ephemeral session without caching or cookies).
    public init(session: URLSession = URLSessionTransport.makeSession()) {
      self.session = session
    }

    /// An ephemeral session: no cache, no cookies, no waiting for connectivity (so "no network" is told at once).
    public static func makeSession() -> URLSession {
      let configuration = URLSessionConfiguration.ephemeral
      configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
      configuration.httpCookieStorage = nil
      configuration.urlCache = nil
      #if !canImport(FoundationNetworking)
        configuration.waitsForConnectivity = false
      #endif
      return URLSession(configuration: configuration)
    }

    /// URLSession decodes gzip bodies itself (on Apple platforms and through libcurl on Linux).
    public var decodesContentEncoding: Bool { true }

    /// Sends one request with `URLRequest.timeoutInterval` set from the options.
    public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> TransportResponse {
      guard var urlRequest = URLRequest(httpRequest: request) else {
        throw TransportError(.other, detail: "not a valid URL: \(request)")
      }
      urlRequest.httpBody = body
      urlRequest.timeoutInterval = RetryPolicy.seconds(options.timeout)
      let data: Data
      let response: URLResponse
      do {
        (data, response) = try await session.data(for: urlRequest)
      } catch let error as URLError {
        if error.code == .cancelled && Task.isCancelled { throw CancellationError() }
        throw Self.classify(error)
      }
      guard let httpResponse = (response as? HTTPURLResponse)?.httpResponse else {
        throw TransportError(.other, detail: "not an HTTP response")
      }
      guard data.count <= options.maxResponseBytes else { throw ResponseTooLargeError(limit: options.maxResponseBytes) }
      return TransportResponse(head: httpResponse, body: data)
    }

    /// Maps URL loading errors onto the kinds the retry policy knows.
    public static func classify(_ error: URLError) -> TransportError {
      let detail = "\(error.code.rawValue) \(error.localizedDescription)"
      switch error.code {
      case .cannotConnectToHost: return TransportError(.connectionRefused, detail: detail)
      case .notConnectedToInternet, .cannotFindHost, .dnsLookupFailed, .internationalRoamingOff, .dataNotAllowed,
        .callIsActive:
        return TransportError(.noNetwork, detail: detail)
      case .timedOut: return TransportError(.timedOut, detail: detail)
      case .networkConnectionLost: return TransportError(.connectionLost, detail: detail)
      default: return TransportError(.other, detail: detail)
      }
    }
  }
#endif

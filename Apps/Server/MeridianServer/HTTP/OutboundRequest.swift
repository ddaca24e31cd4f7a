import Foundation
import HTTPTypes
import NetworkingKit

/// A request the server makes to a URL it was configured or told about (an SMS gateway, a webhook receiver) through
/// NetworkingKit: the URL split into the client's base (scheme, host, port; an IPv6 host bracketed) and a literal
/// path with its query, a raw body sent with an `Idempotency-Key`, and a client that neither compresses nor takes
/// gzip, knows no token errors and reads at most 64 KiB of an answer.
struct OutboundRequest: Sendable {
  /// `scheme://host[:port]`.
  let base: URL
  /// The raw-body endpoint for the path; its decoded answer is ignored (0).
  let endpoint: Endpoint<Void, Data, Int>

  /// The request to `url`; nil when the URL names no usable scheme and host.
  init?(url: URLComponents, method: HTTPRequest.Method, contentType: String, accept: String?) {
    let host = url.host ?? ""
    let authority =
      (host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host) + (url.port.map { ":\($0)" } ?? "")
    guard !host.isEmpty, let base = URL(string: "\(url.scheme ?? "https")://\(authority)") else { return nil }
    let path =
      (url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath)
      + (url.percentEncodedQuery.map { "?\($0)" } ?? "")
    self.base = base
    endpoint = Endpoint(
      method, PathTemplate(components: [.literal(path)]), body: .raw(contentType: contentType),
      response: ResponseDecoding(accept: accept) { _ in 0 }, idempotency: .key, authentication: .none)
  }

  /// The client configuration of such requests: `retryPolicy` and `attemptTimeout` per attempt, `budgets` shared by
  /// the caller's requests (nil: none), `userAgent` on every request.
  static func configuration(
    userAgent: String, retryPolicy: RetryPolicy, attemptTimeout: Duration, budgets: RetryBudgets?
  ) -> NetworkClient.Configuration {
    var configuration = NetworkClient.Configuration()
    configuration.retryPolicy = retryPolicy
    configuration.attemptTimeout = attemptTimeout
    configuration.retryBudgets = budgets
    configuration.compressionThreshold = nil
    configuration.acceptsGzip = false
    configuration.maxResponseBytes = 64 * 1024
    configuration.tokenErrorCodes = []
    configuration.defaultHeaderFields = [.userAgent: userAgent]
    return configuration
  }
}

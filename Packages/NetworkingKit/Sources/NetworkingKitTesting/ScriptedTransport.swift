import Foundation
import HTTPTypes
import NetworkingKit
import Synchronization

/// An in-memory ``HTTPTransport`` that answers from a script and records every request, for unit tests.
///
/// ```swift
/// let transport = ScriptedTransport([
///   .status(.serviceUnavailable, headerFields: [.retryAfter: "2"]),
///   .json(#"{"id":"42"}"#),
/// ])
/// ```
public final class ScriptedTransport: HTTPTransport, Sendable {
  /// One scripted answer.
  public enum Step: Sendable {
    /// Answer with this response.
    case response(TransportResponse)
    /// Fail with this transport error.
    case failure(TransportError)
    /// Compute the answer from the request.
    case handler(@Sendable (RecordedRequest) async throws -> TransportResponse)

    /// A response with a status, header fields and a UTF-8 body.
    public static func status(_ status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: String = "") -> Step
    {
      .response(TransportResponse(status: status, headerFields: headerFields, body: Data(body.utf8)))
    }

    /// A 200 response with a JSON body.
    public static func json(_ body: String, status: HTTPResponse.Status = .ok) -> Step {
      .response(
        TransportResponse(status: status, headerFields: [.contentType: "application/json"], body: Data(body.utf8)))
    }

    /// An error envelope `{"error":{"code":…,"message":…}}` with a status.
    public static func envelope(_ status: HTTPResponse.Status, code: String, message: String) -> Step {
      .json(#"{"error":{"code":"\#(code)","message":"\#(message)"}}"#, status: status)
    }
  }

  /// A request as the transport received it.
  public struct RecordedRequest: Sendable {
    /// The head.
    public var head: HTTPRequest
    /// The body.
    public var body: Data?
    /// The options.
    public var options: TransportOptions
  }

  private struct State {
    var steps: [Step]
    var requests: [RecordedRequest] = []
  }

  private let state: Mutex<State>
  private let fallback: Step?

  /// Creates a transport that answers with `steps` in order, then with `fallback` (or a 599 failure) when they run
  /// out.
  public init(_ steps: [Step], then fallback: Step? = nil) {
    self.state = Mutex(State(steps: steps))
    self.fallback = fallback
  }

  /// Every request received so far.
  public var requests: [RecordedRequest] { state.withLock { $0.requests } }

  /// Appends steps to the script.
  public func enqueue(_ steps: Step...) { state.withLock { $0.steps += steps } }

  /// Answers with the next step.
  public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> TransportResponse {
    let recorded = RecordedRequest(head: request, body: body, options: options)
    let step: Step? = state.withLock { state in
      state.requests.append(recorded)
      return state.steps.isEmpty ? fallback : state.steps.removeFirst()
    }
    switch step {
    case .response(let response): return response
    case .failure(let error): throw error
    case .handler(let handler): return try await handler(recorded)
    case nil: throw TransportError(.other, detail: "ScriptedTransport: script exhausted")
    }
  }
}

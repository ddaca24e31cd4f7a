#if canImport(FoundationNetworking) || canImport(Foundation)
  import Foundation
  import HTTPTypes
  import HTTPTypesFoundation
  import Synchronization
  #if canImport(FoundationNetworking)
    import FoundationNetworking
  #endif

  /// An ``HTTPTransport`` over `URLSession`, the one Apple apps use (it also works on Linux through
  /// FoundationNetworking).
  ///
  /// URLSession decodes `Content-Encoding: gzip` itself, without a limit, so the body is streamed and counted as it
  /// arrives (decoded): past ``TransportOptions/maxResponseBytes`` the URLSession task is cancelled and
  /// ``ResponseTooLargeError`` thrown, so a zip bomb costs at most the limit in memory. On Apple platforms the body is
  /// read with `URLSession.bytes(for:)` on ``session``; on Linux (FoundationNetworking has no `bytes(for:)`) through a
  /// data delegate on a session made once per transport from ``session``'s configuration. Cancelling the Swift task
  /// cancels the URLSession task.
  public struct URLSessionTransport: HTTPTransport {
    /// The session requests go through (on Linux, its configuration).
    public let session: URLSession
    #if canImport(FoundationNetworking)
      private let streaming: StreamingSession
    #endif

    /// Creates a transport over `session` (by default an ephemeral session without caching or cookies).
    public init(session: URLSession = URLSessionTransport.makeSession()) {
      self.session = session
      #if canImport(FoundationNetworking)
        self.streaming = StreamingSession(configuration: session.configuration)
      #endif
    }

    /// An ephemeral session: no cache, no cookies, no waiting for connectivity (so "no network" is told at once).
    public static func makeSession() -> URLSession {
      URLSession(configuration: makeConfiguration())
    }

    static func makeConfiguration() -> URLSessionConfiguration {
      let configuration = URLSessionConfiguration.ephemeral
      configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
      configuration.httpCookieStorage = nil
      configuration.urlCache = nil
      #if !canImport(FoundationNetworking)
        configuration.waitsForConnectivity = false
      #endif
      return configuration
    }

    /// URLSession decodes gzip bodies itself (on Apple platforms and through libcurl on Linux).
    public var decodesContentEncoding: Bool { true }

    /// Sends one request with `URLRequest.timeoutInterval` set from the options, streaming the body within
    /// `options.maxResponseBytes`.
    public func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> TransportResponse {
      guard var urlRequest = URLRequest(httpRequest: request) else {
        throw TransportError(.other, detail: "not a valid URL: \(request)")
      }
      urlRequest.httpBody = body
      urlRequest.timeoutInterval = RetryPolicy.seconds(options.timeout)
      let data: Data
      let response: URLResponse
      do {
        (data, response) = try await receive(urlRequest, limit: options.maxResponseBytes)
      } catch let error as ResponseTooLargeError {
        throw error
      } catch is CancellationError {
        throw CancellationError()
      } catch {
        guard let urlError = Self.urlError(error) else {
          if Task.isCancelled { throw CancellationError() }
          throw TransportError(.other, detail: String(describing: error))
        }
        if urlError.code == .cancelled && Task.isCancelled { throw CancellationError() }
        throw Self.classify(urlError)
      }
      guard let httpResponse = (response as? HTTPURLResponse)?.httpResponse else {
        throw TransportError(.other, detail: "not an HTTP response")
      }
      return TransportResponse(head: httpResponse, body: data)
    }

    #if canImport(FoundationNetworking)
      private func receive(_ urlRequest: URLRequest, limit: Int) async throws -> (Data, URLResponse) {
        let task = streaming.session.dataTask(with: urlRequest)
        let receiver = StreamingReceiver(limit: limit)
        streaming.delegate.register(receiver, for: task.taskIdentifier)
        defer { streaming.delegate.remove(task.taskIdentifier) }
        return try await withTaskCancellationHandler {
          try await withCheckedThrowingContinuation { continuation in
            if receiver.attach(continuation) { task.resume() }
          }
        } onCancel: {
          receiver.finish(.failure(CancellationError()))
          task.cancel()
        }
      }
    #else
      private func receive(_ urlRequest: URLRequest, limit: Int) async throws -> (Data, URLResponse) {
        let (bytes, response) = try await session.bytes(for: urlRequest)
        let task = bytes.task
        return try await withTaskCancellationHandler {
          var data = Data()
          if response.expectedContentLength > 0 {
            data.reserveCapacity(min(Int(response.expectedContentLength), limit))
          }
          for try await byte in bytes {
            guard data.count < limit else {
              task.cancel()
              throw ResponseTooLargeError(limit: limit)
            }
            data.append(byte)
          }
          return (data, response)
        } onCancel: {
          task.cancel()
        }
      }
    #endif

    /// The URL loading error behind `error`, if it is one.
    static func urlError(_ error: any Error) -> URLError? {
      if let error = error as? URLError { return error }
      let nsError = error as NSError
      // The initializer is failable on Linux only.
      let code: URLError.Code? = URLError.Code(rawValue: nsError.code)
      guard nsError.domain == NSURLErrorDomain, let code else { return nil }
      return URLError(code)
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

  #if canImport(FoundationNetworking)
    /// A session whose data delegate streams every task's body to its ``StreamingReceiver``; invalidated with the
    /// last transport that uses it (a session keeps its delegate until invalidated).
    final class StreamingSession: Sendable {
      let session: URLSession
      let delegate: StreamingDelegate

      init(configuration: URLSessionConfiguration) {
        let delegate = StreamingDelegate()
        self.delegate = delegate
        self.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
      }

      deinit {
        session.finishTasksAndInvalidate()
      }
    }

    /// Routes a session's task callbacks to the receiver registered for each task.
    final class StreamingDelegate: NSObject, URLSessionDataDelegate, Sendable {
      private let receivers = Mutex<[Int: StreamingReceiver]>([:])

      func register(_ receiver: StreamingReceiver, for identifier: Int) {
        receivers.withLock { $0[identifier] = receiver }
      }

      func remove(_ identifier: Int) {
        receivers.withLock { $0[identifier] = nil }
      }

      private func receiver(_ identifier: Int) -> StreamingReceiver? {
        receivers.withLock { $0[identifier] }
      }

      func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let receiver = receiver(dataTask.taskIdentifier) else { return }
        if !receiver.append(data) { dataTask.cancel() }
      }

      func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        receiver(task.taskIdentifier)?.complete(error: error, response: task.response)
      }
    }

    /// One task's body, counted as it arrives, and the continuation waiting for it.
    final class StreamingReceiver: Sendable {
      private struct State {
        var data = Data()
        var outcome: Result<(Data, URLResponse), any Error>?
        var continuation: CheckedContinuation<(Data, URLResponse), any Error>?
      }

      private let state = Mutex(State())
      private let limit: Int

      init(limit: Int) { self.limit = limit }

      /// Stores the continuation; `false` (and the continuation resumed) when the outcome is already known, e.g.
      /// cancelled before the task started.
      func attach(_ continuation: CheckedContinuation<(Data, URLResponse), any Error>) -> Bool {
        let outcome = state.withLock { state in
          if state.outcome == nil { state.continuation = continuation }
          return state.outcome
        }
        guard let outcome else { return true }
        continuation.resume(with: outcome)
        return false
      }

      /// Appends a chunk; `false` when the body passed the limit (the outcome is then ``ResponseTooLargeError``
      /// and the task must be cancelled).
      func append(_ chunk: Data) -> Bool {
        enum Verdict { case appended, settled, tooLarge }
        let verdict: Verdict = state.withLock { state in
          guard state.outcome == nil else { return .settled }
          guard state.data.count + chunk.count <= limit else {
            state.data = Data()
            return .tooLarge
          }
          state.data.append(chunk)
          return .appended
        }
        if verdict == .tooLarge { finish(.failure(ResponseTooLargeError(limit: limit))) }
        return verdict == .appended
      }

      func complete(error: (any Error)?, response: URLResponse?) {
        if let error {
          finish(.failure(error))
          return
        }
        let body = state.withLock { $0.data }
        guard let response else {
          finish(.failure(TransportError(.other, detail: "no response")))
          return
        }
        finish(.success((body, response)))
      }

      /// Settles the outcome once; later calls are ignored.
      func finish(_ result: Result<(Data, URLResponse), any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<(Data, URLResponse), any Error>? in
          guard state.outcome == nil else { return nil }
          state.outcome = result
          state.data = Data()
          defer { state.continuation = nil }
          return state.continuation
        }
        continuation?.resume(with: result)
      }
    }
  #endif
#endif

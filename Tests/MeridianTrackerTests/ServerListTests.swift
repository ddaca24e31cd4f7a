import Foundation
import MeridianTestSupport
import MeridianTracker
import NIOCore
import NetworkingKit
import Synchronization
import Testing

/// The tracker's list of servers: parsing, rotation, and the transport that moves on when a server doesn't answer.
@Suite("Tracker server list")
struct ServerListTests {
  @Test func repeatedAndCommaSeparatedServersMakeTheSameList() throws {
    let repeated = try ServerList(["http://127.0.0.1:8080", "http://127.0.0.1:8081"])
    let listed = try ServerList([" http://127.0.0.1:8080 , http://127.0.0.1:8081,"])
    #expect(repeated.servers == listed.servers)
    #expect(repeated.servers.map(\.authority) == ["127.0.0.1:8080", "127.0.0.1:8081"])
    #expect(repeated.description == "http://127.0.0.1:8080,http://127.0.0.1:8081")
    // One server reads and saves exactly as before.
    let one = try ServerList(["https://meridian.example/api"])
    #expect(one.description == "https://meridian.example/api")
    #expect(one.servers.map(\.basePath) == ["/api"])
    #expect(one.current.server.scheme == "https")
  }

  @Test func anythingButHTTPURLsIsRefusedWithTheCulprit() {
    #expect(throws: TrackerError.badArgument("give a server, e.g. --server http://127.0.0.1:8080")) {
      try ServerList([" , "])
    }
    #expect(throws: TrackerError.self) { try ServerList(["http://127.0.0.1:8080", "ftp://127.0.0.1"]) }
    do {
      _ = try ServerList(["http://127.0.0.1:8080,127.0.0.1:8081"])
      Issue.record("a URL without a scheme was accepted")
    } catch let error as TrackerError {
      #expect(error.description.contains("'127.0.0.1:8081'"))
    } catch {
      Issue.record("unexpected \(error)")
    }
  }

  @Test func movingOnGoesRoundAndAStaleFailureMovesNothing() throws {
    let list = try ServerList(["http://a:1,http://b:2,http://c:3"])
    #expect(list.current.position == 0)
    list.moveOn(from: 0)
    #expect(list.current.server.authority == "b:2")
    // A second request that failed on `a` at the same time doesn't skip `b`.
    list.moveOn(from: 0)
    #expect(list.current.position == 1)
    list.moveOn(from: 1)
    list.moveOn(from: 2)
    #expect(list.current.position == 0)
    // One server: moving on stays on it.
    let one = try ServerList(["http://a:1"])
    one.moveOn(from: 0)
    #expect(one.current.position == 0)
  }

  @Test func onlyFailuresBelowHTTPMeanTheServerDidNotAnswer() {
    #expect(ServerList.isUnanswered(TransportError(.connectionRefused)))
    #expect(ServerList.isUnanswered(TransportError(.connectionLost)))
    #expect(ServerList.isUnanswered(TransportError(.timedOut)))
    #expect(ServerList.isUnanswered(NetworkingError.transport(TransportError(.noNetwork))))
    #expect(!ServerList.isUnanswered(TransportError(.other, detail: "TLS")))
    #expect(!ServerList.isUnanswered(CancellationError()))
  }

  @Test func aRefusedRequestGoesToTheNextServerAtOnceWithItsBasePathAndKey() async throws {
    let refusing = try await closedPort()
    let answering = try await FakeHTTPServer.start { _ in .answer(#"{"ok":true}"#) }
    let list = try ServerList(["http://127.0.0.1:\(refusing)/api", "http://127.0.0.1:\(answering.port)/v2"])
    let transport = ServerListTransport(servers: list)
    let client = try NetworkClient(baseURL: list.servers[0].url, transport: transport)
    let body: [String: Bool] = try await client.send(
      ServerListTests.post, body: ["n": 1],
      idempotencyKey: "batch-1")
    #expect(body == ["ok": true])
    #expect(list.current.position == 1)
    // The request arrived once, on the answering server's base path, with its key.
    #expect(answering.requests.count == 1)
    #expect(answering.requests.first?.hasPrefix("POST /v2/fixes HTTP/1.1") == true)
    #expect(answering.requests.first?.lowercased().contains("idempotency-key: batch-1") == true)
    // The next request stays there.
    let again: [String: Bool] = try await client.send(
      ServerListTests.post, body: ["n": 2],
      idempotencyKey: "batch-2")
    #expect(again == ["ok": true])
    #expect(answering.requests.count == 2)
    try await transport.shutdown()
    try await answering.shutdown()
  }

  @Test func aLostConnectionMovesOnAndTheRetryPolicyResendsToTheNextServer() async throws {
    // The first server takes the request and drops the connection: it may have stored it, so the transport doesn't
    // re-send it by itself; the client's retry (allowed by the Idempotency-Key) goes to the second server.
    let dropping = try await FakeHTTPServer.start { _ in .drop }
    let answering = try await FakeHTTPServer.start { _ in .answer(#"{"ok":true}"#) }
    let list = try ServerList(["http://127.0.0.1:\(dropping.port)", "http://127.0.0.1:\(answering.port)"])
    let transport = ServerListTransport(servers: list)
    var configuration = NetworkClient.Configuration()
    configuration.retryPolicy = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(10))
    configuration.retryBudgets = nil
    let client = try NetworkClient(baseURL: list.servers[0].url, transport: transport, configuration: configuration)
    let endpoint = ServerListTests.post
    let body: [String: Bool] = try await client.send(endpoint, body: ["n": 1], idempotencyKey: "batch-1")
    #expect(body == ["ok": true])
    #expect(dropping.requests.count == 1)
    #expect(answering.requests.count == 1)
    #expect(list.current.position == 1)

    // Without retries the failure reaches the caller (who keeps the batch queued), and the list has moved on.
    configuration.retryPolicy = .none
    list.moveOn(from: 1)
    let once = try NetworkClient(baseURL: list.servers[0].url, transport: transport, configuration: configuration)
    await #expect(throws: NetworkingError.self) {
      let _: [String: Bool] = try await once.send(endpoint, body: ["n": 2], idempotencyKey: "batch-2")
    }
    #expect(dropping.requests.count == 2)
    #expect(answering.requests.count == 1)
    #expect(list.current.position == 1)
    try await transport.shutdown()
    try await dropping.shutdown()
    try await answering.shutdown()
  }

  @Test func whenNoServerAnswersTheRefusalIsReportedAfterTryingEachOnce() async throws {
    // Bound but never listening, and held for the whole test: no other test can take these ports meanwhile.
    let refusing = try [refusingPort(), refusingPort()]
    defer { for port in refusing { close(port.descriptor) } }
    let list = try ServerList(refusing.map { "http://127.0.0.1:\($0.port)" })
    let transport = ServerListTransport(servers: list)
    var configuration = NetworkClient.Configuration()
    configuration.retryPolicy = .none
    let client = try NetworkClient(baseURL: list.servers[0].url, transport: transport, configuration: configuration)
    do {
      let _: [String: Bool] = try await client.send(
        Endpoint<Void, NoBody, [String: Bool]>(.get, "/me", authentication: .none))
      Issue.record("a request to no server succeeded")
    } catch let error as NetworkingError {
      #expect(error.transportError?.kind == .connectionRefused)
    }
    // Both were tried: the list is back at the first.
    #expect(list.current.position == 0)
    try await transport.shutdown()
  }

  /// A POST that carries an `Idempotency-Key`, so the client may retry it.
  static let post = Endpoint<Void, [String: Int], [String: Bool]>(
    .post, "/fixes", idempotency: .key, authentication: .none)

  /// A port nothing listens on: bound by the OS, then closed.
  /// A loopback port that refuses connections while `descriptor` stays open (a socket bound to it, not listening).
  func refusingPort() throws -> (port: Int, descriptor: Int32) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
      }
    }
    guard bound else {
      close(descriptor)
      throw POSIXError(.EADDRNOTAVAIL)
    }
    return (Int(UInt16(bigEndian: address.sin_port)), descriptor)
  }

  func closedPort() async throws -> Int {
    let (server, port) = try await listenOnLoopback()
    try await server.channel.close()
    return port
  }
}

/// An HTTP/1.1 server on loopback that answers each request, or drops its connection, as told; it records every
/// request's head.
final class FakeHTTPServer: Sendable {
  enum Reply: Sendable {
    case answer(String)
    case drop
  }

  /// The heads of the requests received, in order.
  final class RequestLog: Sendable {
    private let heads = Mutex<[String]>([])
    func append(_ head: String) { heads.withLock { $0.append(head) } }
    var all: [String] { heads.withLock { $0 } }
  }

  let port: Int
  private let channel: any Channel
  private let task: Task<Void, any Error>
  private let log: RequestLog

  /// The heads of the requests received, in order.
  var requests: [String] { log.all }

  private init(port: Int, channel: any Channel, task: Task<Void, any Error>, log: RequestLog) {
    self.port = port
    self.channel = channel
    self.task = task
    self.log = log
  }

  static func start(_ reply: @escaping @Sendable (String) -> Reply) async throws -> FakeHTTPServer {
    let (server, port) = try await listenOnLoopback()
    let log = RequestLog()
    let task = Task<Void, any Error> {
      try await server.executeThenClose { connections in
        for try await connection in connections {
          try? await connection.executeThenClose { inbound, outbound in
            var received = ""
            for try await var buffer in inbound {
              received += buffer.readString(length: buffer.readableBytes) ?? ""
              guard let end = received.range(of: "\r\n\r\n") else { continue }
              let head = String(received[..<end.lowerBound])
              let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
              guard received.utf8.count >= received[..<end.upperBound].utf8.count + length else { continue }
              log.append(head)
              switch reply(head) {
              case .drop: return
              case .answer(let json):
                try await outbound.write(
                  ByteBuffer(
                    string: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)"
                      + "\r\nConnection: close\r\n\r\n" + json))
                return
              }
            }
          }
        }
      }
    }
    return FakeHTTPServer(port: port, channel: server.channel, task: task, log: log)
  }

  func shutdown() async throws {
    try? await channel.close()
    task.cancel()
    _ = await task.result
  }
}

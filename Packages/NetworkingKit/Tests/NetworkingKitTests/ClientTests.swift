import Foundation
import HTTPTypes
import NetworkingKit
import NetworkingKitTestSupport
import NetworkingKitTesting
import Testing

struct Harness {
  let transport: ScriptedTransport
  let clock: TestClock
  let events = AttemptRecorder()
  let client: NetworkClient

  init(
    _ steps: [ScriptedTransport.Step],
    clock: TestClock = TestClock(),
    credentials: (any CredentialsProvider)? = nil,
    configure: (inout NetworkClient.Configuration) -> Void = { _ in }
  ) throws {
    transport = ScriptedTransport(steps)
    self.clock = clock
    var configuration = NetworkClient.Configuration()
    configuration.clock = clock
    configuration.random = .constant(0.5)
    configuration.onAttempt = events.record
    configure(&configuration)
    client = try NetworkClient(
      baseURL: URL(string: "http://api.test")!, transport: transport, credentials: credentials,
      configuration: configuration)
  }
}

let profileJSON = SampleProfile.json

@Suite struct DecodingTests {
  @Test func successDecodes() async throws {
    let harness = try Harness([.json(profileJSON)])
    let profile = try await harness.client.send(API.profile, parameters: UserRef(id: "42"))
    #expect(profile == Profile(id: "42", name: "Anna"))
    #expect(harness.transport.requests.first?.head.path == "/v1/users/42/profile")
  }

  @Test func errorEnvelopeBecomesServerError() async throws {
    let harness = try Harness([.envelope(.notFound, code: "user_not_found", message: "No such user")])
    let error = await #expect(throws: NetworkingError.self) {
      try await harness.client.send(API.profile, parameters: UserRef(id: "7"))
    }
    guard case .server(let server) = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(server.status == .notFound)
    #expect(server.code == "user_not_found")
    #expect(server.message == "No such user")
  }

  @Test func unauthorizedAndTokenCodesAreTheirOwnError() async throws {
    for step in [
      ScriptedTransport.Step.envelope(.unauthorized, code: "token_invalid", message: "expired"),
      .envelope(.forbidden, code: "token_expired", message: "expired"),
      .status(.unauthorized),
    ] {
      let harness = try Harness([step])
      let error = await #expect(throws: NetworkingError.self) { try await harness.client.send(API.me) }
      guard case .unauthorized = error else {
        Issue.record("got \(String(describing: error))")
        continue
      }
    }
  }

  @Test func decodingFailureNamesTheFieldPath() async throws {
    let body =
      #"{"deviceId":"d","fixes":[{"lat":1,"lon":2},{"lat":1,"lon":2},{"lat":1,"lon":2},{"lat":"north","lon":2}]}"#
    let endpoint = Endpoint<Void, NoBody, FixBatch>(.get, "/batch")
    let harness = try Harness([.json(body)])
    let error = await #expect(throws: NetworkingError.self) { try await harness.client.send(endpoint) }
    guard case .decoding(let decoding) = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(decoding.fieldPath == "fixes[3].lat")

    let missing = try Harness([.json(#"{"id":"1"}"#)])
    let missingError = await #expect(throws: NetworkingError.self) { try await missing.client.send(API.me) }
    guard case .decoding(let missingField) = missingError else {
      Issue.record("wrong error")
      return
    }
    #expect(missingField.fieldPath == "name")
    #expect(missingField.reason == "missing")
  }

  @Test func gzipResponsesAreDecodedWithinTheLimit() async throws {
    let compressed = try Gzip.compress(Data(profileJSON.utf8))
    let response = TransportResponse(
      status: .ok, headerFields: [.contentEncoding: "gzip", .contentType: "application/json"], body: compressed)
    let harness = try Harness([.response(response)])
    #expect(try await harness.client.send(API.me) == Profile(id: "42", name: "Anna"))

    let bomb = try Gzip.compress(Data(count: 5_000_000))
    #expect(bomb.count < 10_000)
    let bombHarness = try Harness(
      [.response(TransportResponse(status: .ok, headerFields: [.contentEncoding: "gzip"], body: bomb))],
      configure: { $0.maxResponseBytes = 1_000_000 })
    let error = await #expect(throws: NetworkingError.self) { try await bombHarness.client.send(API.me) }
    guard case .responseTooLarge(let limit) = error else {
      Issue.record("got \(String(describing: error))")
      return
    }
    #expect(limit == 1_000_000)
  }

  @Test func largeRequestBodiesAreCompressed() async throws {
    let harness = try Harness([.json(#"{"accepted":500}"#), .json(#"{"accepted":1}"#)])
    let big = FixBatch(deviceId: "d", fixes: Array(repeating: Fix(lat: 52.5, lon: 13.4), count: 500))
    _ = try await harness.client.send(API.postFixes, body: big)
    let sent = try #require(harness.transport.requests.first)
    #expect(sent.head.headerFields[.contentEncoding] == "gzip")
    let restored = try Gzip.decompress(sent.body ?? Data(), limit: 1 << 20)
    #expect(try JSONDecoder().decode(FixBatch.self, from: restored) == big)

    _ = try await harness.client.send(API.postFixes, body: FixBatch(deviceId: "d", fixes: []))
    #expect(harness.transport.requests[1].head.headerFields[.contentEncoding] == nil)
  }
}

@Suite struct GzipTests {
  @Test func roundTripsAndDetectsCorruption() throws {
    let text = Data(String(repeating: "Meridian ", count: 1000).utf8)
    let compressed = try Gzip.compress(text)
    #expect(compressed.prefix(2) == Data([0x1F, 0x8B]))
    #expect(try Gzip.decompress(compressed, limit: text.count) == text)
    #expect(throws: Gzip.Failure.limitExceeded(limit: text.count - 1)) {
      try Gzip.decompress(compressed, limit: text.count - 1)
    }
    #expect(try Gzip.decompress(Gzip.compress(Data()), limit: 0) == Data())
    #expect(throws: Gzip.Failure.self) { try Gzip.decompress(Data(), limit: 100) }
    #expect(throws: Gzip.Failure.self) { try Gzip.decompress(Data("not gzip".utf8), limit: 100) }
    #expect(throws: Gzip.Failure.self) { try Gzip.decompress(compressed.prefix(compressed.count / 2), limit: 1 << 20) }
  }

  @Test func testBombIsValidGzipOfZeros() throws {
    let bomb = GzipBomb.make(megabytes: 4)
    #expect(bomb.count < 8 * 1024)
    let inflated = try Gzip.decompress(Data(bomb), limit: 4 << 20)  // checks the CRC-32 and size too
    #expect(inflated.count == 4 << 20)
    #expect(inflated.allSatisfy { $0 == 0 })
    #expect(throws: Gzip.Failure.limitExceeded(limit: 1 << 20)) { try Gzip.decompress(Data(bomb), limit: 1 << 20) }
    #expect(GzipBomb.make(megabytes: 1024).count < 1_100_000)
  }
}

import DomainKit
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import Testing

@Suite struct SecurityTests {
  @Test func sha256MatchesTheFIPSVectors() {
    // FIPS 180-2 appendix B.1 and the empty message.
    #expect(SecretHash.sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(SecretHash.sha256("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
  }

  @Test func tokensAndCodesAreWellFormed() {
    let tokens = Set((0..<100).map { _ in Secrets.token() })
    #expect(tokens.count == 100)
    #expect(tokens.allSatisfy { $0.count == 43 && !$0.contains("=") && !$0.contains("/") && !$0.contains("+") })
    let codes = (0..<200).map { _ in Secrets.otpCode() }
    #expect(codes.allSatisfy { $0.count == 6 && $0.allSatisfy(\.isNumber) })
  }

  @Test func rateLimiterCountsPerKeyAndWindow() async {
    let limiter = RateLimiter(limit: 2, window: 1000)
    #expect(await limiter.allow("a", now: 0))
    #expect(await limiter.allow("a", now: 10))
    #expect(await limiter.allow("a", now: 20) == false)
    #expect(await limiter.allow("b", now: 20))
    #expect(await limiter.allow("a", now: 1000))
  }

  @Test func historyCursorRoundTrips() {
    let cursor = HistoryCursor(timestamp: 1_700_000_000_000, row: 42)
    #expect(HistoryCursor(text: cursor.text) == cursor)
    #expect(HistoryCursor(text: "nope") == nil)
  }

  @Test func everyEndpointHasADistinctRoute() {
    let routes = API.all.map { "\($0.method.rawValue) \($0.pathTemplate)" }
    #expect(Set(routes).count == routes.count)
    #expect(routes.contains("POST /v1/fixes"))
    #expect(routes.contains("PUT /v1/groups/{id}/members/{userId}"))
  }
}

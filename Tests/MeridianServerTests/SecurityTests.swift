import Crypto
import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
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

  @Test func base64URLMatchesRFC4648AndFoundation() {
    // RFC 4648 §10, padding left out; then bytes whose digits are the two URL-safe ones.
    let vectors = [
      "": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy",
    ]
    for (text, expected) in vectors { #expect(Base64URL.encode(Array(text.utf8)) == expected) }
    #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
    var generator = SystemRandomNumberGenerator()
    for count in 0..<40 {
      let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
      let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
      #expect(Base64URL.encode(bytes) == foundation)
    }
  }

  @Test func deviceHandlesKeepTheirSpelling() {
    // The handle viewers already hold must not change with its encoder: "d" and the first 12 bytes of the HMAC.
    let handles = DeviceHandles(secret: Data(repeating: 7, count: 32))
    let handle = handles.handle(of: DeviceID("anna-phone"), owner: UserID("anna"))
    let mac = HMAC<SHA256>.authenticationCode(
      for: Data("anna\nanna-phone".utf8), using: SymmetricKey(data: Data(repeating: 7, count: 32)))
    let expected = Data(mac.prefix(12)).base64EncodedString().replacingOccurrences(of: "+", with: "-")
      .replacingOccurrences(of: "/", with: "_")
    #expect(handle.rawValue == "d" + expected)
    #expect(handle.rawValue.count == 17)
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

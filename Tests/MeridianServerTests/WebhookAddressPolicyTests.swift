import MeridianAPI
import Testing

@testable import MeridianServer

/// IPv6 forms that carry an IPv4 address are classed by that address, so none of them reaches a non-public one.
@Suite struct WebhookAddressPolicyTests {
  /// Every IPv6 form that embeds a loopback, private, link-local or metadata IPv4 address (RFC 4291 mapped and
  /// compatible, RFC 6052 NAT64, RFC 3056 6to4, RFC 4380 Teredo), with the class it must get.
  static let embedded: [(url: String, kind: WebhookAddressPolicy.AddressClass)] = [
    ("http://[::ffff:127.0.0.1]/hook", .loopback),
    ("http://[::127.0.0.1]/hook", .loopback),
    ("http://[::10.0.0.1]/hook", .private),
    ("http://[64:ff9b::127.0.0.1]/hook", .loopback),
    ("http://[64:ff9b::a9fe:a9fe]/hook", .metadata),
    ("http://[64:ff9b:1::808:808]/hook", .private),
    ("http://[2002:7f00:1::1]/hook", .loopback),
    ("http://[2002:c0a8:1::1]/hook", .private),
    ("http://[2002:a9fe:a9fe::1]/hook", .metadata),
    ("http://[2002:a9fe:1::1]/hook", .linkLocal),
    // Teredo: server 127.0.0.1; then server public and client 10.0.0.1 (stored inverted: f5ff:fffe).
    ("http://[2001:0:7f00:1::1]/hook", .loopback),
    ("http://[2001:0:808:808:0:0:f5ff:fffe]/hook", .private),
  ]

  @Test(arguments: embedded)
  func ipv6FormsEmbeddingANonPublicIPv4AddressAreRefused(url: String, kind: WebhookAddressPolicy.AddressClass)
    async throws
  {
    let host = try #require(WebhookAddressPolicy.parse(url).host)
    #expect(WebhookAddressPolicy.classify(try #require(WebhookAddressPolicy.literal(host))) == kind)
    let policy = WebhookAddressPolicy(allowPrivateAddresses: false)
    do {
      try await policy.check(url)
      Issue.record("\(url) was accepted")
    } catch {
      #expect(error.code == .webhookAddressForbidden && error.status == 422)
    }
  }

  @Test func ipv6FormsEmbeddingAPublicIPv4AddressStayPublic() throws {
    for host in ["::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2001:0:808:808::f7f7:f7f7", "2a00:1450::1"] {
      #expect(WebhookAddressPolicy.classify(try #require(WebhookAddressPolicy.literal(host))) == .public, "\(host)")
    }
  }
}

import DomainKit
import Foundation
import MeridianAPI
import NIOPosix

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Which addresses may receive webhooks: public ones only, unless the operator allows private ones. Checked when a
/// URL is registered and again before every delivery, on the addresses its host resolves to then; the delivery
/// connects to one of those checked addresses and never resolves the name again (DNS rebinding).
public struct WebhookAddressPolicy: Sendable {
  /// Whether loopback, private and link-local addresses are allowed (never the metadata addresses).
  public var allowPrivateAddresses: Bool
  /// Resolves a host name (not an IP literal) to its IPv4 (4 bytes) and IPv6 (16 bytes) addresses; the system
  /// resolver unless replaced (tests).
  public var resolver: @Sendable (_ host: String) async throws -> [[UInt8]] = { host in
    try await NIOThreadPool.singleton.runIfActive { try WebhookAddressPolicy.lookUp(host) }
  }

  /// A policy resolving with the system resolver.
  public init(allowPrivateAddresses: Bool) { self.allowPrivateAddresses = allowPrivateAddresses }

  /// What an address is, for the policy.
  public enum AddressClass: String, Sendable, Hashable {
    /// Routable on the internet.
    case `public`
    /// Loopback (127/8, ::1).
    case loopback
    /// Private or otherwise non-public (RFC 1918, CGNAT, ULA, unspecified, multicast, reserved).
    case `private`
    /// Link-local (169.254/16, fe80::/10).
    case linkLocal = "link-local"
    /// A cloud metadata service (169.254.169.254, fd00:ec2::254).
    case metadata
  }

  /// The URL, checked: `http` or `https`, a host, no user info.
  /// - Throws: ``APIError`` `422 webhook_url_invalid`.
  public static func parse(_ text: String) throws(APIError) -> URLComponents {
    guard text.utf8.count <= 2048, let components = URLComponents(string: text),
      let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
      let host = components.host, !host.isEmpty, components.user == nil, components.password == nil
    else {
      throw APIError(
        status: 422, code: .webhookURLInvalid,
        message:
          "A webhook URL must be an absolute http or https URL with a host and no user name (at most 2,048 bytes).")
    }
    return components
  }

  /// Checks `text` and the addresses its host resolves to now (resolved once); returns those addresses, IPv4 first,
  /// for the caller to connect to.
  /// - Throws: ``APIError`` `422 webhook_url_invalid` (bad URL, host that doesn't resolve) or
  ///   `422 webhook_address_forbidden`.
  @discardableResult
  public func check(_ text: String) async throws(APIError) -> [[UInt8]] {
    let components = try Self.parse(text)
    let host = components.host ?? ""
    let addresses: [[UInt8]]
    do {
      addresses = try await resolve(host)
    } catch {
      throw APIError(
        status: 422, code: .webhookURLInvalid,
        message: "The webhook host \(QuotedValue.quote(host)) does not resolve: \(error)")
    }
    for address in addresses {
      let kind = Self.classify(address)
      guard allows(kind) else {
        throw APIError(
          status: 422, code: .webhookAddressForbidden,
          message: "The webhook host \(QuotedValue.quote(host)) is (or resolves to) a \(kind.rawValue) address, "
            + "\(Self.format(address)); only public addresses may receive webhooks"
            + (kind == .metadata ? "." : " unless the operator sets MERIDIAN_WEBHOOK_ALLOW_PRIVATE=true."))
      }
    }
    return addresses.filter { $0.count == 4 } + addresses.filter { $0.count != 4 }
  }

  /// Whether an address of `kind` may receive webhooks.
  public func allows(_ kind: AddressClass) -> Bool {
    switch kind {
    case .public: true
    case .metadata: false
    case .loopback, .private, .linkLocal: allowPrivateAddresses
    }
  }

  /// The class of an IPv4 (4 bytes) or IPv6 (16 bytes) address. An IPv6 address that carries an IPv4 address
  /// (``embeddedIPv4(_:)``) is no more public than the least public of them.
  public static func classify(_ bytes: [UInt8]) -> AddressClass {
    if bytes.count == 4 { return classifyV4(bytes) }
    guard bytes.count == 16 else { return .private }
    if bytes == [UInt8](repeating: 0, count: 15) + [1] { return .loopback }
    if bytes == [0xfd, 0x00, 0x0e, 0xc2] + [UInt8](repeating: 0, count: 10) + [0x02, 0x54] { return .metadata }
    if bytes.allSatisfy({ $0 == 0 }) { return .private }
    if bytes.starts(with: [0, 0x64, 0xff, 0x9b, 0, 1]) { return .private }  // 64:ff9b:1::/48 local-use NAT64
    let embedded = embeddedIPv4(bytes)
    if !embedded.isEmpty {
      let classes = embedded.map(classifyV4)
      let order: [AddressClass] = [.metadata, .loopback, .linkLocal, .private]
      return order.first(where: classes.contains) ?? .public
    }
    if bytes[0] & 0xfe == 0xfc { return .private }  // fc00::/7 unique local
    if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80 { return .linkLocal }  // fe80::/10
    if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0xc0 { return .private }  // fec0::/10 site-local (deprecated)
    if bytes[0] == 0xff { return .private }  // multicast
    if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x0d && bytes[3] == 0xb8 { return .private }  // doc
    return .public
  }

  /// The IPv4 addresses an IPv6 address reaches or stands for: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
  /// (`::a.b.c.d`, deprecated), NAT64 (`64:ff9b::a.b.c.d`), 6to4 (`2002:AABB:CCDD::/48`) and Teredo (`2001::/32`: its
  /// server, and its client, stored inverted); none for any other address.
  static func embeddedIPv4(_ bytes: [UInt8]) -> [[UInt8]] {
    guard bytes.count == 16 else { return [] }
    let prefix = Array(bytes.prefix(12))
    let last = Array(bytes.suffix(4))
    if prefix == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] { return [last] }
    if prefix == [UInt8](repeating: 0, count: 12) { return [last] }
    if prefix == [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] { return [last] }
    if bytes[0] == 0x20, bytes[1] == 0x02 { return [Array(bytes[2..<6])] }
    if bytes.starts(with: [0x20, 0x01, 0, 0]) { return [Array(bytes[4..<8]), last.map { ~$0 }] }
    return []
  }

  private static func classifyV4(_ b: [UInt8]) -> AddressClass {
    if b == [169, 254, 169, 254] { return .metadata }
    switch (b[0], b[1]) {
    case (127, _): return .loopback
    case (169, 254): return .linkLocal
    case (0, _), (10, _), (192, 168): return .private
    case (172, 16...31), (100, 64...127), (198, 18...19): return .private
    case (192, 0) where b[2] == 0 || b[2] == 2: return .private  // IETF assignments, TEST-NET-1
    case (198, 51) where b[2] == 100, (203, 0) where b[2] == 113: return .private  // TEST-NET-2, -3
    case (224...255, _): return .private  // multicast, reserved, broadcast
    default: return .public
    }
  }

  /// The addresses `host` stands for: itself when it is an IP literal, else what the resolver answers.
  func resolve(_ host: String) async throws -> [[UInt8]] {
    if let literal = Self.literal(host) { return [literal] }
    let addresses = try await resolver(host)
    guard !addresses.isEmpty else { throw ResolutionError(message: "no IPv4 or IPv6 address") }
    return addresses
  }

  /// The address of an IP literal host (IPv6 with or without brackets), nil for a name.
  static func literal(_ host: String) -> [UInt8]? {
    let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    return literal(bare: bare)
  }

  private static func literal(bare text: String) -> [UInt8]? {
    var v4 = in_addr()
    if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
    return nil
  }

  static func lookUp(_ host: String) throws -> [[UInt8]] {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    #if canImport(Glibc)
      hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #else
      hints.ai_socktype = SOCK_STREAM
    #endif
    var result: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, nil, &hints, &result)
    guard status == 0, let first = result else {
      throw ResolutionError(message: String(cString: gai_strerror(status)))
    }
    defer { freeaddrinfo(first) }
    var addresses: [[UInt8]] = []
    var next: UnsafeMutablePointer<addrinfo>? = first
    while let info = next {
      if let address = info.pointee.ai_addr {
        switch Int32(info.pointee.ai_family) {
        case AF_INET:
          var value = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
          addresses.append(withUnsafeBytes(of: &value) { Array($0) })
        case AF_INET6:
          var value = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
          addresses.append(withUnsafeBytes(of: &value) { Array($0) })
        default: break
        }
      }
      next = info.pointee.ai_next
    }
    guard !addresses.isEmpty else { throw ResolutionError(message: "no IPv4 or IPv6 address") }
    return addresses
  }

  /// A dotted or colon form of an address, for messages.
  static func format(_ bytes: [UInt8]) -> String {
    if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
    return stride(from: 0, to: bytes.count, by: 2).map {
      String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
    }
    .joined(separator: ":")
  }

  struct ResolutionError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }
}

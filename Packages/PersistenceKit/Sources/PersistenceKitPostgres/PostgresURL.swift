import Foundation
import PostgresNIO

/// A PostgreSQL connection URL, as libpq spells it.
///
/// Accepted forms:
/// - `postgres://user[:password]@host[:port]/database[?sslmode=disable]` (`postgresql://` too; IPv6 hosts in
///   brackets, e.g. `[::1]`; user, password and database percent-encoded where needed)
/// - `postgres:///database?host=/path/to/dir` for a Unix socket: `host` names the socket's directory, and the
///   socket is `dir/.s.PGSQL.<port>` (a percent-encoded `%2Fpath` host in the authority works too)
///
/// Query parameters: `sslmode` (`disable`, `allow`, `prefer` — the default —, `require`, `verify-ca`,
/// `verify-full`), `host`, `port`, `user`, `password`, `dbname`, `application_name`, `connect_timeout` (seconds).
/// A missing user is the operating-system user's name, a missing database the user's name, as with libpq.
///
/// ``description`` never shows the password.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
  /// Where the server listens.
  public enum Endpoint: Sendable, Hashable {
    /// A TCP host name or address, and port.
    case tcp(host: String, port: Int)
    /// A Unix socket: the directory that holds `.s.PGSQL.<port>`, and the port that names it.
    case unixSocket(directory: String, port: Int)
  }

  /// How the connection uses TLS (libpq's `sslmode`).
  public enum TLSMode: String, Sendable, Hashable, CaseIterable {
    /// Never.
    case disable
    /// libpq tries plain text first; PostgresNIO has no such mode, so this behaves like `prefer`.
    case allow
    /// TLS when the server offers it (libpq's default), certificates verified.
    case prefer
    /// TLS required, certificate not verified (libpq's `require`).
    case require
    /// TLS required, certificate chain verified, host name not.
    case verifyCA = "verify-ca"
    /// TLS required, certificate chain and host name verified.
    case verifyFull = "verify-full"
  }

  /// The role to connect as.
  public var user: String
  /// The password, if any; never printed by ``description``.
  public var password: String?
  /// The server's address.
  public var endpoint: Endpoint
  /// The database to connect to.
  public var database: String
  /// The TLS mode.
  public var tls: TLSMode
  /// `application_name`, shown in `pg_stat_activity`.
  public var applicationName: String?
  /// How long to wait for a connection, in seconds (`connect_timeout`); `nil` for the driver's default (10 s).
  public var connectTimeout: Int?

  /// Creates a URL from its parts.
  public init(
    user: String,
    password: String? = nil,
    endpoint: Endpoint,
    database: String,
    tls: TLSMode = .prefer,
    applicationName: String? = nil,
    connectTimeout: Int? = nil
  ) {
    self.user = user
    self.password = password
    self.endpoint = endpoint
    self.database = database
    self.tls = tls
    self.applicationName = applicationName
    self.connectTimeout = connectTimeout
  }

  /// Parses `string`.
  ///
  /// - Throws: ``PostgresURLError`` saying what is wrong; its message never includes the password.
  public init(_ string: String) throws(PostgresURLError) {
    self = try PostgresURLParser.parse(string)
  }

  /// This URL with another database, e.g. to reach `postgres` for `CREATE DATABASE`.
  public func with(database: String) -> PostgresURL {
    var copy = self
    copy.database = database
    return copy
  }

  /// The URL with the password replaced by `***`.
  public var description: String { string(revealingPassword: false) }

  /// The URL as a string that parses back to this value; the password is included only when asked.
  public func string(revealingPassword: Bool) -> String {
    var result = "postgres://" + Self.encode(user)
    if let password { result += ":" + (revealingPassword ? Self.encode(password) : "***") }
    var query: [String] = []
    switch endpoint {
    case .tcp(let host, let port):
      result += "@" + (host.contains(":") ? "[\(host)]" : Self.encode(host)) + ":\(port)"
    case .unixSocket(let directory, let port):
      result += "@"
      query.append("host=" + Self.encode(directory))
      query.append("port=\(port)")
    }
    result += "/" + Self.encode(database)
    if tls != .prefer { query.append("sslmode=" + tls.rawValue) }
    if let applicationName { query.append("application_name=" + Self.encode(applicationName)) }
    if let connectTimeout { query.append("connect_timeout=\(connectTimeout)") }
    if !query.isEmpty { result += "?" + query.joined(separator: "&") }
    return result
  }

  /// The configuration of a PostgresNIO connection pool for this URL.
  public var clientConfiguration: PostgresClient.Configuration {
    var configuration: PostgresClient.Configuration
    switch endpoint {
    case .tcp(let host, let port):
      configuration = PostgresClient.Configuration(
        host: host, port: port, username: user, password: password, database: database, tls: clientTLS)
    case .unixSocket:
      configuration = PostgresClient.Configuration(
        unixSocketPath: socketPath ?? "", username: user, password: password, database: database)
    }
    if let connectTimeout { configuration.options.connectTimeout = .seconds(connectTimeout) }
    if let applicationName {
      configuration.options.additionalStartupParameters = [("application_name", applicationName)]
    }
    return configuration
  }

  /// The configuration of a single PostgresNIO connection for this URL.
  ///
  /// - Throws: NIOSSL's error when a TLS context can't be made.
  public func connectionConfiguration() throws -> PostgresConnection.Configuration {
    var configuration: PostgresConnection.Configuration
    switch endpoint {
    case .tcp(let host, let port):
      let tls: PostgresConnection.Configuration.TLS =
        switch tls {
        case .disable: .disable
        case .allow, .prefer: .prefer(try NIOSSLContext(configuration: tlsConfiguration))
        case .require, .verifyCA, .verifyFull: .require(try NIOSSLContext(configuration: tlsConfiguration))
        }
      configuration = PostgresConnection.Configuration(
        host: host, port: port, username: user, password: password, database: database, tls: tls)
    case .unixSocket:
      configuration = PostgresConnection.Configuration(
        unixSocketPath: socketPath ?? "", username: user, password: password, database: database)
    }
    if let connectTimeout { configuration.options.connectTimeout = .seconds(Int64(connectTimeout)) }
    if let applicationName {
      configuration.options.additionalStartupParameters = [("application_name", applicationName)]
    }
    return configuration
  }

  /// The path of the Unix socket, for a ``Endpoint/unixSocket(directory:port:)`` endpoint.
  public var socketPath: String? {
    guard case .unixSocket(let directory, let port) = endpoint else { return nil }
    return (directory.hasSuffix("/") ? String(directory.dropLast()) : directory) + "/.s.PGSQL.\(port)"
  }

  private var clientTLS: PostgresClient.Configuration.TLS {
    switch tls {
    case .disable: .disable
    case .allow, .prefer: .prefer(tlsConfiguration)
    case .require, .verifyCA, .verifyFull: .require(tlsConfiguration)
    }
  }

  private var tlsConfiguration: TLSConfiguration {
    var configuration = TLSConfiguration.makeClientConfiguration()
    switch tls {
    case .disable, .allow, .prefer, .verifyFull: break
    case .require: configuration.certificateVerification = .none
    case .verifyCA: configuration.certificateVerification = .noHostnameVerification
    }
    return configuration
  }

  private static func encode(_ text: String) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
  }
}

/// A PostgreSQL URL that can't be used, and why. The message never contains the password.
public struct PostgresURLError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What is wrong.
  public var reason: String

  /// Creates an error.
  public init(reason: String) {
    self.reason = reason
  }

  /// The reason, with the accepted form.
  public var description: String {
    "Invalid PostgreSQL URL: \(reason). Expected postgres://user[:password]@host[:port]/database[?sslmode=disable] "
      + "or postgres:///database?host=/socket/directory"
  }
}

enum PostgresURLParser {
  static func parse(_ string: String) throws(PostgresURLError) -> PostgresURL {
    let text = string.trimmingCharacters(in: .whitespaces)
    guard !text.isEmpty else { throw PostgresURLError(reason: "the URL is empty") }
    guard let schemeEnd = text.range(of: "://") else {
      throw PostgresURLError(reason: "it has no scheme (it must start with postgres:// or postgresql://)")
    }
    let scheme = text[..<schemeEnd.lowerBound].lowercased()
    guard scheme == "postgres" || scheme == "postgresql" else {
      throw PostgresURLError(reason: "the scheme is '\(scheme)', not postgres or postgresql")
    }
    var rest = Substring(text[schemeEnd.upperBound...])
    if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
    var queryText: Substring = ""
    if let question = rest.firstIndex(of: "?") {
      queryText = rest[rest.index(after: question)...]
      rest = rest[..<question]
    }
    var authority = rest
    var path: Substring = ""
    if let slash = rest.firstIndex(of: "/") {
      authority = rest[..<slash]
      path = rest[rest.index(after: slash)...]
    }

    var user: String?
    var password: String?
    var hostPort = authority
    if let at = authority.lastIndex(of: "@") {
      let userInfo = authority[..<at]
      hostPort = authority[authority.index(after: at)...]
      if let colon = userInfo.firstIndex(of: ":") {
        user = try decode(userInfo[..<colon], "user name")
        password = try decode(userInfo[userInfo.index(after: colon)...], "password")
      } else {
        user = try decode(userInfo, "user name")
      }
      if user?.isEmpty == true { throw PostgresURLError(reason: "the user name before '@' is empty") }
    }

    var host: String?
    var port: Int?
    if hostPort.hasPrefix("[") {
      guard let close = hostPort.firstIndex(of: "]") else {
        throw PostgresURLError(reason: "the IPv6 address has no closing ']'")
      }
      host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
      let after = hostPort[hostPort.index(after: close)...]
      if !after.isEmpty {
        guard after.hasPrefix(":") else {
          throw PostgresURLError(reason: "unexpected '\(after)' after the IPv6 address")
        }
        port = try parsePort(after.dropFirst())
      }
    } else if let colon = hostPort.lastIndex(of: ":") {
      host = try decode(hostPort[..<colon], "host")
      port = try parsePort(hostPort[hostPort.index(after: colon)...])
    } else if !hostPort.isEmpty {
      host = try decode(hostPort, "host")
    }
    if host?.isEmpty == true { host = nil }
    if host?.contains(",") == true {
      throw PostgresURLError(reason: "several hosts are not supported; give one host")
    }

    var database = path.isEmpty ? nil : try decode(path, "database name")
    if database?.contains("/") == true {
      throw PostgresURLError(
        reason: "the path after the host must be one database name "
          + "(percent-encode '/', '?', '@' and '#' in the user name, password and database name)")
    }
    var tls = PostgresURL.TLSMode.prefer
    var applicationName: String?
    var connectTimeout: Int?
    for pair in queryText.split(separator: "&", omittingEmptySubsequences: true) {
      guard let equals = pair.firstIndex(of: "=") else {
        throw PostgresURLError(
          reason: "a query parameter has no '=value' (percent-encode '?' and '&' in the password)")
      }
      let key = try decode(pair[..<equals], "query parameter")
      let value = try decode(pair[pair.index(after: equals)...], "value of \(key)")
      switch key {
      case "sslmode":
        guard let mode = PostgresURL.TLSMode(rawValue: value) else {
          let modes = PostgresURL.TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
          throw PostgresURLError(reason: "sslmode '\(value)' is not one of \(modes)")
        }
        tls = mode
      case "host": host = value.isEmpty ? nil : value
      case "port": port = try parsePort(Substring(value))
      case "user": user = value
      case "password": password = value
      case "dbname": database = value
      case "application_name": applicationName = value
      case "connect_timeout":
        guard let seconds = Int(value), seconds > 0 else {
          throw PostgresURLError(reason: "connect_timeout '\(value)' is not a positive number of seconds")
        }
        connectTimeout = seconds
      default:
        throw PostgresURLError(
          reason: "unknown query parameter '\(key)' (supported: sslmode, host, port, user, password, dbname, "
            + "application_name, connect_timeout)")
      }
    }

    guard let host else {
      throw PostgresURLError(reason: "it names no host (give host[:port], or ?host=/socket/directory)")
    }
    let resolvedUser: String
    if let user { resolvedUser = user } else { resolvedUser = try currentUserName() }
    guard !resolvedUser.isEmpty else { throw PostgresURLError(reason: "the user name is empty") }
    let resolvedDatabase = database.flatMap { $0.isEmpty ? nil : $0 } ?? resolvedUser
    let resolvedPort = port ?? 5432
    let endpoint: PostgresURL.Endpoint =
      host.hasPrefix("/")
      ? .unixSocket(directory: host, port: resolvedPort) : .tcp(host: host, port: resolvedPort)
    return PostgresURL(
      user: resolvedUser, password: password, endpoint: endpoint, database: resolvedDatabase, tls: tls,
      applicationName: applicationName, connectTimeout: connectTimeout)
  }

  private static func decode(_ text: Substring, _ what: String) throws(PostgresURLError) -> String {
    guard let decoded = String(text).removingPercentEncoding else {
      throw PostgresURLError(reason: "the \(what) has an invalid percent-encoding")
    }
    return decoded
  }

  private static func parsePort(_ text: Substring) throws(PostgresURLError) -> Int {
    // Only digits are echoed: a password with an unencoded '/' can end up where the port is looked for.
    guard !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) else {
      throw PostgresURLError(
        reason: "the port is not a number (percent-encode '/', '?', '@' and '#' in the user name and password)")
    }
    guard let port = Int(text), (1...65535).contains(port) else {
      throw PostgresURLError(reason: "port \(text) is not from 1 to 65535")
    }
    return port
  }

  private static func currentUserName() throws(PostgresURLError) -> String {
    if let name = ProcessInfo.processInfo.environment["USER"], !name.isEmpty { return name }
    let name = NSUserName()
    guard !name.isEmpty else { throw PostgresURLError(reason: "it names no user and the system user is unknown") }
    return name
  }
}

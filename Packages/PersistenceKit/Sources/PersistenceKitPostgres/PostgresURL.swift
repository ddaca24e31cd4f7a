import Foundation
import PostgresNIO
import Synchronization

/// A PostgreSQL connection URL, as libpq spells it.
///
/// Accepted forms:
/// - `postgres://user[:password]@host[:port]/database[?sslmode=disable]` (`postgresql://` too; IPv6 hosts in
///   brackets, e.g. `[::1]`; user, password and database percent-encoded where needed)
/// - `postgres://user@host1:port1,host2:port2/database?target_session_attrs=read-write`: several hosts, tried in
///   order (``endpoints``) until one gives a session that ``targetSessionAttributes`` accepts — a primary and its
///   standbys, so that a client follows a failover to the promoted standby
/// - `postgres:///database?host=/path/to/dir` for a Unix socket: `host` names the socket's directory, and the
///   socket is `dir/.s.PGSQL.<port>` (a percent-encoded `%2Fpath` host in the authority works too)
///
/// Query parameters: `sslmode` (`disable`, `allow`, `prefer` — the default —, `require`, `verify-ca`,
/// `verify-full`), `host` and `port` (comma-separated lists as in libpq: one port for every host, or one per host),
/// `user`, `password`, `dbname`, `application_name`, `connect_timeout` (seconds), `target_session_attrs`, `options`
/// (run-time parameters for each session, as libpq spells them: `-c name=value` or `--name=value`, separated by
/// spaces, a space inside a value escaped with `\`; e.g. `options=-c%20jit%3Doff`).
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

  /// Which session a connection must give to be kept (libpq's `target_session_attrs`); the hosts are tried in
  /// order until one gives it.
  public enum TargetSessionAttributes: String, Sendable, Hashable, CaseIterable {
    /// Any session (the default).
    case any
    /// A session whose transactions are read-write by default: not a hot standby, `default_transaction_read_only`
    /// off (`SHOW transaction_read_only` is `off`).
    case readWrite = "read-write"
    /// A session whose transactions are read-only by default.
    case readOnly = "read-only"
    /// A server that is not in hot standby (`pg_is_in_recovery()` is false).
    case primary
    /// A server in hot standby.
    case standby
    /// A server in hot standby if one of the hosts is, else any.
    case preferStandby = "prefer-standby"
  }

  /// The role to connect as.
  public var user: String
  /// The password, if any; never printed by ``description``.
  public var password: String?
  /// The servers' addresses, in the order they are tried; never empty.
  public var endpoints: [Endpoint]
  /// The first server's address; setting it replaces every address with this one.
  public var endpoint: Endpoint {
    get { endpoints[0] }
    set { endpoints = [newValue] }
  }
  /// Which session a connection must give to be kept (`target_session_attrs`); ``TargetSessionAttributes/any``
  /// by default.
  public var targetSessionAttributes: TargetSessionAttributes
  /// The database to connect to.
  public var database: String
  /// The TLS mode.
  public var tls: TLSMode
  /// `application_name`, shown in `pg_stat_activity`.
  public var applicationName: String?
  /// How long to wait for a connection, in seconds (`connect_timeout`); `nil` for the driver's default (10 s).
  public var connectTimeout: Int?
  /// Run-time parameters every session runs with (libpq's `options`), e.g. `["jit": "off"]`, names in lower case:
  /// set on each connection (`set_config`) when it is opened alone or first handed out by a pool, before its first
  /// statement. Not in the startup message, which a pooler such as PgBouncer refuses for parameters it does not track.
  public var settings: [String: String] = [:]

  /// Creates a URL with one server from its parts.
  public init(
    user: String,
    password: String? = nil,
    endpoint: Endpoint,
    database: String,
    tls: TLSMode = .prefer,
    applicationName: String? = nil,
    connectTimeout: Int? = nil
  ) {
    self.init(
      user: user, password: password, endpoints: [endpoint], database: database, tls: tls,
      applicationName: applicationName, connectTimeout: connectTimeout)
  }

  /// Creates a URL with several servers, tried in order, from its parts.
  ///
  /// - Precondition: `endpoints` is not empty.
  public init(
    user: String,
    password: String? = nil,
    endpoints: [Endpoint],
    database: String,
    tls: TLSMode = .prefer,
    applicationName: String? = nil,
    connectTimeout: Int? = nil,
    targetSessionAttributes: TargetSessionAttributes = .any
  ) {
    precondition(!endpoints.isEmpty, "a PostgreSQL URL needs at least one endpoint")
    self.user = user
    self.password = password
    self.endpoints = endpoints
    self.database = database
    self.tls = tls
    self.applicationName = applicationName
    self.connectTimeout = connectTimeout
    self.targetSessionAttributes = targetSessionAttributes
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
    result += "@"
    var query: [String] = []
    let tcpHosts: [String] = endpoints.compactMap { endpoint in
      guard case .tcp(let host, let port) = endpoint else { return nil }
      return (host.contains(":") ? "[\(host)]" : Self.encode(host)) + ":\(port)"
    }
    if tcpHosts.count == endpoints.count {
      result += tcpHosts.joined(separator: ",")
    } else {
      // A socket directory can't stand in the authority unencoded: every host goes to the query, in order.
      query.append("host=" + endpoints.map { Self.encode($0.host) }.joined(separator: ","))
      query.append("port=" + endpoints.map { "\($0.port)" }.joined(separator: ","))
    }
    result += "/" + Self.encode(database)
    if tls != .prefer { query.append("sslmode=" + tls.rawValue) }
    if let applicationName { query.append("application_name=" + Self.encode(applicationName)) }
    if let connectTimeout { query.append("connect_timeout=\(connectTimeout)") }
    if targetSessionAttributes != .any { query.append("target_session_attrs=" + targetSessionAttributes.rawValue) }
    if !settings.isEmpty {
      let options = settings.sorted { $0.key < $1.key }.map { setting in
        "-c "
          + String(
            "\(setting.key)=\(setting.value)".flatMap { character in
              character == "\\" || Self.separatesOptions(character) ? ["\\", character] : [character]
            })
      }
      query.append("options=" + Self.encode(options.joined(separator: " ")))
    }
    if !query.isEmpty { result += "?" + query.joined(separator: "&") }
    return result
  }

  /// The configuration of a PostgresNIO connection pool for the first of ``endpoints``.
  public var clientConfiguration: PostgresClient.Configuration { clientConfiguration(for: endpoint) }

  /// The configuration of a PostgresNIO connection pool for `endpoint` (one of ``endpoints``), with this URL's
  /// other settings.
  public func clientConfiguration(for endpoint: Endpoint) -> PostgresClient.Configuration {
    var configuration: PostgresClient.Configuration
    switch endpoint {
    case .tcp(let host, let port):
      configuration = PostgresClient.Configuration(
        host: host, port: port, username: user, password: password, database: database, tls: clientTLS)
    case .unixSocket:
      configuration = PostgresClient.Configuration(
        unixSocketPath: endpoint.socketPath ?? "", username: user, password: password, database: database)
    }
    if let connectTimeout { configuration.options.connectTimeout = .seconds(connectTimeout) }
    configuration.options.additionalStartupParameters = startupParameters
    return configuration
  }

  /// The configuration of a single PostgresNIO connection to the first of ``endpoints``.
  ///
  /// - Throws: NIOSSL's error when a TLS context can't be made.
  public func connectionConfiguration() throws -> PostgresConnection.Configuration {
    try connectionConfiguration(for: endpoint)
  }

  /// The configuration of a single PostgresNIO connection to `endpoint` (one of ``endpoints``), with this URL's
  /// other settings.
  ///
  /// - Throws: NIOSSL's error when a TLS context can't be made.
  public func connectionConfiguration(for endpoint: Endpoint) throws -> PostgresConnection.Configuration {
    var configuration: PostgresConnection.Configuration
    switch endpoint {
    case .tcp(let host, let port):
      let tls: PostgresConnection.Configuration.TLS =
        switch tls {
        case .disable: .disable
        case .allow, .prefer: .prefer(try Self.sslContexts.context(for: tls, tlsConfiguration))
        case .require, .verifyCA, .verifyFull: .require(try Self.sslContexts.context(for: tls, tlsConfiguration))
        }
      configuration = PostgresConnection.Configuration(
        host: host, port: port, username: user, password: password, database: database, tls: tls)
    case .unixSocket:
      configuration = PostgresConnection.Configuration(
        unixSocketPath: endpoint.socketPath ?? "", username: user, password: password, database: database)
    }
    if let connectTimeout { configuration.options.connectTimeout = .seconds(Int64(connectTimeout)) }
    configuration.options.additionalStartupParameters = startupParameters
    return configuration
  }

  /// What the startup message carries besides the user and database: `application_name`.
  private var startupParameters: [(String, String)] {
    applicationName.map { [("application_name", $0)] } ?? []
  }

  /// The characters that separate the words of libpq's `options`, as the server splits them (ASCII white space).
  static func separatesOptions(_ character: Character) -> Bool {
    [" ", "\t", "\n", "\r", "\u{0B}", "\u{0C}"].contains(character)
  }

  /// Sets ``settings`` on `connection` for its session, in one statement; nothing without settings. A connection
  /// whose settings fail is closed: it must not serve without them.
  ///
  /// - Throws: PostgreSQL's error for a name it does not know or a value it refuses.
  public func applySettings(on connection: PostgresConnection, logger: Logger) async throws {
    guard !settings.isEmpty else { return }
    let names = settings.keys.sorted()
    let values = names.map { settings[$0] ?? "" }
    do {
      _ = try await connection.query(
        "SELECT set_config(s.name, s.value, false) FROM unnest(\(names)::text[], \(values)::text[]) AS s(name, value)",
        logger: logger
      ).collect()
    } catch {
      try? await connection.close()
      throw error
    }
  }

  /// The path of the Unix socket, when the first of ``endpoints`` is a ``Endpoint/unixSocket(directory:port:)``.
  public var socketPath: String? { endpoint.socketPath }

  private var clientTLS: PostgresClient.Configuration.TLS {
    switch tls {
    case .disable: .disable
    case .allow, .prefer: .prefer(tlsConfiguration)
    case .require, .verifyCA, .verifyFull: .require(tlsConfiguration)
    }
  }

  /// The TLS contexts of single connections, one per mode for the whole process: making one reads and parses the
  /// system's trust store (a blocking file read and hundreds of certificates), which a connection, a failover attempt
  /// or a session-target probe should not repeat.
  private static let sslContexts = SSLContextCache()

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
      + "(several hosts: host1:port1,host2:port2 and ?target_session_attrs=read-write) "
      + "or postgres:///database?host=/socket/directory"
  }
}

extension PostgresURL.Endpoint: CustomStringConvertible {
  /// `host:port`, `[v6]:port` or the socket's path.
  public var description: String {
    switch self {
    case .tcp(let host, let port): (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    case .unixSocket: socketPath ?? ""
    }
  }

  /// The path of the Unix socket, for a ``unixSocket(directory:port:)`` endpoint.
  public var socketPath: String? {
    guard case .unixSocket(let directory, let port) = self else { return nil }
    return (directory.hasSuffix("/") ? String(directory.dropLast()) : directory) + "/.s.PGSQL.\(port)"
  }

  /// The host name or address, or the socket's directory.
  var host: String {
    switch self {
    case .tcp(let host, _), .unixSocket(let host, _): host
    }
  }

  /// The TCP port, or the port that names the socket.
  var port: Int {
    switch self {
    case .tcp(_, let port), .unixSocket(_, let port): port
    }
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

    // libpq's model: a list of hosts and a list of ports (an empty entry: the default), matched at the end.
    var hosts: [String] = []
    var ports: [String] = []
    if !hostPort.isEmpty {
      let pieces = try splitHostList(hostPort)
      for (index, piece) in pieces.enumerated() {
        let (host, port) = try parseHostPort(piece)
        guard !host.isEmpty || pieces.count == 1 else {
          throw PostgresURLError(reason: "host \(index + 1) of the list '\(hostPort)' is empty")
        }
        hosts.append(host)
        ports.append(port.map(String.init) ?? "")
      }
      if hosts == [""] { hosts = [] }
      if ports.allSatisfy(\.isEmpty) { ports = [] }
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
    var targetSessionAttributes = PostgresURL.TargetSessionAttributes.any
    var settings: [String: String] = [:]
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
      case "host":
        hosts = value.isEmpty ? [] : value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
      case "port": ports = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
      case "target_session_attrs":
        guard let attributes = PostgresURL.TargetSessionAttributes(rawValue: value) else {
          let values = PostgresURL.TargetSessionAttributes.allCases.map(\.rawValue).joined(separator: ", ")
          throw PostgresURLError(reason: "target_session_attrs '\(value)' is not one of \(values)")
        }
        targetSessionAttributes = attributes
      case "user": user = value
      case "password": password = value
      case "dbname": database = value
      case "application_name": applicationName = value
      case "options": settings = try parseOptions(value)  // the last one counts, as in libpq
      case "connect_timeout":
        guard let seconds = Int(value), seconds > 0 else {
          throw PostgresURLError(reason: "connect_timeout '\(value)' is not a positive number of seconds")
        }
        connectTimeout = seconds
      default:
        throw PostgresURLError(
          reason: "unknown query parameter '\(key)' (supported: sslmode, host, port, user, password, dbname, "
            + "application_name, connect_timeout, target_session_attrs, options)")
      }
    }

    let endpoints = try endpoints(hosts: hosts, ports: ports)
    let resolvedUser: String
    if let user { resolvedUser = user } else { resolvedUser = try currentUserName() }
    guard !resolvedUser.isEmpty else { throw PostgresURLError(reason: "the user name is empty") }
    let resolvedDatabase = database.flatMap { $0.isEmpty ? nil : $0 } ?? resolvedUser
    var url = PostgresURL(
      user: resolvedUser, password: password, endpoints: endpoints, database: resolvedDatabase, tls: tls,
      applicationName: applicationName, connectTimeout: connectTimeout,
      targetSessionAttributes: targetSessionAttributes)
    url.settings = settings
    return url
  }

  /// libpq's `options`: command-line switches `-c name=value` (or `-cname=value`, `--name=value`) separated by
  /// ASCII white space, `\` escaping the next character; only run-time parameters, as a connection string can set
  /// nothing else. Names are case-insensitive, as PostgreSQL's are: kept in lower case.
  static func parseOptions(_ text: String) throws(PostgresURLError) -> [String: String] {
    var words: [String] = []
    var word = ""
    var escaped = false
    var inWord = false
    for character in text {
      if escaped {
        word.append(character)
        escaped = false
      } else if character == "\\" {
        escaped = true
        inWord = true
      } else if PostgresURL.separatesOptions(character) {
        if inWord { words.append(word) }
        word = ""
        inWord = false
      } else {
        word.append(character)
        inWord = true
      }
    }
    if inWord { words.append(word) }
    var settings: [String: String] = [:]
    var index = 0
    while index < words.count {
      var assignment: Substring
      if words[index] == "-c" {
        index += 1
        guard index < words.count else { throw PostgresURLError(reason: "options ends with '-c' and no name=value") }
        assignment = words[index][...]
      } else if words[index].hasPrefix("--") {
        assignment = words[index].dropFirst(2)
      } else if words[index].hasPrefix("-c") {
        assignment = words[index].dropFirst(2)
      } else {
        throw PostgresURLError(
          reason: "options holds '\(words[index])'; only run-time parameters ('-c name=value') are supported")
      }
      guard let equals = assignment.firstIndex(of: "="), equals != assignment.startIndex else {
        throw PostgresURLError(reason: "options holds '\(assignment)', which is not name=value")
      }
      // PostgreSQL treats '-' in a switch's name as '_' (`--work-mem=64MB`).
      let name = assignment[..<equals].replacingOccurrences(of: "-", with: "_").lowercased()
      settings[name] = String(assignment[assignment.index(after: equals)...])
      index += 1
    }
    return settings
  }

  /// The authority's hosts: split at the commas that are not inside an IPv6 address's brackets.
  private static func splitHostList(_ text: Substring) throws(PostgresURLError) -> [Substring] {
    var pieces: [Substring] = []
    var start = text.startIndex
    var inBrackets = false
    for index in text.indices {
      switch text[index] {
      case "[": inBrackets = true
      case "]": inBrackets = false
      case "," where !inBrackets:
        pieces.append(text[start..<index])
        start = text.index(after: index)
      default: break
      }
    }
    pieces.append(text[start...])
    return pieces
  }

  /// One `host[:port]` of the authority (the host percent-decoded; an IPv6 address without its brackets).
  private static func parseHostPort(_ text: Substring) throws(PostgresURLError) -> (String, Int?) {
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]") else {
        throw PostgresURLError(reason: "the IPv6 address has no closing ']'")
      }
      let host = String(text[text.index(after: text.startIndex)..<close])
      let after = text[text.index(after: close)...]
      guard !after.isEmpty else { return (host, nil) }
      guard after.hasPrefix(":") else {
        throw PostgresURLError(reason: "unexpected '\(after)' after the IPv6 address")
      }
      return (host, try parsePort(after.dropFirst()))
    }
    if let colon = text.lastIndex(of: ":") {
      return (try decode(text[..<colon], "host"), try parsePort(text[text.index(after: colon)...]))
    }
    return (try decode(text, "host"), nil)
  }

  /// The endpoints of `hosts` and `ports` (none: 5432 for every host; one: that port for every host; else one per
  /// host, an empty one meaning 5432), as libpq matches them.
  private static func endpoints(hosts: [String], ports: [String]) throws(PostgresURLError) -> [PostgresURL.Endpoint] {
    guard !hosts.isEmpty else {
      throw PostgresURLError(reason: "it names no host (give host[:port], or ?host=/socket/directory)")
    }
    if let empty = hosts.firstIndex(of: "") {
      throw PostgresURLError(reason: "host \(empty + 1) of the \(hosts.count) hosts is empty")
    }
    guard ports.count <= 1 || ports.count == hosts.count else {
      throw PostgresURLError(
        reason: "\(ports.count) ports for \(hosts.count) hosts (give one port for every host, or one per host)")
    }
    var endpoints: [PostgresURL.Endpoint] = []
    for (index, host) in hosts.enumerated() {
      let text = ports.isEmpty ? "" : ports[ports.count == 1 ? 0 : index]
      let port = text.isEmpty ? 5432 : try parsePort(Substring(text))
      endpoints.append(host.hasPrefix("/") ? .unixSocket(directory: host, port: port) : .tcp(host: host, port: port))
    }
    return endpoints
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

/// NIO SSL contexts made once per ``PostgresURL/TLSMode`` (a context is immutable and safe to share).
private final class SSLContextCache: Sendable {
  private let contexts = Mutex<[PostgresURL.TLSMode: NIOSSLContext]>([:])

  /// The context for `mode`, made from `configuration` the first time.
  func context(for mode: PostgresURL.TLSMode, _ configuration: TLSConfiguration) throws -> NIOSSLContext {
    if let made = contexts.withLock({ $0[mode] }) { return made }
    let made = try NIOSSLContext(configuration: configuration)
    return contexts.withLock { contexts in
      if let first = contexts[mode] { return first }
      contexts[mode] = made
      return made
    }
  }
}

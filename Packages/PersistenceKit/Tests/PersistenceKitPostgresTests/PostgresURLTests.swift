import Foundation
import PersistenceKitPostgres
import Testing

@Suite struct PostgresURLTests {
  @Test func parsesTheFullForm() throws {
    let url = try PostgresURL("postgres://meridian:s3cret@db.example.org:6432/tracks?sslmode=disable")
    #expect(url.user == "meridian")
    #expect(url.password == "s3cret")
    #expect(url.endpoint == .tcp(host: "db.example.org", port: 6432))
    #expect(url.database == "tracks")
    #expect(url.tls == .disable)
  }

  @Test func acceptsPostgresqlAndDefaultsLikeLibpq() throws {
    let url = try PostgresURL("postgresql://meridian@127.0.0.1/")
    #expect(url.endpoint == .tcp(host: "127.0.0.1", port: 5432))
    #expect(url.password == nil)
    #expect(url.database == "meridian")  // no database: the user's name
    #expect(url.tls == .prefer)
  }

  @Test func parsesBracketedIPv6AndPercentEncoding() throws {
    let url = try PostgresURL("postgres://us%40er:p%40ss%2Fw%3Ard@[::1]:5433/my%20db")
    #expect(url.user == "us@er")
    #expect(url.password == "p@ss/w:rd")
    #expect(url.endpoint == .tcp(host: "::1", port: 5433))
    #expect(url.database == "my db")
  }

  @Test func parsesUnixSocketForms() throws {
    let query = try PostgresURL("postgres:///meridian?host=/tmp/meridian-postgres-0&port=20379&user=postgres")
    #expect(query.endpoint == .unixSocket(directory: "/tmp/meridian-postgres-0", port: 20379))
    #expect(query.socketPath == "/tmp/meridian-postgres-0/.s.PGSQL.20379")
    #expect(query.user == "postgres")
    #expect(query.database == "meridian")

    let encoded = try PostgresURL("postgres://postgres@%2Fvar%2Frun%2Fpostgresql/meridian")
    #expect(encoded.socketPath == "/var/run/postgresql/.s.PGSQL.5432")
  }

  @Test func readsTheOtherParameters() throws {
    let url = try PostgresURL(
      "postgres://a@h/d?sslmode=verify-full&application_name=meridian%20node&connect_timeout=3&dbname=other")
    #expect(url.tls == .verifyFull)
    #expect(url.applicationName == "meridian node")
    #expect(url.connectTimeout == 3)
    #expect(url.database == "other")
  }

  /// libpq's `options` ("-c geqo=off" in its documentation; `--name=value` and escaped spaces as the server reads
  /// them): every form gives the same settings, and the URL's string form parses back to them.
  @Test func readsSessionSettingsFromOptions() throws {
    let url = try PostgresURL(
      "postgres://a@h/d?options=-c%20jit%3Doff%20-cgeqo%3Doff%20--work-mem%3D64MB%20-c%20search_path%3Da%5C%20b")
    #expect(url.settings == ["jit": "off", "geqo": "off", "work_mem": "64MB", "search_path": "a b"])
    #expect(try PostgresURL(url.string(revealingPassword: false)) == url)
    #expect(url.description.contains("options=-c%20geqo%3Doff%20-c%20jit%3Doff"))
    // Names in any case are one name; tabs separate as spaces do; a value with any of them round-trips; the last
    // `options` counts, as in libpq.
    let mixed = try PostgresURL("postgres://a@h/d?options=-c%20x%3D1&options=-c%09JIT%3Don")
    #expect(mixed.settings == ["jit": "on"])
    var odd = mixed
    odd.settings = ["search_path": "a\tb \\c\nd"]
    #expect(try PostgresURL(odd.string(revealingPassword: false)) == odd)
    for wrong in ["-c", "-c jit", "jit=off", "-f x", "-c =off"] {
      let encoded = wrong.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? wrong
      #expect(throws: PostgresURLError.self, "\(wrong)") { try PostgresURL("postgres://a@h/d?options=\(encoded)") }
    }
  }

  @Test func descriptionHidesThePasswordAndStringRoundTrips() throws {
    let url = try PostgresURL("postgres://meridian:s3cr%2Fet@db:6432/tracks?sslmode=require")
    #expect(url.description == "postgres://meridian:***@db:6432/tracks?sslmode=require")
    #expect(!"\(url)".contains("s3cr"))
    #expect(try PostgresURL(url.string(revealingPassword: true)) == url)
    let socket = try PostgresURL("postgres:///db?host=/tmp/x&user=me")
    #expect(socket.description == "postgres://me@/db?host=%2Ftmp%2Fx&port=5432")
    #expect(try PostgresURL(socket.description) == socket)
  }

  /// libpq's own example of a multi-host URI (libpq, "Connection URIs").
  @Test func parsesLibpqsMultiHostExample() throws {
    let url = try PostgresURL("postgresql://host1:123,host2:456/somedb?target_session_attrs=any&application_name=myapp")
    #expect(url.endpoints == [.tcp(host: "host1", port: 123), .tcp(host: "host2", port: 456)])
    #expect(url.endpoint == .tcp(host: "host1", port: 123))
    #expect(url.database == "somedb")
    #expect(url.targetSessionAttributes == .any)
    #expect(url.applicationName == "myapp")
  }

  /// "A URI of the form postgresql://host1:port1,host2:port2,host3:port3/ is equivalent to a connection string of
  /// the form host=host1,host2,host3 port=port1,port2,port3"; "if you specify only one port, it applies to all the
  /// hosts" (libpq, "Specifying Multiple Hosts").
  @Test func hostAndPortListsMatchAsInLibpq() throws {
    let authority = try PostgresURL("postgresql://u@host1:5001,host2:5002,host3:5003/db")
    let parameters = try PostgresURL("postgresql://u@/db?host=host1,host2,host3&port=5001,5002,5003")
    #expect(authority == parameters)
    #expect(authority.endpoints.map(\.description) == ["host1:5001", "host2:5002", "host3:5003"])

    let onePort = try PostgresURL("postgresql://u@/db?host=a,b&port=6432")
    #expect(onePort.endpoints == [.tcp(host: "a", port: 6432), .tcp(host: "b", port: 6432)])
    let somePorts = try PostgresURL("postgres://u@h1,h2:5433,[::1]:5434,[2001:db8::1234]/db")
    #expect(
      somePorts.endpoints == [
        .tcp(host: "h1", port: 5432), .tcp(host: "h2", port: 5433), .tcp(host: "::1", port: 5434),
        .tcp(host: "2001:db8::1234", port: 5432),
      ])
    let sockets = try PostgresURL("postgres:///db?host=/run/a,db.example.org&port=5432,5433&user=me")
    #expect(
      sockets.endpoints == [.unixSocket(directory: "/run/a", port: 5432), .tcp(host: "db.example.org", port: 5433)])
  }

  @Test(arguments: PostgresURL.TargetSessionAttributes.allCases)
  func readsEveryTargetSessionAttributesValue(_ attributes: PostgresURL.TargetSessionAttributes) throws {
    let url = try PostgresURL("postgres://u@h1,h2/db?target_session_attrs=\(attributes.rawValue)")
    #expect(url.targetSessionAttributes == attributes)
    #expect(try PostgresURL(url.description) == url)
  }

  @Test func aMultiHostURLRoundTripsAndHidesThePassword() throws {
    let url = try PostgresURL(
      "postgres://meridian:s3cret@10.0.0.1:5432,10.0.0.2:5433/tracks?target_session_attrs=read-write")
    #expect(url.targetSessionAttributes == .readWrite)
    #expect(
      url.description == "postgres://meridian:***@10.0.0.1:5432,10.0.0.2:5433/tracks?target_session_attrs=read-write")
    #expect(try PostgresURL(url.string(revealingPassword: true)) == url)
    let mixed = try PostgresURL("postgres:///db?host=/tmp/x,::1,db&port=1,2,3&user=me")
    #expect(try PostgresURL(mixed.description) == mixed)
    var single = url
    single.endpoint = .tcp(host: "db", port: 1)
    #expect(single.endpoints == [.tcp(host: "db", port: 1)])
  }

  @Test(arguments: [
    ("", "empty"),
    ("localhost:5432/db", "no scheme"),
    ("mysql://u@h/db", "scheme is 'mysql'"),
    ("postgres://u@h:99999/db", "port 99999 is not from 1 to 65535"),
    ("postgres://u@h:abc/db", "the port is not a number"),
    ("postgres://u@h/db?sslmode=maybe", "sslmode 'maybe'"),
    ("postgres://u@h/db?pool=9", "unknown query parameter 'pool'"),
    ("postgres:///db", "names no host"),
    ("postgres://u@[::1/db", "no closing ']'"),
    ("postgres://@h/db", "user name before '@' is empty"),
    ("postgres://u@h/db/more", "one database name"),
    ("postgres://u@h/db?connect_timeout=-1", "connect_timeout '-1'"),
    ("postgres://u@h1,,h2/db", "host 2 of the list 'h1,,h2' is empty"),
    ("postgres://u@h1,h2:x/db", "the port is not a number"),
    ("postgres://u@/db?host=a,b,c&port=1,2", "2 ports for 3 hosts"),
    ("postgres://u@/db?host=a,,c", "host 2 of the 3 hosts is empty"),
    ("postgres://u@h1,h2/db?target_session_attrs=writable", "target_session_attrs 'writable' is not one of any"),
  ])
  func rejectsMalformedURLs(input: String, expected: String) {
    #expect {
      try PostgresURL(input)
    } throws: { error in
      guard let error = error as? PostgresURLError else { return false }
      return error.reason.contains(expected) && error.description.contains("Expected postgres://")
    }
  }

  @Test func errorsNeverShowThePassword() {
    for input in ["postgres://u:hunter2@h:port/db", "postgres://u:hunter2/x@h/db", "postgres://u:hun?ter2@h/db"] {
      #expect {
        try PostgresURL(input)
      } throws: { error in
        !"\(error)".contains("hunter2") && !"\(error)".contains("ter2")
      }
    }
  }
}

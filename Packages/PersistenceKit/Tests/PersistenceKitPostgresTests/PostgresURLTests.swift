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

  @Test func descriptionHidesThePasswordAndStringRoundTrips() throws {
    let url = try PostgresURL("postgres://meridian:s3cr%2Fet@db:6432/tracks?sslmode=require")
    #expect(url.description == "postgres://meridian:***@db:6432/tracks?sslmode=require")
    #expect(!"\(url)".contains("s3cr"))
    #expect(try PostgresURL(url.string(revealingPassword: true)) == url)
    let socket = try PostgresURL("postgres:///db?host=/tmp/x&user=me")
    #expect(socket.description == "postgres://me@/db?host=%2Ftmp%2Fx&port=5432")
    #expect(try PostgresURL(socket.description) == socket)
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
    ("postgres://u@h1,h2/db", "several hosts"),
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

import MeridianServer
import Testing

@testable import meridian_server

/// The database a node was given, as its log shows it ("opening the store"): never with its password.
@Suite struct DatabaseLocationDescriptionTests {
  @Test(arguments: [
    (
      "postgres://meridian:hunter2@db1.internal:5432,db2.internal:5433/meridian?target_session_attrs=read-write",
      "postgres://meridian:***@db1.internal:5432,db2.internal:5433/meridian?target_session_attrs=read-write"
    ),
    ("postgres://meridian:hunter2@db.internal:5432/meridian", "postgres://meridian:***@db.internal:5432/meridian"),
    ("postgres://meridian:hunter2@db.internal:port/meridian", "postgres://…"),
  ])
  func aPostgreSQLURLIsShownWithoutItsPassword(url: String, shown: String) throws {
    let configuration = try ServerConfiguration.resolve(
      environment: ["MERIDIAN_DATABASE_URL": url], settings: ServerSettings())
    #expect("\(configuration.database)" == shown)
  }
}

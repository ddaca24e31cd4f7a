import PersistenceKit
import PersistenceKitPostgres
import Testing

/// The README's PostgreSQL example, as written there, on a fresh database.
@Suite struct PostgresReadmeExampleTests {
  @Test func theExampleRuns() async throws {
    try await TestCluster.withFreshDatabase { fresh in
      let url = fresh.url  // the README's `try PostgresURL("postgres://postgres@127.0.0.1:5432/postgres")`
      let database = try await PostgresDatabase.open(url: url, maxConnections: 10, logger: TestCluster.logger)

      var migrator = Migrator()
      migrator.append(
        .sql(
          "2026-11-01 create place",
          """
          CREATE TABLE place(id bigserial PRIMARY KEY, name text NOT NULL, location geography(Point, 4326));
          CREATE INDEX place_location ON place USING gist(location);
          """))
      let report = try await database.migrate(migrator)
      let status = try await database.migrationStatus(migrator)

      let id = try await database.withTransaction(isolation: .serializable, retries: 3) { connection in
        try await connection.query(
          "INSERT INTO place(name, location) VALUES (\("Louvre"), 'SRID=4326;POINT(2.3376 48.8606)') RETURNING id",
          logger: database.logger
        ).collect().first?.decode(Int.self)
      }
      try await database.execute("ANALYZE place; COMMENT ON TABLE place IS 'Places; people go'")
      await database.close()

      #expect(report.applied.map(\.identifier) == ["2026-11-01 create place"])
      #expect(status.isUpToDate)
      #expect(id == 1)
      let comment = try await fresh.query("SELECT obj_description('place'::regclass)").first?.decode(String.self)
      #expect(comment == "Places; people go")
    }
  }
}

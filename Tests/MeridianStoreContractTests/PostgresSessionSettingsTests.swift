import MeridianStorePostgres
import MeridianStoreTesting
import Testing

/// The store's sessions run without JIT compilation unless the URL's `options` ask for it: PostgreSQL compiled a
/// year of promotion statistics for 470 ms to run it for 80.
@Suite("PostgreSQL session settings")
struct PostgresSessionSettingsTests {
  @Test func sessionsRunWithoutJITUnlessTheURLSaysOtherwise() async throws {
    try await PostgresTestDatabase.with { database in
      let store = try await PostgresStore.open(url: database.url, maximumConnections: 2)
      let jit = try await store.sessionSetting("jit")
      await store.close()
      #expect(jit == "off")

      let separator = database.url.contains("?") ? "&" : "?"
      let asked = try await PostgresStore.open(
        url: database.url + separator + "options=-c%20jit%3Don%20-c%20work_mem%3D8MB", maximumConnections: 2)
      let (askedJIT, memory) = (try await asked.sessionSetting("jit"), try await asked.sessionSetting("work_mem"))
      await asked.close()
      #expect(askedJIT == "on")
      #expect(memory == "8MB")
    }
  }
}

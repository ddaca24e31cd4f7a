import MeridianStore
import MeridianStoreSQLite
import Testing

@testable import MeridianServer

@Suite struct LookupCacheTests {
  @Test func storesLoadsUntilTheyExpire() async throws {
    let cache = LookupCache<String, Int>(lifetime: 1000)
    var loads = 0
    #expect(
      try await cache.value(for: "a", now: 0) {
        loads += 1
        return 1
      } == 1)
    #expect(
      try await cache.value(for: "a", now: 999) {
        loads += 1
        return 2
      } == 1)
    #expect(
      try await cache.value(for: "a", now: 1000) {
        loads += 1
        return 3
      } == 3)
    #expect(loads == 2)
    // Nothing found is not remembered.
    #expect(try await cache.value(for: "b", now: 0) { nil } == nil)
    #expect(cache.value(for: "b", now: 0) == nil)
  }

  @Test func aLoadOverlappingADropIsNotStored() async throws {
    // A token is looked up, and revoked (its entry dropped) while the lookup still holds the old answer: that answer
    // is returned to the request already under way, but never remembered for later ones.
    let cache = LookupCache<String, String>(lifetime: 60_000)
    let stale = try await cache.value(for: "token", now: 0) {
      cache.remove("token")
      return "anna"
    }
    #expect(stale == "anna")
    #expect(cache.value(for: "token", now: 1) == nil)
    _ = try await cache.value(for: "other", now: 0) {
      cache.removeAll { $0 == "nobody" }
      return "bob"
    }
    #expect(cache.value(for: "other", now: 1) == nil)
    // Without a drop in between, the load is kept.
    _ = try await cache.value(for: "token", now: 2) { "anna" }
    #expect(cache.value(for: "token", now: 3) == "anna")
  }
}

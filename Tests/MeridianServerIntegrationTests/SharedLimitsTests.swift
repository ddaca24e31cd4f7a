import DomainKit
import MeridianServer
import MeridianStore
import MeridianStoreTesting
import Testing

/// The server's limiters count where its store says: in the database every node shares (PostgreSQL), or in each
/// process's memory (SQLite, one node per database).
@Suite struct SharedLimitsTests {
  @Test(arguments: StoreEngine.all)
  func twoNodesGiveAPhoneItsCodesOnceOrEachItsOwn(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { first, second in
      var configuration = ServerConfiguration()
      configuration.otpPerPhonePerHour = 5
      let nodes = [first, second].map {
        ServerEnvironment(store: $0, smsSender: CapturingSMSSender(), configuration: configuration, now: { 1_000 })
      }
      var granted = 0
      for attempt in 0..<20 {
        if await nodes[attempt % 2].otpPhoneLimiter.allow("+15550100", now: 1_000) { granted += 1 }
      }
      // Shared on PostgreSQL (5 in all); each SQLite process counts its own (5 each).
      #expect(granted == (engine.name == "postgres" ? 5 : 10))
      // Other limits, other keys: the phone's window doesn't touch the address's.
      #expect(await nodes[1].otpAddressLimiter.allow("+15550100", now: 1_000))
    }
  }

  @Test(arguments: StoreEngine.all)
  func wrongPasswordsOnOneNodeSlowTheOtherDown(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { first, second in
      var configuration = ServerConfiguration()
      configuration.limits.signInFailuresPerAccount = 2
      let nodes = [first, second].map {
        ServerEnvironment(store: $0, smsSender: CapturingSMSSender(), configuration: configuration, now: { 1_000 })
      }
      for node in nodes { await node.signInFailuresByAccount.failed("anna@example.com", now: 1_000) }
      let wait = try await nodes[0].signInFailuresByAccount.wait("anna@example.com", now: 1_000)
      #expect(wait == (engine.name == "postgres" ? 1_000 : nil))
      await nodes[1].signInFailuresByAccount.succeeded("anna@example.com")
      #expect(try await nodes[0].signInFailuresByAccount.wait("anna@example.com", now: 1_000) == nil)
    }
  }
}

extension SharedLimitsTests {
  @Test(arguments: StoreEngine.all)
  func sharedCountersThatCantBeReachedRefuseInsteadOfLiftingTheLimit(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { first, _ in
      guard let counters = first.sharedLimits else {
        #expect(engine.name == "sqlite", "only an engine serving one process has no shared counters")
        return
      }
      let instance = try await engine.make(Timestamp.systemClock)
      let gone = try await instance.openNode()
      let unreachable = try #require(gone.store.sharedLimits)
      await gone.close()
      await instance.dispose()
      let limiter = RateLimiter(limit: 5, window: 60_000, counters: .shared(unreachable, purpose: "otp.phone"))
      #expect(await limiter.take("+15550100", cost: 1, now: 0) == LimitCounters.unavailableWait)
      let backoff = FailureBackoff(freeFailures: 5, counters: .shared(unreachable, purpose: "signin.account"))
      // A sign-in's backoff can't be read: the answer is the database's 503, not a wrong password's 429.
      await #expect(throws: StoreUnavailableError.self) { try await backoff.wait("anna@example.com", now: 0) }
      // The same limiter on counters that answer allows the request.
      let working = RateLimiter(limit: 5, window: 60_000, counters: .shared(counters, purpose: "otp.phone"))
      #expect(await working.take("+15550100", cost: 1, now: 0) == nil)
    }
  }
}

import Foundation
import MeridianStore
import MeridianStoreTesting
import Testing

/// The rate-limit windows and sign-in failure records: the same answers from every engine's shared counters
/// (``MeridianStore/sharedLimits``). An engine that serves one process (SQLite) has none, and its server counts in
/// memory, so these cases check ``InMemoryLimitStore`` there: the counters that engine's server really uses. The
/// cases with two nodes on one database run on the engines that have them.
@Suite("Store contract: limits")
struct LimitContractTests {
  /// The counters a server on `store` uses.
  static func counters(of store: any MeridianStore) -> any LimitStore { store.sharedLimits ?? InMemoryLimitStore() }

  @Test(arguments: StoreEngine.all)
  func aWindowCountsUntilItsEndThenStartsAgain(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let limits = Self.counters(of: store)
      let rule = WindowLimit(limit: 5, window: 1_000)
      let steps: [(key: String, cost: Int, now: Int64, wait: Int64?)] = [
        ("a", 2, 100, nil), ("a", 3, 500, nil), ("a", 1, 600, 500), ("b", 5, 600, nil),
        ("a", 6, 700, 400),  // more than the whole limit: never fits
        ("c", 6, 700, 1_000),
        ("a", 1, 1_099, 1), ("a", 1, 1_100, nil), ("a", 4, 1_200, nil), ("a", 1, 1_300, 800),
        ("b", 1, 599, 1_001),  // read just before the window started (another node's clock): counts in it
        ("d", 5, 5_000, nil), ("d", 1, 4_000, 2_000),
        ("d", 1, 3_999, nil),  // the clock went back further than the skew: a new window
        ("d", 4, 4_998, nil), ("d", 1, 4_998, 1),
      ]
      for step in steps {
        let wait = try await limits.take(step.key, cost: step.cost, in: rule, now: step.now)
        #expect(wait == step.wait, "\(step)")
      }
    }
  }

  @Test(arguments: StoreEngine.all)
  func aLimitOfZeroCountsNothing(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let limits = Self.counters(of: store)
      for now in Int64(0)..<20 {
        #expect(try await limits.take("a", cost: 100, in: WindowLimit(limit: 0, window: 1_000), now: now) == nil)
        try await limits.recordFailure("a", policy: BackoffPolicy(freeFailures: 0), now: now)
      }
      let policy = BackoffPolicy(freeFailures: 1, forgetAfter: 10_000)
      #expect(try await limits.failureWait("a", policy: policy, now: 20) == nil)
      #expect(try await limits.removeExpiredCounters(now: .max / 2) == 0)
    }
  }

  @Test(arguments: StoreEngine.all)
  func failuresDelayTheNextAttemptUntilForgottenOrCleared(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let limits = Self.counters(of: store)
      let policy = BackoffPolicy(freeFailures: 2, baseDelay: 1_000, maximumDelay: 5_000, forgetAfter: 60_000)
      var waits: [Int64?] = []
      for failure in Int64(0)..<6 {
        try await limits.recordFailure("anna", policy: policy, now: failure * 10)
        waits.append(try await limits.failureWait("anna", policy: policy, now: failure * 10))
      }
      #expect(waits == [nil, 1_000, 2_000, 4_000, 5_000, 5_000])
      #expect(try await limits.failureWait("anna", policy: policy, now: 5_049) == 1)
      #expect(try await limits.failureWait("anna", policy: policy, now: 5_050) == nil)
      #expect(try await limits.failureWait("bob", policy: policy, now: 50) == nil)
      // Forgotten a minute after the last failure: the next one is the first again.
      #expect(try await limits.failureWait("anna", policy: policy, now: 60_049) == nil)
      try await limits.recordFailure("anna", policy: policy, now: 60_050)
      try await limits.recordFailure("anna", policy: policy, now: 60_060)
      #expect(try await limits.failureWait("anna", policy: policy, now: 60_060) == 1_000)
      try await limits.clearFailures("anna")
      #expect(try await limits.failureWait("anna", policy: policy, now: 60_060) == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func expiredCountersAreRemovedAndStartAfresh(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let limits = Self.counters(of: store)
      let minute = WindowLimit(limit: 1, window: 60_000)
      let hour = WindowLimit(limit: 1, window: 3_600_000)
      let policy = BackoffPolicy(freeFailures: 1, forgetAfter: 600_000)
      #expect(try await limits.take("fixes.account:anna", cost: 1, in: minute, now: 0) == nil)
      #expect(try await limits.take("otp.phone:+15550100", cost: 1, in: hour, now: 0) == nil)
      try await limits.recordFailure("signin.account:anna", policy: policy, now: 0)
      #expect(try await limits.removeExpiredCounters(now: 59_999) == 0)
      #expect(try await limits.removeExpiredCounters(now: 60_000) == 1)
      #expect(try await limits.removeExpiredCounters(now: 600_000) == 1)
      #expect(try await limits.take("otp.phone:+15550100", cost: 1, in: hour, now: 600_000) == 3_000_000)
      #expect(try await limits.removeExpiredCounters(now: 3_600_000) == 1)
      #expect(try await limits.removeExpiredCounters(now: 3_600_000) == 0)
      #expect(try await limits.take("fixes.account:anna", cost: 1, in: minute, now: 3_600_000) == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func concurrentTakesNeverExceedTheLimit(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let limits = Self.counters(of: store)
      let rule = WindowLimit(limit: 25, window: 60_000)
      let taken = try await withThrowingTaskGroup(of: Bool.self) { group in
        for attempt in 0..<60 {
          group.addTask {
            try await limits.take("search.account:anna", cost: 1, in: rule, now: 1_000 + Int64(attempt)) == nil
          }
        }
        return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
      }
      #expect(taken == 25)
    }
  }

  /// Runs `body` with the shared counters of two nodes on one database; on an engine that serves one process (its
  /// servers count in memory, so there is no second node to share with) checks that it has none.
  static func withTwoNodes(
    _ engine: StoreEngine, _ body: (any LimitStore, any LimitStore) async throws -> Void
  ) async throws {
    try await engine.withTwoNodes { first, second in
      guard let a = first.sharedLimits, let b = second.sharedLimits else {
        #expect(engine.name == "sqlite", "only an engine serving one process has no shared counters")
        return
      }
      try await body(a, b)
    }
  }

  @Test(arguments: StoreEngine.all)
  func twoNodesShareOneWindow(_ engine: StoreEngine) async throws {
    try await Self.withTwoNodes(engine) { a, b in
      let hour = WindowLimit(limit: 5, window: 3_600_000)
      // Guesses spread over both nodes get 5 codes in all, as on one node.
      var granted: [Int] = []
      for attempt in 0..<12 {
        let node = attempt.isMultiple(of: 2) ? a : b
        if try await node.take("otp.phone:+15550100", cost: 1, in: hour, now: 1_000 + Int64(attempt)) == nil {
          granted.append(attempt)
        }
      }
      #expect(granted == [0, 1, 2, 3, 4])
      #expect(try await b.take("otp.phone:+15550100", cost: 1, in: hour, now: 2_000) == 3_599_000)
      #expect(try await a.take("otp.address:192.0.2.1", cost: 1, in: hour, now: 2_000) == nil)
      // The window ends for both nodes at once.
      #expect(try await a.take("otp.phone:+15550100", cost: 1, in: hour, now: 3_600_999) == 1)
      #expect(try await b.take("otp.phone:+15550100", cost: 5, in: hour, now: 3_601_000) == nil)
      #expect(try await a.take("otp.phone:+15550100", cost: 1, in: hour, now: 3_601_001) == 3_599_999)
    }
  }

  @Test(arguments: StoreEngine.all)
  func concurrentTakesOnTwoNodesNeverExceedTheLimit(_ engine: StoreEngine) async throws {
    try await Self.withTwoNodes(engine) { a, b in
      let minute = WindowLimit(limit: 25, window: 60_000)
      let granted = try await withThrowingTaskGroup(of: Bool.self) { group in
        for attempt in 0..<80 {
          group.addTask {
            // Requests read their clocks a few milliseconds apart and reach the counters in any order.
            let now = 5_000 + Int64(attempt % 7)
            return try await (attempt.isMultiple(of: 2) ? a : b).take(
              "fixes.account:anna", cost: 1, in: minute, now: now)
              == nil
          }
        }
        return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
      }
      #expect(granted == 25)
      // The window started with whichever request came first (at 5,000 to 5,006).
      let wait = try #require(try await b.take("fixes.account:anna", cost: 1, in: minute, now: 5_010))
      #expect((59_990...59_996).contains(wait))
    }
  }

  @Test(arguments: StoreEngine.all)
  func failuresOnOneNodeDelayAttemptsOnTheOther(_ engine: StoreEngine) async throws {
    try await Self.withTwoNodes(engine) { a, b in
      let policy = BackoffPolicy(freeFailures: 3, baseDelay: 1_000, maximumDelay: 60_000, forgetAfter: 3_600_000)
      let key = "signin.account:anna@example.com"
      try await a.recordFailure(key, policy: policy, now: 0)
      try await b.recordFailure(key, policy: policy, now: 10)
      #expect(try await a.failureWait(key, policy: policy, now: 10) == nil)
      try await a.recordFailure(key, policy: policy, now: 20)
      #expect(try await b.failureWait(key, policy: policy, now: 20) == 1_000)
      // Failures recorded at once on both nodes are all counted.
      try await withThrowingTaskGroup(of: Void.self) { group in
        for attempt in 0..<6 {
          group.addTask { try await (attempt.isMultiple(of: 2) ? a : b).recordFailure(key, policy: policy, now: 30) }
        }
        try await group.waitForAll()
      }
      // 9 failures: 6 past the free ones, 64 s capped at 60 s from the last one.
      #expect(try await a.failureWait(key, policy: policy, now: 30) == 60_000)
      #expect(try await b.failureWait(key, policy: policy, now: 60_029) == 1)
      try await b.clearFailures(key)
      #expect(try await a.failureWait(key, policy: policy, now: 60_029) == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func takesRemoveExpiredCountersNowAndThen(_ engine: StoreEngine) async throws {
    try await Self.withTwoNodes(engine) { a, _ async throws in
      // Far from the other tests' times, so that no other take in this process cleaned up less than 10 s before.
      let start: Int64 = 4_000_000_000_000_000
      let minute = WindowLimit(limit: 1, window: 60_000)
      for key in ["search.account:anna", "search.account:bob"] {
        #expect(try await a.take(key, cost: 1, in: minute, now: start) == nil)
      }
      // Two minutes later both windows are over: the next take removes their rows before it counts.
      #expect(try await a.take("search.account:carol", cost: 1, in: minute, now: start + 120_000) == nil)
      #expect(try await a.removeExpiredCounters(now: start + 120_000) == 0)
      #expect(try await a.removeExpiredCounters(now: start + 180_000) == 1)
    }
  }
}

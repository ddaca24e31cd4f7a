import MeridianServer
import MeridianStore
import Testing

/// The limits' arithmetic (``WindowLimit``, ``BackoffPolicy``) and the server's limiters over the in-memory counters.
/// The same cases run on every engine's shared counters in `LimitContractTests`.
@Suite struct LimitTests {
  @Test func aWindowCountsUntilItsEndThenStartsAgain() {
    let rule = WindowLimit(limit: 5, window: 1_000)
    var counter: LimitCounter?
    for (cost, now, expected) in [(2, 100, "taken 2 since 100"), (3, 500, "taken 5 since 100"), (1, 600, "wait 500")] {
      let outcome = rule.take(cost: cost, from: counter, now: Int64(now))
      #expect(describe(outcome) == expected)
      if case .taken(let next) = outcome { counter = next }
    }
    // 1,100 is exactly one window after 100: a new window.
    #expect(describe(rule.take(cost: 1, from: counter, now: 1_099)) == "wait 1")
    #expect(describe(rule.take(cost: 1, from: counter, now: 1_100)) == "taken 1 since 1100")
  }

  @Test func aCostLargerThanTheLimitNeverFits() {
    let rule = WindowLimit(limit: 5, window: 1_000)
    #expect(describe(rule.take(cost: 6, from: nil, now: 100)) == "wait 1000")
    #expect(describe(rule.take(cost: 6, from: LimitCounter(count: 0, since: 0), now: 250)) == "wait 750")
    #expect(describe(rule.take(cost: 5, from: nil, now: 100)) == "taken 5 since 100")
  }

  @Test func aClockThatGoesBackFurtherThanTheSkewStartsANewWindow() {
    let rule = WindowLimit(limit: 2, window: 1_000, skew: 1_000)
    let full = LimitCounter(count: 2, since: 5_000)
    #expect(describe(rule.take(cost: 1, from: full, now: 5_500)) == "wait 500")
    #expect(describe(rule.take(cost: 1, from: full, now: 4_000)) == "wait 2000")
    #expect(describe(rule.take(cost: 1, from: full, now: 3_999)) == "taken 1 since 3999")
    #expect(
      describe(WindowLimit(limit: 2, window: 1_000, skew: 0).take(cost: 1, from: full, now: 4_999))
        == "taken 1 since 4999")
  }

  @Test func theBackoffDoublesAfterTheFreeFailuresUpToItsMaximum() {
    let policy = BackoffPolicy(freeFailures: 2, baseDelay: 1_000, maximumDelay: 5_000, forgetAfter: 60_000)
    var counter: LimitCounter?
    var waits: [Int64?] = []
    for failure in 0..<6 {
      counter = policy.recordingFailure(on: counter, now: Int64(failure) * 10)
      waits.append(policy.wait(after: counter, now: Int64(failure) * 10))
    }
    // Two free failures, then 1 s, 2 s, 4 s, and 8 s capped at 5 s, counted from the last failure.
    #expect(waits == [nil, 1_000, 2_000, 4_000, 5_000, 5_000])
    #expect(policy.wait(after: counter, now: 50 + 4_999) == 1)
    #expect(policy.wait(after: counter, now: 50 + 5_000) == nil)
  }

  @Test func failuresAreForgottenAfterTheirTime() {
    let policy = BackoffPolicy(freeFailures: 1, baseDelay: 1_000, maximumDelay: 5_000, forgetAfter: 3_000)
    let counter = LimitCounter(count: 4, since: 10_000)
    #expect(policy.wait(after: counter, now: 11_000) == 4_000)
    #expect(policy.wait(after: counter, now: 12_999) == 2_001)
    #expect(policy.wait(after: counter, now: 13_000) == nil)  // forgotten before the 5 s delay ends
    #expect(policy.recordingFailure(on: counter, now: 12_999) == LimitCounter(count: 5, since: 12_999))
    #expect(policy.recordingFailure(on: counter, now: 13_000) == LimitCounter(count: 1, since: 13_000))
  }

  @Test func aLimitOfZeroDoesNoWork() async throws {
    let memory = InMemoryLimitStore()
    let limiter = RateLimiter(limit: 0, window: 1_000, counters: .shared(memory, purpose: "test"))
    let backoff = FailureBackoff(freeFailures: 0, counters: .shared(memory, purpose: "test"))
    for now in Int64(0)..<100 {
      #expect(await limiter.take("a", cost: 1_000, now: now) == nil)
      await backoff.failed("a", now: now)
      #expect(try await backoff.wait("a", now: now) == nil)
    }
    #expect(memory.count == 0)
  }

  @Test func limitersKeyTheSharedCountersByPurpose() async {
    let shared = InMemoryLimitStore()
    let phones = RateLimiter(limit: 1, window: 1_000, counters: .shared(shared, purpose: "otp.phone"))
    let addresses = RateLimiter(limit: 1, window: 1_000, counters: .shared(shared, purpose: "otp.address"))
    #expect(await phones.allow("x", now: 0))
    #expect(await addresses.allow("x", now: 0))
    #expect(await phones.allow("x", now: 1) == false)
    #expect(shared.count == 2)
    // Another limiter on the same counters and purpose (another node) sees the same window.
    let elsewhere = RateLimiter(limit: 1, window: 1_000, counters: .shared(shared, purpose: "otp.phone"))
    #expect(await elsewhere.take("x", cost: 1, now: 2) == 998)
  }

  @Test func aSuccessClearsTheAccountsFailures() async throws {
    let backoff = FailureBackoff(freeFailures: 1, baseDelay: 1_000)
    await backoff.failed("anna", now: 0)
    await backoff.failed("anna", now: 100)
    #expect(try await backoff.wait("anna", now: 200) == 1_900)
    #expect(try await backoff.wait("bob", now: 200) == nil)
    await backoff.succeeded("anna")
    #expect(try await backoff.wait("anna", now: 200) == nil)
  }

  @Test func theMemoryDropsExpiredCountersAboveItsCapacity() {
    let memory = InMemoryLimitStore(capacity: 3)
    let rule = WindowLimit(limit: 1, window: 1_000)
    for key in ["a", "b", "c", "d"] { #expect(memory.take(key, cost: 1, in: rule, now: 0) == nil) }
    #expect(memory.count == 4)  // nothing had expired
    #expect(memory.take("e", cost: 1, in: rule, now: 1_000) == nil)
    #expect(memory.count == 1)
    #expect(memory.take("a", cost: 1, in: rule, now: 1_001) == nil)  // a new window: the old one was dropped
    #expect(memory.removeExpiredCounters(now: 2_001) == 2)
  }

  private func describe(_ outcome: WindowLimit.Outcome) -> String {
    switch outcome {
    case .taken(let counter): "taken \(counter.count) since \(counter.since)"
    case .refused(let wait): "wait \(wait)"
    }
  }
}

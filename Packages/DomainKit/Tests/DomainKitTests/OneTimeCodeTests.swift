import DomainKitTesting
import Foundation
import Testing

@testable import DomainKit

@Suite struct OneTimeCodeTests {
  @Test func codesAreSixDigits() throws {
    #expect(try OneTimeCode("012345").digits == "012345")
    #expect(try OneTimeCode(" 123 456 ").digits == "123456")
    #expect(try OneTimeCode("123-456").digits == "123456")
    for bad in ["", "12345", "1234567", "12345a", "١٢٣٤٥٦", "12 34 5", "+12345"] {
      #expect(throws: OneTimeCodeError.malformed) { try OneTimeCode(bad) }
    }
    #expect(try OneTimeCode("123456").description == "••••••")
  }

  @Test func randomCodesAreWellFormedAndSpread() throws {
    var rng = SplitMix64(seed: 42)
    var seen = Set<String>()
    for _ in 0..<1000 {
      let code = OneTimeCode.random(using: &rng)
      #expect(try OneTimeCode(code.digits) == code)
      seen.insert(code.digits)
    }
    #expect(seen.count > 990)
    #expect(OneTimeCode.random().digits.count == 6)
  }

  @Test func rightCodeWorksOnce() throws {
    var challenge = OneTimeCodeChallenge(destination: "+380671234567", codeHash: "h(123456)", now: 1_000)
    #expect(challenge.expiresAt == 1_000 + 300_000)
    try challenge.verify(codeHash: "h(123456)", now: 2_000)
    #expect(challenge.used)
    #expect(throws: OneTimeCodeError.alreadyUsed) { try challenge.verify(codeHash: "h(123456)", now: 2_001) }
  }

  @Test func expiresAfterFiveMinutes() throws {
    var challenge = OneTimeCodeChallenge(destination: "a@example.com", codeHash: "h", now: 0)
    #expect(!challenge.isExpired(at: 299_999))
    #expect(challenge.isExpired(at: 300_000))
    #expect(throws: OneTimeCodeError.expired) { try challenge.verify(codeHash: "h", now: 300_000) }
    #expect(!challenge.used && challenge.attempts == 0)
    var fresh = OneTimeCodeChallenge(destination: "a@example.com", codeHash: "h", now: 0)
    try fresh.verify(codeHash: "h", now: 299_999)
  }

  @Test func atMostFiveAttempts() throws {
    var challenge = OneTimeCodeChallenge(destination: "+380671234567", codeHash: "right", now: 0)
    for remaining in [4, 3, 2, 1] {
      #expect(throws: OneTimeCodeError.incorrect(remainingAttempts: remaining)) {
        try challenge.verify(codeHash: "wrong", now: 1)
      }
    }
    #expect(throws: OneTimeCodeError.tooManyAttempts) { try challenge.verify(codeHash: "wrong", now: 1) }
    #expect(challenge.attempts == 5 && challenge.remainingAttempts == 0)
    // Even the right code no longer works.
    #expect(throws: OneTimeCodeError.tooManyAttempts) { try challenge.verify(codeHash: "right", now: 2) }
    #expect(!challenge.used)
    #expect(OneTimeCodeError.incorrect(remainingAttempts: 1).description == "That code is wrong. You have 1 more try.")
  }

  @Test func constantTimeComparison() {
    #expect(ConstantTime.equals("abc", "abc"))
    #expect(!ConstantTime.equals("abc", "abd"))
    #expect(!ConstantTime.equals("abc", "ab"))
    #expect(!ConstantTime.equals("", "a"))
    #expect(ConstantTime.equals("", ""))
    // Lengths differing by a multiple of 256 with a zero-padded tail are still different.
    #expect(!ConstantTime.equals([UInt8](repeating: 0, count: 256), []))
    #expect(ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]))
  }

  @Test func challengeRoundTrips() throws {
    var challenge = OneTimeCodeChallenge(destination: "+380671234567", codeHash: "h", now: 5)
    #expect(throws: OneTimeCodeError.self) { try challenge.verify(codeHash: "x", now: 6) }
    let data = try JSONEncoder().encode(challenge)
    #expect(try JSONDecoder().decode(OneTimeCodeChallenge.self, from: data) == challenge)
  }

  @Test func rateLimitPerDestination() throws {
    let limit = OneTimeCodeRateLimit()
    try limit.check(previousSends: [], now: 0)
    #expect(throws: OneTimeCodeError.rateLimited(retryAfter: 30_000)) {
      try limit.check(previousSends: [100_000], now: 130_000)
    }
    try limit.check(previousSends: [100_000], now: 160_000)
    // Five in the last hour: wait until the oldest leaves the window.
    let five: [Int64] = [0, 600_000, 1_200_000, 1_800_000, 2_400_000]
    #expect(throws: OneTimeCodeError.rateLimited(retryAfter: 600_000)) {
      try limit.check(previousSends: five, now: 3_000_000)
    }
    try limit.check(previousSends: five, now: 3_600_000)
    // Order doesn't matter; absurd times don't trap.
    try limit.check(previousSends: five.reversed(), now: 3_600_000)
    try limit.check(previousSends: [Int64.min], now: .max)
    #expect(OneTimeCodeError.rateLimited(retryAfter: 30_000).description.contains("1 min"))
  }
}

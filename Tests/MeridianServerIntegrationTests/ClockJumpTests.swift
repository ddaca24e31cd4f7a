import DomainKit
import Foundation
import MeridianAPI
import MeridianServer
import MeridianTestSupport
import NetworkingKit
import Testing

/// The machine's clock stepped back an hour and forward a day while fixes arrive (the server on its own
/// ``SteadyClock`` over a wall clock the test moves; devices date their fixes correctly by the real time): no
/// correctly dated fix is refused, no token is valid past its expiry, and the upload rate limit holds and resets.
@Suite struct ClockJumpTests {
  static let hour: Int64 = 3_600_000
  static let day: Int64 = 86_400_000

  /// A fix dated `time` (the device's correct clock), a few metres apart each time.
  static func fix(at time: Int64, _ index: Int) throws -> LocationFix {
    try LocationFix(
      deviceID: "phone", timestamp: time, latitude: 50.45 + Double(index) * 0.0001, longitude: 30.52,
      horizontalAccuracy: 10)
  }

  static func realTime() -> Int64 { Timestamp.milliseconds(Date()) }

  @Test func aClockSteppedBackAnHourRefusesNoCorrectlyDatedFix() async throws {
    let wall = TestClock()
    try await TestServer.with(wall: wall) { server in
      let (_, anna) = try await server.signUp("anna")
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "phone", fixes: [try Self.fix(at: Self.realTime(), 0)]))
      wall.advance(-Self.hour)
      // An hour ahead of the wall clock, not of the server's: stored.
      for index in 1...3 {
        let receipt = try await anna.send(
          API.postFixes, body: FixBatch(deviceId: "phone", fixes: [try Self.fix(at: Self.realTime() + 1_000, index)]))
        #expect(receipt.accepted == 1)
      }
      // The rule itself still holds: a fix dated an hour ahead of the real time is refused.
      await expectAPIError(.invalidFix, status: 400) {
        try await anna.send(
          API.postFixes, body: FixBatch(deviceId: "phone", fixes: [try Self.fix(at: Self.realTime() + Self.hour, 9)]))
      }
      print("clock jumps: wall clock back 1 h — correctly dated fixes stored, one dated 1 h ahead refused")
    }
  }

  @Test func aTokenPastItsExpiryStaysExpiredWhenTheClockIsSteppedBack() async throws {
    let wall = TestClock()
    try await TestServer.with(wall: wall, { $0.tokenLifetime = 3_600 }) { server in
      let (_, anna) = try await server.signUp("anna")
      _ = try await anna.send(API.groups)
      wall.advance(Self.day)  // a day forward: past the hour the token had
      await expectAPIError(.tokenInvalid, status: 401) { try await anna.send(API.groups) }
      wall.advance(-Self.day)  // corrected back: the token does not live again
      await expectAPIError(.tokenInvalid, status: 401) { try await anna.send(API.groups) }
      // A new sign-in works at once, and for its whole lifetime on the server's clock.
      let (_, again) = try await server.signUp("bob")
      _ = try await again.send(API.groups)
      print("clock jumps: wall clock +1 day then −1 day — an expired token stays expired, a new one works")
    }
  }

  @Test func theUploadRateLimitHoldsAcrossStepsAndResetsAfterItsWindow() async throws {
    let wall = TestClock()
    try await TestServer.with(wall: wall, { $0.limits.fixesPerAccountPerMinute = 3 }) { server in
      let (_, anna) = try await server.signUp("anna")
      func upload(_ index: Int) async throws -> FixReceipt {
        try await anna.send(
          API.postFixes, body: FixBatch(deviceId: "phone", fixes: [try Self.fix(at: Self.realTime(), index)]))
      }
      for index in 0..<3 { _ = try await upload(index) }
      await expectAPIError(.rateLimited, status: 429) { try await upload(3) }
      // Stepped back an hour: the window is not reopened by a clock that went back.
      wall.advance(-Self.hour)
      await expectAPIError(.rateLimited, status: 429) { try await upload(4) }
      // Forward a day (past the window): a new window, limited as before.
      wall.advance(Self.day + Self.hour)
      for index in 5..<8 { _ = try await upload(index) }
      await expectAPIError(.rateLimited, status: 429) { try await upload(8) }
      print("clock jumps: wall clock −1 h then +1 day — the upload limit (3/min) held, then reset once")
    }
  }
}

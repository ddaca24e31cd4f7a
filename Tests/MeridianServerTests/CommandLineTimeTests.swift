import Foundation
import MeridianAPI
import Testing

/// The one reading of typed times that `meridian-tracker` and `meridian-admin` share.
@Suite struct CommandLineTimeTests {
  let kyiv = TimeZone(identifier: "Europe/Kyiv")!
  let utc = TimeZone(identifier: "UTC")!

  @Test func aDateAloneIsMidnightInTheGivenTimeZone() {
    // 2026-11-24 00:00 in Kyiv (UTC+2) is 2026-11-23 22:00 UTC.
    #expect(CommandLineTime.parse("2026-11-24", timeZone: kyiv) == 1_795_471_200_000)
    #expect(CommandLineTime.parse("2026-11-24", timeZone: utc) == 1_795_478_400_000)
    #expect(CommandLineTime.parse(" 2026-11-24 ", timeZone: utc) == 1_795_478_400_000)
  }

  @Test func isoTimesCarryTheirZoneAndDefaultToUTC() {
    #expect(CommandLineTime.parse("2026-11-24T08:30:00Z", timeZone: kyiv) == 1_795_509_000_000)
    #expect(CommandLineTime.parse("2026-11-24T10:30:00+02:00", timeZone: utc) == 1_795_509_000_000)
    #expect(CommandLineTime.parse("2026-11-24T08:30:00", timeZone: kyiv) == 1_795_509_000_000)
  }

  @Test func epochMillisecondsWithinThePlausibleRange() {
    #expect(CommandLineTime.parse("1795656894000") == 1_795_656_894_000)
    #expect(CommandLineTime.parse("-5") == nil)
    #expect(CommandLineTime.parse("99999999999999999") == nil)
  }

  @Test func anythingElseIsRefused() {
    for text in ["2026-02-30", "yesterday", "24.11.2026", "", "2026-11", "2026-11-24T25:00:00Z"] {
      #expect(CommandLineTime.parse(text, timeZone: utc) == nil, "\(text)")
    }
  }
}

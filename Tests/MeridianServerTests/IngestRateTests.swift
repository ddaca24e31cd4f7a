import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import Testing

@Suite struct IngestRateTests {
  @Test func countsTheFixesOfTheLastWindowOnly() {
    let rate = IngestRate(windowSeconds: 60)
    let start: Int64 = 1_700_000_000_000
    rate.record(10, at: start)
    rate.record(5, at: start + 999)
    rate.record(7, at: start + 1_000)
    rate.record(3, at: start + 59_000)
    #expect(rate.accepted(at: start + 59_500) == 25)
    // The first second leaves the window; its slot is reused by a later second.
    #expect(rate.accepted(at: start + 60_000) == 10)
    rate.record(4, at: start + 60_000)
    #expect(rate.accepted(at: start + 60_000) == 14)
    #expect(rate.accepted(at: start + 200_000) == 0)
    // Nothing counts before it happened, and nothing is counted for no fixes.
    rate.record(0, at: start + 200_000)
    #expect(rate.accepted(at: start - 1_000) == 0)
  }
}

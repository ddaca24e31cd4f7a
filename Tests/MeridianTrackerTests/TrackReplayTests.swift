import MeridianTracker
import Testing

/// Where a replayed track is placed in time.
@Suite("Track replay placement")
struct TrackReplayTests {
  @Test func thePlacementKeepsTheSpacingAndEndsNoLaterThanTheReplay() {
    // A track of 400 s; the replay starts at `now`.
    let (first, last, now): (Int64, Int64, Int64) = (1_000, 401_000, 1_800_000_000_000)
    // At once: it ends now.
    #expect(TrackReplay.offset(first: first, last: last, speed: 0, now: now) + last == now)
    // In real time or slower it starts now (and each fix is due no earlier than its time).
    #expect(TrackReplay.offset(first: first, last: last, speed: 1, now: now) + first == now)
    #expect(TrackReplay.offset(first: first, last: last, speed: 0.5, now: now) + first == now)
    // 20 times faster: 20 s of replay, and the last fix is dated when the replay ends.
    #expect(TrackReplay.offset(first: first, last: last, speed: 20, now: now) + last == now + 20_000)
    #expect(TrackReplay.offset(first: first, last: last, speed: 1000, now: now) + last == now + 400)
  }
}

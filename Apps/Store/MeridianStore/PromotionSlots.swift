/// How an interval of a promotion's statistics splits between the quarter-hour summary (`promotion_offer_slots` in
/// both engines) and the raw offer events: whole quarter hours `[summaryStart, summaryEnd)` from the summary, the
/// rest at either end from the events. Every time zone's midnight is a quarter hour, so a day's or a week's
/// interval reads the summary alone.
public struct PromotionSlotSplit: Sendable, Hashable {
  /// The summary's unit, ms: 15 minutes.
  public static let slot: Int64 = 900_000

  /// The interval's start, UTC ms.
  public var start: Int64
  /// The first whole slot's start.
  public var summaryStart: Int64
  /// The end of the last whole slot (`summaryStart` when none).
  public var summaryEnd: Int64
  /// The interval's end (exclusive).
  public var end: Int64

  /// The split of `[start, end)`; events are read from `[start, min(summaryStart, end))` and `[summaryEnd, end)`.
  public init(start: Int64, end: Int64) {
    self.start = start
    self.end = end
    summaryStart = Self.floor(start + Self.slot - 1)
    summaryEnd = max(summaryStart, Self.floor(end))
  }

  /// The parts of the interval the summary leaves out, read from the events: `[start, min(summaryStart, end))` and
  /// `[summaryEnd, end)`, those that are not empty (none when the interval starts and ends on whole slots).
  public var eventRanges: [Range<Int64>] {
    [start..<max(start, min(summaryStart, end)), summaryEnd..<max(summaryEnd, end)].filter { !$0.isEmpty }
  }

  /// The slot that holds `time`.
  public static func floor(_ time: Int64) -> Int64 {
    time - ((time % slot) + slot) % slot
  }
}

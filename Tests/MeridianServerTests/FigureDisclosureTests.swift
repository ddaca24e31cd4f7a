import DomainKit
import MeridianAPI
import Testing

/// The k-anonymity rule of promotion figures (``FigureDisclosure``) against the subtraction attack: an advertiser asks
/// for every bucket there is — each day, each week, each run of days a range cuts out of a week — and combines the
/// exact answers. No day of 1 to 4 people may come out of any combination.
@Suite struct FigureDisclosureTests {
  /// Two weeks of a promotion: people (and so offers) per day, by a small deterministic generator; about a third of
  /// the days hold 1 to 4 people, some none.
  static func fortnight(seed: UInt64) -> [Int] {
    var state = seed
    return (0..<14).map { _ in
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      let draw = Int((state >> 33) % 12)
      return draw < 2 ? 0 : draw < 6 ? draw - 1 : draw + 3  // 0, 1…4 or 6…11 people
    }
  }

  /// Every bucket a report can have: the days of a run within one Monday-to-Sunday week (a day, a whole week, or the
  /// part of a week a range's ends cut).
  static let buckets: [ClosedRange<Int>] = (0..<2).flatMap { week in
    (0..<7).flatMap { first in (first..<7).map { last in (week * 7 + first)...(week * 7 + last) } }
  }

  /// The days whose count the exact buckets give away: those whose unit vector lies in the span of the exact
  /// buckets' day vectors (a linear combination of answers equals that day's count), by Gaussian elimination.
  static func recoverableDays(exact: [ClosedRange<Int>]) -> Set<Int> {
    var rows: [[Double]] = []
    for bucket in exact {
      var row = [Double](repeating: 0, count: 14)
      for day in bucket { row[day] = 1 }
      rows.append(row)
    }
    func rank(_ matrix: [[Double]]) -> Int {
      var matrix = matrix
      var rank = 0
      for column in 0..<14 {
        guard let pivot = (rank..<matrix.count).first(where: { abs(matrix[$0][column]) > 1e-9 }) else { continue }
        matrix.swapAt(rank, pivot)
        for row in matrix.indices where row != rank && abs(matrix[row][column]) > 1e-9 {
          let factor = matrix[row][column] / matrix[rank][column]
          for index in 0..<14 { matrix[row][index] -= factor * matrix[rank][index] }
        }
        rank += 1
      }
      return rank
    }
    let base = rank(rows)
    return Set(
      (0..<14).filter { day in
        var unit = [Double](repeating: 0, count: 14)
        unit[day] = 1
        return rank(rows + [unit]) == base
      })
  }

  /// The buckets a rule shows exactly, for `people` per day (each person on one day, so a bucket's people add up).
  static func exactBuckets(_ people: [Int], shows: (Int, [Int]) -> Bool) -> [ClosedRange<Int>] {
    buckets.filter { bucket in
      let daily = bucket.map { people[$0] }
      return shows(daily.reduce(0, +), daily)
    }
  }

  @Test func noCombinationOfAnswersRecoversADayOfFewerThanFivePeople() {
    var attacked = 0
    for seed in 1...40 as ClosedRange<UInt64> {
      let people = Self.fortnight(seed: seed)
      let hidden = Set(people.indices.filter { (1..<AggregateCount.minimum).contains(people[$0]) })
      guard !hidden.isEmpty else { continue }
      // Hiding the small days alone lets week-minus-days through (the attack works)…
      let naive = Self.exactBuckets(people) { total, _ in total >= AggregateCount.minimum }
      if !Self.recoverableDays(exact: naive).isDisjoint(with: hidden) { attacked += 1 }
      // …the rule leaves no hidden day recoverable.
      let exact = Self.exactBuckets(people) { total, daily in
        FigureDisclosure.of(people: total, dailyPeople: daily) == .shown
      }
      let leaked = Self.recoverableDays(exact: exact).intersection(hidden)
      #expect(leaked.isEmpty, "seed \(seed): days \(leaked.sorted()) of \(people)")
    }
    #expect(attacked > 10)  // the attack is real on most of these fortnights
  }

  @Test func aBucketIsExactOnlyWhenEachOfItsDaysIsExactOrEmpty() {
    #expect(FigureDisclosure.of(people: 4, dailyPeople: [4]) == .fewerThanMinimum)
    #expect(FigureDisclosure.of(people: 5, dailyPeople: [5]) == .shown)
    #expect(FigureDisclosure.of(people: 12, dailyPeople: [6, 0, 6]) == .shown)
    #expect(FigureDisclosure.of(people: 9, dailyPeople: [6, 3]) == .withheld)
    #expect(FigureDisclosure.of(people: 3, dailyPeople: [0, 3]) == .fewerThanMinimum)
    let row = PromotionStatsRow(
      start: CalendarDay(year: 2026, month: 3, day: 23)!, end: CalendarDay(year: 2026, month: 3, day: 29)!,
      offers: 20, people: 9, redeemed: 5, dailyPeople: [6, 3, 0, 0, 0, 0, 0])
    #expect(row.offered == .withheld && row.people == .withheld && row.redeemed == .withheld && row.conversion == nil)
  }
}

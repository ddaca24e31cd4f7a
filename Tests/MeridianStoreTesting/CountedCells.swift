import DomainKit
import MeridianAPI
import MeridianStore

extension FixStore {
  /// The owner's cells of `precision` in `ranges` counted over all time from the counts per hour, checked against the
  /// counts per day: throws ``SpansDisagree`` unless every ``HistoryCells/Span`` gives the same cells and counts.
  public func cellsOfAllTime(
    owner: UserID, precision: Int, ranges: [(lower: String, upper: String)] = [HistoryCells.range("")]
  ) async throws -> [HistoryCluster] {
    var answers: [[HistoryCluster]] = []
    for span in HistoryCells.Span.allCases {
      answers.append(
        try await countedClusters(
          owner: owner, precision: precision, span: span, periods: 0..<(Int64.max / span.milliseconds),
          ranges: ranges))
    }
    let counts = answers.map { Dictionary(uniqueKeysWithValues: $0.map { ($0.geohash, $0.count) }) }
    guard Set(counts).count == 1 else { throw SpansDisagree(counts: counts) }
    return answers[0]
  }
}

/// The counts of each ``HistoryCells/Span`` (in `allCases` order) gave different cells or counts.
public struct SpansDisagree: Error, CustomStringConvertible {
  /// Each span's count per cell.
  public var counts: [[String: Int]]
  public var description: String { "the counts per hour and per day differ: \(counts)" }
}

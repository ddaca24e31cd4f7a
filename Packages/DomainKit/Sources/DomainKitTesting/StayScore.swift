import DomainKit
import Foundation
import GeoKit

/// Precision and recall of detected stays against the true ones.
///
/// A detected stay matches a true one when their times overlap by at least half of each (the shared time is ≥ 50 %
/// of the longer of the two) and the detected centre lies within `radius` metres of the true one. Each stay matches
/// at most one other (the largest overlap first).
public struct StayScore: Sendable, Hashable, CustomStringConvertible {
  /// True stays.
  public var truth: Int
  /// Detected stays.
  public var detected: Int
  /// Pairs matched.
  public var matched: Int

  /// A score from its counts.
  public init(truth: Int, detected: Int, matched: Int) {
    self.truth = truth
    self.detected = detected
    self.matched = matched
  }

  /// Scores `detected` against `truth` (both any order).
  public init(detected: [Visit], truth: [LabelledStay], radius: Double = 100) {
    var pairs: [(overlap: Int64, visit: Int, stay: Int)] = []
    let sorted = truth.enumerated().sorted { $0.element.arrival < $1.element.arrival }
    for (visitIndex, visit) in detected.enumerated() {
      // True stays that start before the visit ends; the overlap decides.
      for (stayIndex, stay) in sorted where stay.arrival <= visit.departure && stay.departure >= visit.arrival {
        let overlap = Self.overlap(visit, stay)
        if Self.matches(visit, stay, radius: radius) { pairs.append((overlap, visitIndex, stayIndex)) }
      }
    }
    var usedVisits: Set<Int> = []
    var usedStays: Set<Int> = []
    for pair in pairs.sorted(by: { $0.overlap > $1.overlap })
    where !usedVisits.contains(pair.visit) && !usedStays.contains(pair.stay) {
      usedVisits.insert(pair.visit)
      usedStays.insert(pair.stay)
    }
    self.init(truth: truth.count, detected: detected.count, matched: usedVisits.count)
  }

  /// Whether `visit` is a detection of `stay`: overlap ≥ 50 % of each, centre within `radius`.
  public static func matches(_ visit: Visit, _ stay: LabelledStay, radius: Double = 100) -> Bool {
    let longer = max(visit.duration, stay.departure - stay.arrival)
    return overlap(visit, stay) * 2 >= longer && visit.location.haversineDistance(to: stay.center) <= radius
  }

  /// The time both share, ms (0 when none).
  static func overlap(_ visit: Visit, _ stay: LabelledStay) -> Int64 {
    max(0, min(visit.departure, stay.departure) - max(visit.arrival, stay.arrival))
  }

  /// Matched detections / detections (1 with none detected).
  public var precision: Double { detected == 0 ? 1 : Double(matched) / Double(detected) }
  /// Matched true stays / true stays (1 with none true).
  public var recall: Double { truth == 0 ? 1 : Double(matched) / Double(truth) }

  /// The sum of two scores (corpus totals).
  public static func + (left: StayScore, right: StayScore) -> StayScore {
    StayScore(
      truth: left.truth + right.truth, detected: left.detected + right.detected, matched: left.matched + right.matched)
  }

  /// `precision 0.97 recall 0.96 (matched 120 of 124 true, 123 detected)`.
  public var description: String {
    String(
      format: "precision %.3f recall %.3f (matched %d of %d true, %d detected)", precision, recall, matched, truth,
      detected)
  }
}

extension StayCorpus {
  /// The score of `detector` over `tracks`, summed.
  public static func score(_ detector: VisitDetector, on tracks: [LabelledTrack]) -> StayScore {
    tracks.reduce(StayScore(truth: 0, detected: 0, matched: 0)) { total, track in
      total + StayScore(detected: detector.visits(in: track.fixes), truth: track.stays, radius: detector.radius)
    }
  }
}

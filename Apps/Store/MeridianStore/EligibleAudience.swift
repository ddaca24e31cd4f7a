import DomainKit
import Foundation
import GeoKit

/// Who may see a venue's special promotions: DomainKit's `PromotionEligibility` ("keeps passing by without
/// visiting") over the stored fixes near the venue, with `VisitDetector` finding the visits. One rule for the
/// listing a user sees (`GET /v1/venues/{id}/promotions`) and the audience an operator counts (`promotions stats`).
public struct EligibleAudience: Sendable {
  let store: any MeridianStore

  /// The audience of venues in `store` by `rule` (DomainKit's default: 150 m, 3 of 14 days).
  public init(store: any MeridianStore, rule: PromotionEligibility = PromotionEligibility()) {
    self.store = store
    self.rule = rule
  }
  let rule: PromotionEligibility
  let detector = VisitDetector()

  /// How far from the venue fixes are read: a visit counts when its centre is within the rule's radius, and its
  /// fixes lie within the detector's radius of its first fix, so every fix of such a visit is within
  /// radius + 2 × detector radius of the venue.
  var searchRadius: Double { rule.radius + 2 * detector.radius }

  /// Whether `user` is eligible for `place`'s special promotions at `now`.
  public func isEligible(_ user: UserID, for place: Place, now: Int64) async throws -> Bool {
    guard let location = place.location else { return false }
    let runs = try await store.fixRuns(
      owner: user, near: location, radius: searchRadius,
      from: rule.periodStart(now: now, timeZone: place.resolvedTimeZone),
      to: now)
    return rule.isEligible(
      fixes: runs.joined(), visits: runs.flatMap { detector.visits(in: $0) }, venue: place, now: now)
  }

  /// How many users are eligible for `place`'s special promotions at `now`.
  public func count(for place: Place, now: Int64) async throws -> Int {
    try await eligibleUsers(for: place, now: now).count
  }

  /// The users eligible for `place`'s special promotions at `now`.
  public func eligibleUsers(for place: Place, now: Int64) async throws -> Set<UserID> {
    guard let location = place.location else { return [] }
    let from = rule.periodStart(now: now, timeZone: place.resolvedTimeZone)
    var eligible: Set<UserID> = []
    for user in try await store.usersSeen(near: location, radius: searchRadius, from: from, to: now)
    where try await isEligible(user, for: place, now: now) {
      eligible.insert(user)
    }
    return eligible
  }

  /// How many users are eligible for `place`'s special promotions at each of `times` (ascending), as
  /// ``count(for:now:)`` at each: one read of the people seen and of each one's fixes over the whole span, then
  /// the rule at every instant in memory (a year of daily figures reads the store once, not 365 times).
  public func counts(for place: Place, at times: [Int64]) async throws -> [Int] {
    guard let location = place.location, let first = times.first, let last = times.last else {
      return times.map { _ in 0 }
    }
    let zone = place.resolvedTimeZone
    let starts = times.map { rule.periodStart(now: $0, timeZone: zone) }
    let from = starts.min() ?? rule.periodStart(now: first, timeZone: zone)
    var eligible = times.map { _ in 0 }
    for user in try await store.usersSeen(near: location, radius: searchRadius, from: from, to: last) {
      let runs = try await store.fixRuns(owner: user, near: location, radius: searchRadius, from: from, to: last)
      for (index, (start, now)) in zip(starts, times).enumerated() {
        // The runs the store would answer for start...now: each run cut to the period, as a run stays in order.
        let cut = runs.map { $0.filter { $0.timestamp >= start && $0.timestamp <= now } }.filter { !$0.isEmpty }
        guard !cut.isEmpty else { continue }
        if rule.isEligible(fixes: cut.joined(), visits: cut.flatMap { detector.visits(in: $0) }, venue: place, now: now)
        {
          eligible[index] += 1
        }
      }
    }
    return eligible
  }
}

import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

/// The proximity phase of `meridian-server-bench`: `BENCH_PROXIMITY_PEOPLE` people (10,000 by default) in one
/// 20 km × 20 km city, in families of five who share their locations with each other, each with a proximity rule
/// (500 m) about every other member of their family; their last positions in the monitor's in-memory
/// ``ProximityIndex`` (a grid), then random fixes of random people, each moved within 2 km of their family's home,
/// evaluated the way the monitor does — the rules whose partner the grid finds within reach, and the pairs that are
/// near, through DomainKit's ``ProximityRules``:
/// - `proximity.eval.ns_per_fix`: the mean time per fix, the grid lookup included;
/// - `proximity.eval.candidates_per_fix`: how many pairs were evaluated per fix (of 8 rules naming each person).
func proximityFigures() throws {
  let people = max(5, Int(ProcessInfo.processInfo.environment["BENCH_PROXIMITY_PEOPLE"] ?? "") ?? 10_000)
  let family = 5
  let center = Coordinate(uncheckedLatitude: 50.5, longitude: 30.57)
  var random = SystemRandomNumberGenerator()
  let ids = (0..<people).map { UserID("bench-proximity-\($0)") }
  var homes: [Coordinate] = []
  for _ in stride(from: 0, to: people, by: family) {
    homes.append(
      try center.destination(
        bearing: Double.random(in: 0..<360, using: &random), distance: Double.random(in: 0...9_000, using: &random)))
  }
  var involving: [UserID: [ProximityRuleItem]] = [:]
  for first in stride(from: 0, to: people, by: family) {
    let members = Array(first..<min(first + family, people))
    for owner in members {
      for other in members where other != owner {
        let rule = ProximityRuleItem(
          id: ProximityRuleID("bench-proximity-\(owner)-\(other)"), ownerId: ids[owner], userId: ids[other],
          radius: 500, createdAt: 1)
        involving[ids[owner], default: []].append(rule)
        involving[ids[other], default: []].append(rule)
      }
    }
  }
  var time: Int64 = 1_800_000_000_000
  func fix(near home: Coordinate) throws -> LocationFix {
    let point = try home.destination(
      bearing: Double.random(in: 0..<360, using: &random), distance: Double.random(in: 0...2_000, using: &random))
    time += 100
    return try LocationFix(
      timestamp: time, latitude: point.latitude, longitude: point.longitude, horizontalAccuracy: 10)
  }
  let index = ProximityIndex(lifetime: .max)
  for (person, id) in ids.enumerated() { index.update(id, to: try fix(near: homes[person / family]), now: 1) }

  let rules = ProximityRules()
  var states: [ProximityRuleID: GeofenceState] = [:]
  let fixes = 20_000
  var candidates = 0
  var events = 0
  let start = ContinuousClock.now
  for _ in 0..<fixes {
    let person = Int.random(in: 0..<people, using: &random)
    let id = ids[person]
    let next = try fix(near: homes[person / family])
    for rule in index.rulesToEvaluate(involving[id] ?? [], of: id, at: [next.coordinate], states: states) {
      guard let partner = rule.partner(of: id), let partnerFix = index.position(of: partner, now: 1) else { continue }
      candidates += 1
      let result = rules.evaluate(
        next, partner: partnerFix, radius: rule.radius, state: states[rule.id] ?? ProximityIndex.apart)
      states[rule.id] = result.state
      events += result.events.count
    }
    index.update(id, to: next, now: 1)
  }
  let elapsed = seconds(ContinuousClock.now - start)
  emit("proximity.eval.ns_per_fix", elapsed / Double(fixes) * 1e9, "ns")
  emit("proximity.eval.candidates_per_fix", Double(candidates) / Double(fixes), "pairs")
  emit("proximity.eval.events_per_fix", Double(events) / Double(fixes), "events")
}

import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import Testing

/// ``ProximityIndex``: the rules whose partner is within reach of a fix, by the grid or by each partner's position,
/// are exactly those a scan finds; the pairs to evaluate add the near ones; a position goes stale after its lifetime.
@Suite("Proximity index")
struct ProximityIndexTests {
  static let centre = Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)

  @Test func rulesWithinReachAreExactlyThoseAScanFindsWhicheverWayTheyAreFound() throws {
    let index = ProximityIndex()
    var random = SystemRandomNumberGenerator()
    var positions: [UserID: Coordinate] = [:]
    for number in 0..<2_000 {
      let point = try Self.centre.destination(
        bearing: Double.random(in: 0..<360, using: &random), distance: Double.random(in: 0...30_000, using: &random))
      let id = UserID("p\(number)")
      positions[id] = point
      index.update(id, to: try LocationFix(timestamp: 1, latitude: point.latitude, longitude: point.longitude), now: 1)
    }
    let me = UserID("p0")
    // Few partners (each checked directly) and many (the grid's cells hold fewer people than that), with rules
    // shorter and longer than the grid's radius, owned either way.
    for partners in [3, 1_500] {
      let rules = (1...partners).map { number in
        ProximityRuleItem(
          id: ProximityRuleID("r\(number)"), ownerId: number.isMultiple(of: 2) ? me : UserID("p\(number)"),
          userId: number.isMultiple(of: 2) ? UserID("p\(number)") : me,
          radius: number.isMultiple(of: 7) ? 3_000 : Double(100 + number % 800), createdAt: 1)
      }
      for probe in 0..<20 {
        let point = try Self.centre.destination(bearing: Double(probe) * 17, distance: Double(probe) * 200)
        let expected = rules.filter { rule in
          let partner = rule.partner(of: me) ?? me
          return (positions[partner]?.haversineDistance(to: point) ?? .infinity) <= rule.radius
        }
        #expect(index.rules(rules, of: me, withinReachOf: point).map(\.id) == expected.map(\.id), "\(partners)")
      }
    }
  }

  @Test func nearPairsAreEvaluatedOutOfReachAndPositionsGoStale() throws {
    let index = ProximityIndex(lifetime: 5_000)
    let me = UserID("me")
    let far = try Self.centre.destination(bearing: 0, distance: 10_000)
    index.update(
      UserID("other"), to: try LocationFix(timestamp: 1, latitude: far.latitude, longitude: far.longitude), now: 1_000)
    let rule = ProximityRuleItem(
      id: ProximityRuleID("r"), ownerId: me, userId: UserID("other"), radius: 200, createdAt: 1)
    #expect(index.rulesToEvaluate([rule], of: me, at: [Self.centre], states: [:]).isEmpty)
    #expect(index.rulesToEvaluate([rule], of: me, at: [Self.centre], states: [rule.id: ProximityIndex.apart]).isEmpty)
    let near = GeofenceState(presence: .inside, since: 1, lastFixAt: 1)
    #expect(index.rulesToEvaluate([rule], of: me, at: [Self.centre], states: [rule.id: near]) == [rule])
    #expect(index.rulesToEvaluate([rule], of: me, at: [far], states: [:]) == [rule])
    #expect(index.position(of: UserID("other"), now: 6_000)?.timestamp == 1)
    #expect(index.position(of: UserID("other"), now: 6_001) == nil)
    // An older fix doesn't move a person back, but refreshes what is held.
    index.update(UserID("other"), to: try LocationFix(timestamp: 0, latitude: 0, longitude: 0), now: 6_001)
    #expect(index.position(of: UserID("other"), now: 6_001)?.coordinate == far)
  }
}

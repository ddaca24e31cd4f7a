import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import Synchronization

/// The last positions of the people in proximity rules, kept in memory (one index per node) under DomainKit's
/// ``ProximityGrid``: the partners within reach of a fix are a few cell probes among the people near it, never a scan
/// of every pair.
///
/// A position comes from a fix this node evaluated, or from the store (``FixStore/lastFix(owner:notAfter:)``) when
/// the person is unknown here or their position is older than `lifetime` milliseconds — which bounds how long a
/// position another node evaluated goes unseen.
///
/// ```swift
/// let index = ProximityIndex()
/// index.update(person, to: fix, now: now)
/// let reachable = index.rules(rules, of: person, withinReachOf: fix.coordinate)
/// ```
public final class ProximityIndex: Sendable {
  private struct State {
    var grid: ProximityGrid<UserID>
    var fixes: [UserID: (fix: LocationFix, refreshedAt: Int64)] = [:]
  }

  /// The largest distance the grid answers for (its cells are at least this wide); longer rules are checked against
  /// the partner's position directly.
  public let gridRadius: Double
  /// How long a position counts as current, milliseconds.
  public let lifetime: Int64
  private let state: Mutex<State>

  /// An empty index whose grid answers distances up to `gridRadius` metres.
  public init(gridRadius: Double = 1_000, lifetime: Int64 = 5_000) {
    self.gridRadius = gridRadius
    self.lifetime = lifetime
    state = Mutex(State(grid: ProximityGrid(radius: gridRadius)))
  }

  /// How many people it holds.
  public var count: Int { state.withLock { $0.fixes.count } }

  /// Records `fix` as `person`'s position at `now` (kept when it is not older than the one held).
  public func update(_ person: UserID, to fix: LocationFix, now: Int64) {
    state.withLock { state in
      if let held = state.fixes[person], held.fix.timestamp > fix.timestamp {
        state.fixes[person] = (held.fix, now)
        return
      }
      state.fixes[person] = (fix, now)
      state.grid.update(person, at: fix.coordinate)
    }
  }

  /// Forgets `person`.
  public func remove(_ person: UserID) {
    state.withLock { state in
      state.fixes[person] = nil
      state.grid.remove(person)
    }
  }

  /// `person`'s position when it is current at `now` (refreshed within ``lifetime``), else nil.
  public func position(of person: UserID, now: Int64) -> LocationFix? {
    state.withLock { state in
      guard let held = state.fixes[person] else { return nil }
      let (age, overflow) = now.subtractingReportingOverflow(held.refreshedAt)
      guard !overflow, age <= lifetime else { return nil }
      return held.fix
    }
  }

  /// The state of a pair with no stored state: apart, so that coming near reports `near` (also when the two are
  /// near already at the rule's first fix).
  public static let apart = GeofenceState(presence: .outside)

  /// Whether `state` says no more than that the two are apart: such a pair needs no evaluation while the partner is
  /// out of reach.
  public static func isPlainlyApart(_ state: GeofenceState) -> Bool {
    state.presence == .outside && state.outsideStreak == 0
  }

  /// The rules among `rules` (each naming `person`) to evaluate on `person`'s fixes at `points`: those whose
  /// partner is within reach of one of the points (``rules(_:of:withinReachOf:)``) and those whose pair isn't plainly
  /// apart by `states` (a near pair must see every fix, for the hysteresis and dwell).
  public func rulesToEvaluate(
    _ rules: [ProximityRuleItem], of person: UserID, at points: [Coordinate], states: [ProximityRuleID: GeofenceState]
  ) -> [ProximityRuleItem] {
    var reachable = Set<ProximityRuleID>()
    for point in points { reachable.formUnion(self.rules(rules, of: person, withinReachOf: point).map(\.id)) }
    return rules.filter { reachable.contains($0.id) || !Self.isPlainlyApart(states[$0.id] ?? Self.apart) }
  }

  /// The rules among `rules` (each naming `person`) whose partner's position is within the rule's distance of
  /// `point`. The people the grid holds near the point are the candidates for rules up to ``gridRadius`` — unless
  /// its cells there hold more people than `person` has partners (a crowded city, a person with few rules): then,
  /// as for longer rules, each partner's position is checked directly. Either way no more than the fewer of the two
  /// is looked at.
  public func rules(_ rules: [ProximityRuleItem], of person: UserID, withinReachOf point: Coordinate)
    -> [ProximityRuleItem]
  {
    state.withLock { state in
      let short = rules.filter { $0.radius <= gridRadius }
      var near: [UserID: Double]?
      if let reach = short.map(\.radius).max(),
        let people = state.grid.people(within: reach, of: point, unlessMoreThan: rules.count)
      {
        var found: [UserID: Double] = [:]
        for other in people where other != person {
          if let position = state.fixes[other]?.fix.coordinate { found[other] = position.haversineDistance(to: point) }
        }
        near = found
      }
      return rules.filter { rule in
        guard let partner = rule.partner(of: person) else { return false }
        if let near, rule.radius <= gridRadius { return (near[partner] ?? .infinity) <= rule.radius }
        guard let position = state.fixes[partner]?.fix.coordinate else { return false }
        return position.haversineDistance(to: point) <= rule.radius
      }
    }
  }
}

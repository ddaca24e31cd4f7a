import DomainKit
import Foundation
import GeoKit
import MeridianStore
import PostgresNIO

/// How PostgreSQL would run a spatial query now (`EXPLAIN`), and whether it reads a GiST index: what tests check
/// after bulk loads, and what an operator looks at when a radius query is slow.
public struct SpatialQueryPlan: Sendable, Hashable {
  /// The query, in words.
  public var query: String
  /// `EXPLAIN`'s text, one line per node.
  public var plan: String
  /// Whether the plan reads one of the database's GiST indexes (an index or bitmap index scan on it).
  public var usesSpatialIndex: Bool
}

extension PostgresStore {
  /// The plans of the store's spatial queries around `center` within `radius` metres: the venues within the
  /// radius, the directory's places nearby (a circle, by distance), the fences that may contain the point (the
  /// geofence evaluation's candidates, for `owner`), the people with a fix within the radius and `owner`'s fixes
  /// there (what a promotion's eligible audience reads).
  public func spatialPlans(near center: Coordinate, radius: Double, owner: UserID = "plan")
    async throws -> [SpatialQueryPlan]
  {
    let gist = try await rows("SELECT indexname FROM pg_indexes WHERE indexdef ILIKE '%USING gist%'").map {
      try $0.decode(String.self)
    }
    let now = Int64(Date().timeIntervalSince1970 * 1_000)
    var plans: [SpatialQueryPlan] = []
    for (name, query) in [
      ("venues within \(Int(radius)) m", try Self.venuesWithinQuery(radius, of: center, type: nil)),
      (
        "places within \(Int(radius)) m by distance",
        try Self.placeRanking(PlaceQuery(area: .circle(center: center, radius: radius), sort: .distance)).statement
      ),
      ("geofences around a point", Self.geofenceCandidatesQuery(near: [center], owners: [owner])),
      ("people seen within \(Int(radius)) m", Self.usersSeenQuery(near: center, radius: radius, from: 0, to: now)),
      (
        "\(owner)'s fixes within \(Int(radius)) m",
        Self.fixRunsQuery(owner: owner, near: center, radius: radius, from: 0, to: now)
      ),
    ] {
      let lines = try await planLines(query)
      let plan = lines.joined(separator: "\n")
      let usesIndex = lines.contains { line in
        line.contains("Index Scan") && gist.contains { line.contains(" \($0)") }
      }
      plans.append(SpatialQueryPlan(query: name, plan: plan, usesSpatialIndex: usesIndex))
    }
    return plans
  }
}

extension PostgresStore {
  /// How PostgreSQL would run the reads that follow every commit of fixes now (`EXPLAIN`): the geofence queue's
  /// next entries and the live log's entries after `sequence`, each with its fixes. Both must look the fixes up by
  /// their key, whatever the size of the partitions and however stale their statistics.
  public func fixLookupPlans(liveAfter sequence: UInt64 = 0) async throws -> [(query: String, plan: String)] {
    [
      ("the geofence queue's next entries", try await planLines(Self.geofenceQueueQuery(limit: 1_000, fixes: 10_000))),
      (
        "the live log's entries after \(sequence)",
        try await planLines(Self.liveEntriesQuery(after: sequence, limit: 1_000, fixes: 10_000))
      ),
    ].map { (query: $0.0, plan: $0.1.joined(separator: "\n")) }
  }

  /// How PostgreSQL would run `statement` now: `EXPLAIN`'s lines, one per node.
  func planLines(_ statement: PostgresQuery) async throws -> [String] {
    try await rows(PostgresQuery(unsafeSQL: "EXPLAIN " + statement.sql, binds: statement.binds)).map {
      try $0.decode(String.self)
    }
  }

  /// The value of the run-time parameter `name` in a pooled session (`current_setting`): what the store's own
  /// settings (``withStoreSettings(_:)``) and the URL's `options` made of it.
  public func sessionSetting(_ name: String) async throws -> String {
    let values = try await rows("SELECT current_setting(\(name))").map { try $0.decode(String.self) }
    return values.first ?? ""
  }
}

import DomainKit
import Foundation
import GeoKit
import Logging
import MeridianAPI
import MeridianStore
import PostgresNIO

extension PostgresStore: FixStore {
  // MARK: Devices

  public func deviceOwner(_ device: DeviceID) async throws -> UserID? {
    try await rows("SELECT owner_id FROM device_owners WHERE device_id = \(device.rawValue)").first.map {
      UserID(try $0.decode(String.self))
    }
  }

  public func devices(owner: UserID) async throws -> [OwnedDevice] {
    try await rows(
      """
      SELECT d.id, d.created_at, o.hash IS NOT NULL FROM devices d
      LEFT JOIN osmand_identifiers o ON o.owner_id = d.owner_id AND o.device_id = d.id
      WHERE d.owner_id = \(owner.rawValue) ORDER BY d.created_at, d.id COLLATE "C"
      """
    ).map { row in
      let (id, createdAt, osmAnd) = try row.decode((String, Int64, Bool).self)
      return OwnedDevice(id: DeviceID(id), createdAt: createdAt, osmAnd: osmAnd)
    }
  }

  public func claimDevice(_ device: DeviceID, owner: UserID, now: Int64, maxDevices: Int?) async throws
    -> DeviceClaim
  {
    // Almost every request comes from a known device: memory answers without a round trip.
    if let known = try await deviceOwners.value(
      for: device, now: now, load: { try await deviceOwner(device) })
    {
      return known == owner ? .claimed : .otherOwner
    }
    return try await transaction { connection in
      try await Self.claim(device, owner: owner, now: now, maxDevices: maxDevices, on: connection, self.logger)
    }
  }

  public func enableOsmAnd(device: DeviceID, owner: UserID, identifierHash: String, now: Int64, maxDevices: Int?)
    async throws -> DeviceClaim
  {
    try await transaction { connection in
      let claim = try await Self.claim(
        device, owner: owner, now: now, maxDevices: maxDevices, on: connection, self.logger)
      guard claim == .claimed else { return claim }
      // One identifier per device, one device per identifier: both the device's old one and the identifier's old
      // device go.
      _ = try await connection.query(
        """
        DELETE FROM osmand_identifiers
        WHERE hash = \(identifierHash) OR (owner_id = \(owner.rawValue) AND device_id = \(device.rawValue))
        """, logger: self.logger
      ).collect()
      _ = try await connection.query(
        """
        INSERT INTO osmand_identifiers(hash, owner_id, device_id, created_at)
        VALUES (\(identifierHash), \(owner.rawValue), \(device.rawValue), \(now))
        """, logger: self.logger
      ).collect()
      return .claimed
    }
  }

  public func disableOsmAnd(device: DeviceID, owner: UserID) async throws -> Bool {
    try await !rows(
      """
      DELETE FROM osmand_identifiers WHERE owner_id = \(owner.rawValue) AND device_id = \(device.rawValue)
      RETURNING 1
      """
    ).isEmpty
  }

  public func osmAndDevice(identifierHash: String) async throws -> (device: DeviceID, owner: UserID)? {
    try await rows(
      """
      SELECT o.device_id, o.owner_id FROM osmand_identifiers o JOIN users u ON u.id = o.owner_id
      WHERE o.hash = \(identifierHash) AND NOT u.disabled
      """
    ).first.map { row in
      let (device, owner) = try row.decode((String, String).self)
      return (device: DeviceID(device), owner: UserID(owner))
    }
  }

  /// Registers `device` for `owner` within a transaction, unless another account has it or the quota is full. The
  /// owner's row is locked while the quota is counted, so concurrent claims on several nodes never exceed it; the
  /// device id is taken in `device_owners`, where a concurrent claim by another account waits for this one.
  static func claim(
    _ device: DeviceID, owner: UserID, now: Int64, maxDevices: Int?, on connection: PostgresConnection,
    _ logger: Logger
  ) async throws -> DeviceClaim {
    func storedOwner() async throws -> String? {
      try await connection.query(
        "SELECT owner_id FROM device_owners WHERE device_id = \(device.rawValue)", logger: logger
      ).collect().first?.decode(String.self)
    }
    if let stored = try await storedOwner() { return stored == owner.rawValue ? .claimed : .otherOwner }
    if let maxDevices {
      _ = try await connection.query("SELECT 1 FROM users WHERE id = \(owner.rawValue) FOR UPDATE", logger: logger)
        .collect()
      let count = try await connection.query(
        "SELECT count(*) FROM devices WHERE owner_id = \(owner.rawValue)", logger: logger
      ).collect().first?.decode(Int64.self)
      guard (count ?? 0) < maxDevices else { return .quotaExceeded(limit: maxDevices) }
    }
    _ = try await connection.query(
      """
      INSERT INTO devices(owner_id, id, created_at) VALUES (\(owner.rawValue), \(device.rawValue), \(now))
      ON CONFLICT (owner_id, id) DO NOTHING
      """, logger: logger
    ).collect()
    let taken = try await connection.query(
      """
      INSERT INTO device_owners(device_id, owner_id) VALUES (\(device.rawValue), \(owner.rawValue))
      ON CONFLICT (device_id) DO NOTHING RETURNING 1
      """, logger: logger
    ).collect()
    if !taken.isEmpty { return .claimed }
    // Another claim committed meanwhile: this one's, or another account's (then the row just added goes).
    guard let stored = try await storedOwner(), stored != owner.rawValue else { return .claimed }
    _ = try await connection.query(
      "DELETE FROM devices WHERE owner_id = \(owner.rawValue) AND id = \(device.rawValue)", logger: logger
    ).collect()
    return .otherOwner
  }

  // MARK: Fixes

  public func lastFix(owner: UserID, notAfter: Int64) async throws -> LocationFix? {
    try await rows(
      """
      SELECT \(unescaped: FixColumns.select) FROM fixes
      WHERE user_id = \(owner.rawValue) AND timestamp <= \(notAfter) ORDER BY timestamp DESC, id DESC LIMIT 1
      """
    ).first.map { try FixColumns.fix($0).fix }
  }

  public func history(owner: UserID, filter: HistoryFilter, limit: Int, before: HistoryCursor?) async throws
    -> [(fix: LocationFix, cursor: HistoryCursor)]
  {
    var query = try FixConditions(owner: owner, filter: filter)
    if let before {
      let timestamp = try query.bind(before.timestamp)
      let row = try query.bind(before.row)
      query.conditions.append("(timestamp < \(timestamp) OR (timestamp = \(timestamp) AND id < \(row)))")
    }
    let limit = try query.bind(Int64(limit))
    let sql = """
      SELECT \(FixColumns.select) FROM fixes WHERE \(query.sql) ORDER BY timestamp DESC, id DESC LIMIT \(limit)
      """
    return try await rowsThatMayLag(PostgresQuery(unsafeSQL: sql, binds: query.bindings)).map { row in
      let (fix, id) = try FixColumns.fix(row)
      return (fix: fix, cursor: HistoryCursor(timestamp: fix.timestamp, row: id))
    }
  }

  public func deleteHistory(owner: UserID, filter: HistoryFilter) async throws -> Int {
    let query = try FixConditions(owner: owner, filter: filter)
    let sql = "WITH deleted AS (DELETE FROM fixes WHERE \(query.sql) RETURNING 1) SELECT count(*) FROM deleted"
    return Int(try await rows(PostgresQuery(unsafeSQL: sql, binds: query.bindings)).first?.decode(Int64.self) ?? 0)
  }

  public func clusters(owner: UserID, filter: HistoryFilter, precision: Int, box: BoundingBox?) async throws
    -> [HistoryCluster]
  {
    guard (2...6).contains(precision) else { return [] }
    var query = try FixConditions(owner: owner, filter: filter)
    if let box { try query.within(box) }
    let column = "geohash\(precision)"
    let sql = """
      SELECT \(column), count(*) AS n, avg(latitude), avg(longitude) FROM fixes WHERE \(query.sql)
      GROUP BY \(column) ORDER BY n DESC, \(column) COLLATE "C"
      """
    return try await rowsThatMayLag(PostgresQuery(unsafeSQL: sql, binds: query.bindings)).map { row in
      let (cell, count, latitude, longitude) = try row.decode((String, Int64, Double, Double).self)
      return HistoryCluster(geohash: cell, count: Int(count), latitude: latitude, longitude: longitude)
    }
  }

  public func fixPositions(owner: UserID, filter: HistoryFilter, box: BoundingBox, limit: Int) async throws
    -> [LocationFix]
  {
    let statement = try Self.fixPositionsQuery(owner: owner, filter: filter, box: box, limit: limit)
    return try await rowsThatMayLag(statement).map(Self.position)
  }

  /// How PostgreSQL would read the fixes of ``fixPositions(owner:filter:box:limit:)`` now (`EXPLAIN`'s text): what
  /// the tests check, and what an operator looks at when the history map is slow.
  public func fixPositionsPlan(owner: UserID, filter: HistoryFilter, box: BoundingBox) async throws -> String {
    let statement = try Self.fixPositionsQuery(owner: owner, filter: filter, box: box, limit: 20_001)
    return try await planLines(statement).joined(separator: "\n")
  }

  /// A row of ``fixPositionsQuery(owner:filter:box:limit:)`` (device, time, position) as a fix.
  @inline(never)
  static func position(_ row: PostgresRow) throws -> LocationFix {
    let (device, timestamp, latitude, longitude) = try row.decode((String, Int64, Double, Double).self)
    return try LocationFix(deviceID: DeviceID(device), timestamp: timestamp, latitude: latitude, longitude: longitude)
  }

  /// The statement of ``fixPositions(owner:filter:box:limit:)``: the box's fixes through the (user_id, geohash6) index,
  /// one scan per range of ``HistoryCells/ranges(covering:maxLength:)``; materialized, so that the order and limit
  /// can't turn the plan into a walk of the owner's whole history by time. Each range is a subquery of its own
  /// (`LATERAL`, kept apart by `OFFSET 0`): joined to the ranges' list, whose values the planner can't see, the box's
  /// conditions looked more selective than the ranges and it scanned the owner's whole history in parallel (250 ms for
  /// a street at 1,000,000 fixes, 6 ms through the index; the map asks only when the view's cells count at most 20,000
  /// fixes). The statement and ``position(_:)`` are kept out of the async function: with the row's decoding inlined
  /// there, Swift 6.3.1's release build crashes (signal 11 in LLVM's coroutine splitting).
  @inline(never)
  static func fixPositionsQuery(owner: UserID, filter: HistoryFilter, box: BoundingBox, limit: Int) throws
    -> PostgresQuery
  {
    var query = try FixConditions(owner: owner, filter: filter)
    try query.within(box)
    let ranges = HistoryCells.ranges(covering: box)
    let lower = try query.bind(ranges.map(\.lower))
    let upper = try query.bind(ranges.map(\.upper))
    let limit = try query.bind(Int64(max(0, limit)))
    let sql = """
      WITH inside AS MATERIALIZED (
        SELECT f.device_id, f.timestamp, f.id, f.latitude, f.longitude
        FROM unnest(\(lower)::text[], \(upper)::text[]) AS r(lower, upper)
        CROSS JOIN LATERAL (
          SELECT device_id, timestamp, id, latitude, longitude FROM fixes
          WHERE (geohash6 COLLATE "C") >= r.lower AND (geohash6 COLLATE "C") < r.upper AND (\(query.sql))
          OFFSET 0
        ) AS f
      )
      SELECT device_id, timestamp, latitude, longitude FROM inside ORDER BY timestamp, id LIMIT \(limit)
      """
    return PostgresQuery(unsafeSQL: sql, binds: query.bindings)
  }

  /// The statement of ``fixRuns(owner:near:radius:from:to:)``: the owner's fixes within a hair more than `radius`,
  /// each with `previous_id`, the fix just before it in the owner's whole history (a run ends where it is not the
  /// previous fix kept).
  static func fixRunsQuery(owner: UserID, near center: Coordinate, radius: Double, from: Int64, to: Int64)
    -> PostgresQuery
  {
    """
    SELECT \(unescaped: FixColumns.select), (
      SELECT p.id FROM fixes p
      WHERE p.user_id = f.user_id AND p.timestamp <= f.timestamp AND (p.timestamp < f.timestamp OR p.id < f.id)
      ORDER BY p.timestamp DESC, p.id DESC LIMIT 1
    ) AS previous_id
    FROM fixes f
    WHERE f.user_id = \(owner.rawValue) AND f.timestamp BETWEEN \(from) AND \(to)
      AND ST_DWithin(f.location, ST_SetSRID(ST_MakePoint(\(center.longitude), \(center.latitude)), 4326)::geography,
        \(radius * 1.01 + 1))
    ORDER BY f.timestamp, f.id
    """
  }

  /// `ST_DWithin` on the GiST index finds the candidates (with a small margin, as the geography distance is on the
  /// spheroid), the haversine distance decides, as on SQLite.
  public func fixRuns(owner: UserID, near center: Coordinate, radius: Double, from: Int64, to: Int64) async throws
    -> [[LocationFix]]
  {
    let rows = try await rows(Self.fixRunsQuery(owner: owner, near: center, radius: radius, from: from, to: to))
    var runs: [[LocationFix]] = []
    var last: Int64?
    for row in rows {
      let (fix, id) = try FixColumns.fix(row)
      guard fix.coordinate.haversineDistance(to: center) <= radius else { continue }
      let previous = try row.makeRandomAccess()["previous_id"].decode(Int64?.self)
      if let last, previous == last, !runs.isEmpty {
        runs[runs.count - 1].append(fix)
      } else {
        runs.append([fix])
      }
      last = id
    }
    return runs
  }
}

/// The columns a fix is read from, in order, and the decoding.
enum FixColumns {
  static let select = """
    device_id, timestamp, id, latitude, longitude, horizontal_accuracy, vertical_accuracy, altitude, speed, \
    speed_accuracy, course, floor, battery_level, battery_state, kind, trigger, refined_by_device, refined_by_timestamp
    """

  /// The fix of a row starting with ``select``'s columns, and its `id`.
  static func fix(_ row: PostgresRow) throws -> (fix: LocationFix, id: Int64) {
    let row = row.makeRandomAccess()
    func value<T: PostgresDecodable>(_ index: Int, _ type: T.Type = T.self) throws -> T {
      try row[index].decode(T.self)
    }
    let refinedDevice: String? = try value(16)
    let refinedTimestamp: Int64? = try value(17)
    let fix = try LocationFix(
      deviceID: DeviceID(try value(0, String.self)), timestamp: try value(1), latitude: try value(3),
      longitude: try value(4), horizontalAccuracy: try value(5), verticalAccuracy: try value(6),
      altitude: try value(7), speed: try value(8), speedAccuracy: try value(9), course: try value(10),
      floor: try value(11, Int32?.self).map(Int.init), batteryLevel: try value(12),
      batteryState: try value(13, String?.self).flatMap(BatteryState.init(rawValue:)),
      kind: FixKind(rawValue: try value(14, String.self)) ?? .movement,
      trigger: try value(15, String?.self).flatMap(FixTrigger.init(rawValue:)),
      refinedBy: refinedTimestamp.map { FixID(deviceID: refinedDevice.map { DeviceID($0) }, timestamp: $0) })
    return (fix, try value(2))
  }
}

/// The conditions of a history filter on one user's fixes, with their bindings (`$1`, `$2`, …).
struct FixConditions {
  var conditions: [String] = []
  var bindings = PostgresBindings()

  init(owner: UserID, filter: HistoryFilter) throws {
    let user = try bind(owner.rawValue)
    conditions.append("user_id = \(user)")
    if let start = filter.range.start {
      let start = try bind(start)
      conditions.append("timestamp >= \(start)")
    }
    if let end = filter.range.end {
      let end = try bind(end)
      conditions.append("timestamp < \(end)")
    }
    if let accuracy = filter.minimumAccuracy {
      let accuracy = try bind(accuracy)
      conditions.append("(horizontal_accuracy IS NULL OR horizontal_accuracy <= \(accuracy))")
    }
    if !filter.kinds.isEmpty {
      let kinds = try bind(filter.kinds.map(\.rawValue).sorted())
      conditions.append("kind = ANY(\(kinds)::text[])")
    }
  }

  /// Adds the conditions of fixes inside `box`: one longitude range per side of the antimeridian.
  mutating func within(_ box: BoundingBox) throws {
    let (south, north) = (try bind(box.south), try bind(box.north))
    var sides: [String] = []
    for part in box.antimeridianSplit {
      let (west, east) = (try bind(part.west), try bind(part.east))
      sides.append("longitude BETWEEN \(west) AND \(east)")
    }
    conditions.append("latitude BETWEEN \(south) AND \(north)")
    conditions.append("(" + sides.joined(separator: " OR ") + ")")
  }

  /// The conditions joined by `AND`.
  var sql: String { conditions.joined(separator: " AND ") }

  /// Binds `value` and returns its placeholder.
  mutating func bind(_ value: some PostgresEncodable) throws -> String {
    try bindings.append(value)
    return "$\(bindings.count)"
  }
}

import GRDB

/// A foreign key: `columns` of `table` refer to `parentColumns` of `parent` (one column each, or several).
///
/// Engines read their keys from their own catalogs (`PRAGMA foreign_key_list`, `pg_constraint`);
/// ``deletionPlan(root:key:parameter:keys:)`` turns them into the order and conditions that delete everything that
/// belongs to one row, such as a user.
public struct ForeignKeyReference: Sendable, Hashable {
  /// The referring table.
  public var table: String
  /// Its columns, in the key's order.
  public var columns: [String]
  /// The referred table.
  public var parent: String
  /// The referred columns, in the key's order.
  public var parentColumns: [String]

  /// A key.
  public init(table: String, columns: [String], parent: String, parentColumns: [String]) {
    self.table = table
    self.columns = columns
    self.parent = parent
    self.parentColumns = parentColumns
  }

  /// Every table that refers to `root` through `keys` (directly or through other tables), each with the SQL
  /// condition that selects the rows belonging to the `root` row whose `key` is `parameter` (`:user`, `$1`, …),
  /// children before parents and `root` last, so that counting or deleting step by step never meets a row a
  /// cascade already removed.
  ///
  /// A table's place is the longest chain of keys from `root` (up to 8); its condition joins its keys to shallower
  /// tables with `OR`: `user_id = :user OR (owner_id, group_id) IN (SELECT owner_id, id FROM groups WHERE …)`.
  /// Identifiers are quoted with double quotes, which SQLite and PostgreSQL both read.
  public static func deletionPlan(root: String, key: String, parameter: String, keys: [ForeignKeyReference])
    -> [(table: String, condition: String)]
  {
    let byTable = Dictionary(grouping: keys, by: \.table)
    let tables = byTable.keys.sorted()
    var depth: [String: Int] = [root: 0]
    for _ in 0..<8 {
      var changed = false
      for table in tables where table != root {
        let parents = (byTable[table] ?? []).compactMap { $0.parent == table ? nil : depth[$0.parent] }
        guard let deepest = parents.max(), depth[table] != deepest + 1 else { continue }
        if deepest + 1 < 8 {
          depth[table] = deepest + 1
          changed = true
        }
      }
      if !changed { break }
    }
    func list(_ columns: [String]) -> String {
      columns.map(\.quotedDatabaseIdentifier).joined(separator: ", ")
    }
    var conditions: [String: String] = [root: "\(key.quotedDatabaseIdentifier) = \(parameter)"]
    for table in depth.keys.sorted(by: { (depth[$0] ?? 0, $0) < (depth[$1] ?? 0, $1) }) where table != root {
      let parts = (byTable[table] ?? []).compactMap { reference -> String? in
        guard let parentDepth = depth[reference.parent], parentDepth < (depth[table] ?? 0),
          let parentCondition = conditions[reference.parent]
        else { return nil }
        if reference.parent == root, reference.parentColumns == [key], reference.columns.count == 1 {
          return "\(list(reference.columns)) = \(parameter)"
        }
        let columns = reference.columns.count == 1 ? list(reference.columns) : "(\(list(reference.columns)))"
        return
          "\(columns) IN (SELECT \(list(reference.parentColumns)) FROM "
          + "\(reference.parent.quotedDatabaseIdentifier) WHERE \(parentCondition))"
      }
      if !parts.isEmpty { conditions[table] = parts.joined(separator: " OR ") }
    }
    return conditions.keys.sorted { (depth[$0] ?? 0, $1) > (depth[$1] ?? 0, $0) }.compactMap { table in
      conditions[table].map { (table, $0) }
    }
  }
}

// Prints `<name> <value> <unit>` lines: bulk insert of fix-like rows (10 columns) through PersistenceKit's batch
// insert, through GRDB's ordinary statement arguments, and through a plain loop over the SQLite C API.
// Usage: persistencekit-bench [rows] [--only kit|c_api|grdb_arguments]   (default 1000000 rows, every path)
// `--only` runs one path once, e.g. under `valgrind --tool=callgrind` to count instructions per row.
import Foundation
import GRDB
import GRDBSQLite
import PersistenceKit

let usage = "usage: persistencekit-bench [rows] [--only kit|c_api|grdb_arguments]"
let paths = ["kit", "c_api", "grdb_arguments"]

/// Prints `message` and the usage line to standard error and exits with status 2 (bad command line).
func usageError(_ message: String) -> Never {
  FileHandle.standardError.write(Data("persistencekit-bench: \(message)\n\(usage)\n".utf8))
  exit(2)
}

func parseArguments(_ arguments: [String]) -> (rows: Int, only: String?) {
  var rows = 1_000_000
  var only: String?
  var remaining = arguments[...]
  while let argument = remaining.popFirst() {
    if argument == "--only" {
      guard let path = remaining.popFirst() else { usageError("--only needs a path") }
      guard paths.contains(path) else { usageError("unknown path '\(path)'") }
      only = path
    } else if let count = Int(argument), count > 0 {
      rows = count
    } else {
      usageError("unknown argument '\(argument)'")
    }
  }
  return (rows, only)
}

let (rowCount, only) = parseArguments(Array(CommandLine.arguments.dropFirst()))
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("persistencekit-bench-\(getpid())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

let createTable = """
  CREATE TABLE fix (
    id INTEGER PRIMARY KEY,
    device_id INTEGER NOT NULL,
    recorded_at REAL NOT NULL,
    latitude REAL NOT NULL,
    longitude REAL NOT NULL,
    horizontal_accuracy REAL NOT NULL,
    vertical_accuracy REAL,
    speed REAL,
    course REAL,
    altitude REAL,
    geohash TEXT NOT NULL
  )
  """
let columns = [
  "device_id", "recorded_at", "latitude", "longitude", "horizontal_accuracy", "vertical_accuracy", "speed", "course",
  "altitude", "geohash",
]
let insertSQL = "INSERT INTO fix (\(columns.joined(separator: ", "))) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
let geohashAlphabet = Array("0123456789bcdefghjkmnpqrstuvwxyz")
let geohashes: [String] = (0..<1024).map { index in
  String((0..<6).map { geohashAlphabet[(index >> ($0 % 2 * 5)) & 31] })
}

@inline(__always) func value(_ row: Int, _ column: Int) -> Double {
  Double(row) * 0.000_01 + Double(column)
}

func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func openFixDatabase(path: String) throws -> SQLiteDatabase {
  let database = try SQLiteDatabase.open(at: path)
  try database.write { db in try db.execute(sql: createTable) }
  return database
}

func benchmarkKit(path: String) throws -> Double {
  let database = try openFixDatabase(path: path)
  let start = ContinuousClock.now
  do {
    try database.write { db in
      try db.batchInsert(into: "fix", columns: columns) { rows in
        for row in 0..<rowCount {
          rows.bind(row % 100, at: 1)
          rows.bind(value(row, 1), at: 2)
          rows.bind(value(row, 2), at: 3)
          rows.bind(value(row, 3), at: 4)
          rows.bind(value(row, 4), at: 5)
          rows.bind(value(row, 5), at: 6)
          rows.bind(value(row, 6), at: 7)
          rows.bind(value(row, 7), at: 8)
          rows.bind(value(row, 8), at: 9)
          rows.bind(geohashes[row & 1023], at: 10)
          try rows.insert()
        }
      }
    }
  }
  let elapsed = ContinuousClock.now - start
  let count = try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fix") }
  precondition(count == rowCount, "kit inserted \(count ?? -1) rows")
  try database.close()
  return Double(rowCount) / seconds(elapsed)
}

func benchmarkGRDBArguments(path: String) throws -> Double {
  let database = try openFixDatabase(path: path)
  let start = ContinuousClock.now
  do {
    try database.write { db in
      let statement = try db.cachedStatement(sql: insertSQL)
      for row in 0..<rowCount {
        try statement.execute(arguments: [
          row % 100, value(row, 1), value(row, 2), value(row, 3), value(row, 4), value(row, 5), value(row, 6),
          value(row, 7), value(row, 8), geohashes[row & 1023],
        ])
      }
    }
  }
  let elapsed = ContinuousClock.now - start
  try database.close()
  return Double(rowCount) / seconds(elapsed)
}

func benchmarkCAPI(path: String) -> Double {
  let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
  var connection: OpaquePointer?
  // Multi-thread mode (no per-call connection mutex), as GRDB opens its connections: the fastest plain C loop.
  let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
  guard sqlite3_open_v2(path, &connection, flags, nil) == SQLITE_OK else {
    fatalError("open failed")
  }
  defer { sqlite3_close_v2(connection) }
  func exec(_ sql: String) {
    guard sqlite3_exec(connection, sql, nil, nil, nil) == SQLITE_OK else {
      fatalError(String(cString: sqlite3_errmsg(connection)))
    }
  }
  exec("PRAGMA journal_mode = WAL")
  exec("PRAGMA synchronous = NORMAL")
  exec("PRAGMA foreign_keys = ON")
  exec(createTable)
  var statement: OpaquePointer?
  guard sqlite3_prepare_v2(connection, insertSQL, -1, &statement, nil) == SQLITE_OK else { fatalError("prepare") }
  defer { sqlite3_finalize(statement) }
  let start = ContinuousClock.now
  do {
    exec("BEGIN")
    for row in 0..<rowCount {
      sqlite3_bind_int64(statement, 1, Int64(row % 100))
      sqlite3_bind_double(statement, 2, value(row, 1))
      sqlite3_bind_double(statement, 3, value(row, 2))
      sqlite3_bind_double(statement, 4, value(row, 3))
      sqlite3_bind_double(statement, 5, value(row, 4))
      sqlite3_bind_double(statement, 6, value(row, 5))
      sqlite3_bind_double(statement, 7, value(row, 6))
      sqlite3_bind_double(statement, 8, value(row, 7))
      sqlite3_bind_double(statement, 9, value(row, 8))
      geohashes[row & 1023].utf8.withContiguousStorageIfAvailable { buffer in
        _ = sqlite3_bind_text(statement, 10, buffer.baseAddress, Int32(buffer.count), transient)
      }
      guard sqlite3_step(statement) == SQLITE_DONE else { fatalError(String(cString: sqlite3_errmsg(connection))) }
      sqlite3_reset(statement)
    }
    exec("COMMIT")
  }
  let elapsed = ContinuousClock.now - start
  return Double(rowCount) / seconds(elapsed)
}

if let only {
  let path = directory.appendingPathComponent("only.sqlite").path
  switch only {
  case "kit": print("insert.rows_per_s \(Int(try benchmarkKit(path: path))) rows/s")
  case "c_api": print("insert.c_api.rows_per_s \(Int(benchmarkCAPI(path: path))) rows/s")
  case "grdb_arguments": print("insert.grdb_arguments.rows_per_s \(Int(try benchmarkGRDBArguments(path: path))) rows/s")
  default: usageError("unknown path '\(only)'")
  }
  try? FileManager.default.removeItem(at: directory)
  exit(0)
}

func removeDatabase(_ path: String) {
  for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

// Alternate the two main paths five times and keep each one's best run: on a shared machine a neighbour's burst
// slows whichever run it lands on, and the best run is the one it disturbed least.
var kitBest = 0.0
var cBest = 0.0
for round in 0..<5 {
  let cPath = directory.appendingPathComponent("c-\(round).sqlite").path
  cBest = max(cBest, benchmarkCAPI(path: cPath))
  removeDatabase(cPath)
  let kitPath = directory.appendingPathComponent("kit-\(round).sqlite").path
  kitBest = max(kitBest, try benchmarkKit(path: kitPath))
  removeDatabase(kitPath)
}
let grdb = try benchmarkGRDBArguments(path: directory.appendingPathComponent("grdb.sqlite").path)

print("insert.rows \(rowCount) rows")
print("insert.rows_per_s \(Int(kitBest)) rows/s")
print("insert.c_api.rows_per_s \(Int(cBest)) rows/s")
print("insert.grdb_arguments.rows_per_s \(Int(grdb)) rows/s")
print("insert.kit_vs_c_api \(String(format: "%.1f", kitBest / cBest * 100)) %")

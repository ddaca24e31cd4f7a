// A helper for PersistenceKit's tests: migrates the database file given as the first argument with a fixed set of
// migrations (one of them slow) and prints `applied <id>` / `skipped <id>` lines, so two copies can race.
import Foundation
import PersistenceKit

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
  FileHandle.standardError.write(
    Data("usage: persistencekit-migrate-probe <database-path> [delay-ms] [busy-timeout-s]\n".utf8)
  )
  exit(64)
}
let delay = arguments.count >= 3 ? (Double(arguments[2]) ?? 300) / 1000 : 0.3
let busyTimeout = arguments.count >= 4 ? Double(arguments[3]) ?? 30 : 30

var migrator = Migrator()
migrator.append(.sql("001 create counter", "CREATE TABLE counter(id INTEGER PRIMARY KEY, source TEXT NOT NULL)"))
migrator.append(
  .code("002 slow insert", revision: "1") { connection in
    try connection.execute(sql: "INSERT INTO counter(source) VALUES ('002')")
    Thread.sleep(forTimeInterval: delay)
  }
)
migrator.append(.sql("003 insert", "INSERT INTO counter(source) VALUES ('003')"))
migrator.append(
  .code("004 slow insert", revision: "1") { connection in
    Thread.sleep(forTimeInterval: delay)
    try connection.execute(sql: "INSERT INTO counter(source) VALUES ('004')")
  }
)

do {
  let database = try SQLiteDatabase.open(at: arguments[1], options: DatabaseOptions(busyTimeout: busyTimeout))
  let report = try database.migrate(migrator)
  for applied in report.applied { print("applied \(applied.identifier)") }
  for identifier in report.skipped { print("skipped \(identifier)") }
} catch {
  FileHandle.standardError.write(Data("error: \(error)\n".utf8))
  exit(75)  // EX_TEMPFAIL: nothing half-applied, try again later
}

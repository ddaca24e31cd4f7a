import Foundation
import MeridianStoreSQLite

/// A SQLite file migrated to the store's current schema, made once per test process: a fresh test database is a
/// copy of it, so every test of anything but migrating skips the migrations (a third of a second each on two busy
/// cores). Tests of migrating itself open an empty file or an older schema (``OlderSchema``) instead.
public enum MigratedSQLiteFile {
  private static let template: Result<URL, TemplateError> = Result { () throws(TemplateError) -> URL in
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "meridian-schema-\(UUID().uuidString)")
    let file = directory.appendingPathComponent("meridian.sqlite")
    do {
      // Migrated in a file of its own, then copied whole by SQLite's backup into the template: the copy is one file
      // whatever the migrated file's write-ahead log still holds. The migrated file itself was the template, on the
      // assumption that closing the store checkpointed the log into it (SQLite does so when the file's last
      // connection closes); a test process once copied it without the last migrations' pages, and every SQLite test
      // in it failed ("malformed database schema (webhook_outbox_delivered) - invalid rootpage").
      let store = try SQLiteStore.open(at: directory.appendingPathComponent("migrated.sqlite").path)
      try store.database.backup(to: file.path)
      try store.database.close()
    } catch {
      throw TemplateError(message: "migrating a template SQLite file failed: \(error)")
    }
    return file
  }

  /// Copies the migrated file to `path` (its directory created as needed; nothing may exist at `path`).
  public static func copy(to path: String) throws {
    let destination = URL(fileURLWithPath: path)
    try FileManager.default.createDirectory(
      at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
    try FileManager.default.copyItem(at: try template.get(), to: destination)
  }

  /// The template file could not be made.
  struct TemplateError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
  }
}

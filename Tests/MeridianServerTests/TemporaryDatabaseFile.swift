import Foundation

/// A database file path in the temporary directory, for a test that needs a real SQLite file; ``remove()`` deletes
/// the file with its WAL, shared-memory and revocation-marker files.
struct TemporaryDatabaseFile {
  let path = FileManager.default.temporaryDirectory
    .appendingPathComponent("meridian-test-\(UUID().uuidString).sqlite").path

  func remove() {
    for suffix in ["", "-wal", "-shm", "-revocations"] { try? FileManager.default.removeItem(atPath: path + suffix) }
  }
}

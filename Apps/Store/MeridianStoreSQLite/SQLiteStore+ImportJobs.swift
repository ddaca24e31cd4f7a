import DomainKit
import Foundation
import GRDB
import MeridianStore
import PersistenceKit

extension SQLiteSchema {
  /// Appends the import-job migrations.
  static func appendImportJobMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 history import jobs", historyImportJobs))
  }

  /// History import jobs (``ImportJobStore``): each job's document as the server writes it, by owner.
  static let historyImportJobs = """
    CREATE TABLE history_import_jobs(
      id TEXT PRIMARY KEY NOT NULL,
      owner_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      document TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );
    CREATE INDEX history_import_jobs_owner ON history_import_jobs(owner_id, created_at);
    """
}

extension SQLiteStore {
  static func importJob(_ row: Row) -> ImportJobRecord {
    ImportJobRecord(id: row[0], owner: UserID(row[1]), document: row[2], createdAt: row[3], updatedAt: row[4])
  }

  public func saveImportJob(_ record: ImportJobRecord) async throws {
    try await database.write { db in
      try db.execute(
        sql: """
          INSERT INTO history_import_jobs(id, owner_id, document, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
          ON CONFLICT(id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at
          WHERE history_import_jobs.owner_id = excluded.owner_id
          """,
        arguments: [record.id, record.owner.rawValue, record.document, record.createdAt, record.updatedAt])
      try db.execute(
        sql: """
          DELETE FROM history_import_jobs WHERE owner_id = :owner AND id NOT IN (
            SELECT id FROM history_import_jobs WHERE owner_id = :owner ORDER BY created_at DESC, id DESC LIMIT :kept)
          """, arguments: ["owner": record.owner.rawValue, "kept": Self.importJobsKept])
    }
  }

  public func importJob(id: String, owner: UserID) async throws -> ImportJobRecord? {
    try await database.read { db in
      try Row.fetchOne(
        db,
        sql: "SELECT id, owner_id, document, created_at, updated_at FROM history_import_jobs "
          + "WHERE id = ? AND owner_id = ?", arguments: [id, owner.rawValue]
      ).map(Self.importJob)
    }
  }

  public func importJobs(owner: UserID, limit: Int) async throws -> [ImportJobRecord] {
    try await database.read { db in
      try Row.fetchAll(
        db,
        sql: "SELECT id, owner_id, document, created_at, updated_at FROM history_import_jobs WHERE owner_id = ? "
          + "ORDER BY created_at DESC, id DESC LIMIT ?", arguments: [owner.rawValue, max(0, limit)]
      ).map(Self.importJob)
    }
  }
}

import DomainKit
import Foundation
import MeridianStore
import PersistenceKit
import PostgresNIO

extension PostgresSchema {
  /// Appends the import-job migrations.
  public static func appendImportJobMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 history import jobs", historyImportJobs))
  }

  /// History import jobs (``ImportJobStore``): each job's document as the server writes it, by owner.
  static let historyImportJobs = """
    CREATE TABLE history_import_jobs(
      id text PRIMARY KEY,
      owner_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      document text NOT NULL,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL
    );
    CREATE INDEX history_import_jobs_owner ON history_import_jobs(owner_id, created_at);
    """
}

extension PostgresStore: ImportJobStore {
  static func importJob(_ row: PostgresRow) throws -> ImportJobRecord {
    let (id, owner, document, createdAt, updatedAt) = try row.decode((String, String, String, Int64, Int64).self)
    return ImportJobRecord(
      id: id, owner: UserID(owner), document: document, createdAt: createdAt, updatedAt: updatedAt)
  }

  public func saveImportJob(_ record: ImportJobRecord) async throws {
    let kept = Self.importJobsKept
    try await transaction { connection in
      try await connection.query(
        """
        INSERT INTO history_import_jobs(id, owner_id, document, created_at, updated_at)
        VALUES (\(record.id), \(record.owner.rawValue), \(record.document), \(record.createdAt), \(record.updatedAt))
        ON CONFLICT (id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at
        WHERE history_import_jobs.owner_id = excluded.owner_id
        """, logger: self.logger)
      try await connection.query(
        """
        DELETE FROM history_import_jobs WHERE owner_id = \(record.owner.rawValue) AND id NOT IN (
          SELECT id FROM history_import_jobs WHERE owner_id = \(record.owner.rawValue)
          ORDER BY created_at DESC, id DESC LIMIT \(kept))
        """, logger: self.logger)
    }
  }

  public func importJob(id: String, owner: UserID) async throws -> ImportJobRecord? {
    try await rows(
      """
      SELECT id, owner_id, document, created_at, updated_at FROM history_import_jobs
      WHERE id = \(id) AND owner_id = \(owner.rawValue)
      """
    ).first.map(Self.importJob)
  }

  public func importJobs(owner: UserID, limit: Int) async throws -> [ImportJobRecord] {
    try await rows(
      """
      SELECT id, owner_id, document, created_at, updated_at FROM history_import_jobs
      WHERE owner_id = \(owner.rawValue) ORDER BY created_at DESC, id DESC LIMIT \(max(0, limit))
      """
    ).map(Self.importJob)
  }
}

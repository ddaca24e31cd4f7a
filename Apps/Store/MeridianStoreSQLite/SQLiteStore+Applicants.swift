import DomainKit
import Foundation
import GRDB
import MeridianAPI
import MeridianStore
import PersistenceKit

extension SQLiteStore {
  public func addAchievement(_ achievement: Achievement, user: UserID) async throws {
    try await database.write { db in
      let count =
        try Int.fetchOne(
          db, sql: "SELECT count(*) FROM applicant_achievements WHERE user_id = ?", arguments: [user.rawValue]) ?? 0
      guard count < Achievement.maximumCount else { throw ApplicantStoreError.tooManyAchievements }
      do {
        try db.execute(
          sql: """
            INSERT INTO applicant_achievements(id, user_id, kind, title, description, year, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
          arguments: [
            achievement.id, user.rawValue, achievement.kind.rawValue, achievement.title, achievement.description,
            achievement.year, achievement.createdAt,
          ])
      } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
        throw ApplicantStoreError.unknownUser(user)
      } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
        throw ApplicantStoreError.duplicateID(achievement.id)
      }
    }
  }

  public func achievements(of user: UserID) async throws -> [Achievement] {
    try await database.read { db in
      try Row.fetchAll(
        db, sql: "SELECT * FROM applicant_achievements WHERE user_id = ? ORDER BY seq DESC",
        arguments: [user.rawValue]
      ).map { row in
        Achievement(
          id: row["id"], kind: AchievementKind(rawValue: row["kind"]) ?? .study, title: row["title"],
          description: row["description"], year: row["year"], createdAt: row["created_at"])
      }
    }
  }

  public func deleteAchievement(_ id: String, user: UserID) async throws -> Bool {
    try await database.write { db in
      try db.execute(
        sql: "DELETE FROM applicant_achievements WHERE id = ? AND user_id = ?", arguments: [id, user.rawValue])
      return db.changesCount > 0
    }
  }

  public func saveQuestionnaire(_ questionnaire: Questionnaire, user: UserID, now: Int64) async throws
    -> Questionnaire
  {
    var stored = questionnaire
    stored.updatedAt = now
    let answers = try JSONColumn.encode(stored)
    let total = stored.totalScore
    let form = stored.preferredForm ?? ""
    try await database.write { db in
      do {
        try db.execute(
          sql: """
            INSERT INTO applicant_questionnaires(user_id, answers, total_score, preferred_form, updated_at)
            VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(user_id) DO UPDATE SET answers = excluded.answers, total_score = excluded.total_score,
              preferred_form = excluded.preferred_form, updated_at = excluded.updated_at
            """,
          arguments: [user.rawValue, answers, total, form, now])
      } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
        throw ApplicantStoreError.unknownUser(user)
      }
    }
    return stored
  }

  public func questionnaire(of user: UserID) async throws -> Questionnaire? {
    try await database.read { db in
      try String.fetchOne(
        db, sql: "SELECT answers FROM applicant_questionnaires WHERE user_id = ?", arguments: [user.rawValue]
      ).map { try JSONColumn.decode(Questionnaire.self, from: $0) }
    }
  }
}

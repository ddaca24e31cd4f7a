import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import PostgresNIO

extension PostgresStore {
  public func addAchievement(_ achievement: Achievement, user: UserID) async throws {
    try await transaction { connection in
      func run(_ sql: String, _ values: [(any PostgresEncodable & Sendable)?]) async throws -> [PostgresRow] {
        try await connection.query(Self.placeQuery(sql, values), logger: self.logger).collect()
      }
      // The account's row, locked: two concurrent additions can't both pass the count.
      guard try await !run("SELECT 1 FROM users WHERE id = $1 FOR UPDATE", [user.rawValue]).isEmpty else {
        throw ApplicantStoreError.unknownUser(user)
      }
      let count =
        try await run("SELECT count(*) FROM applicant_achievements WHERE user_id = $1", [user.rawValue])
        .first?.decode(Int.self) ?? 0
      guard count < Achievement.maximumCount else { throw ApplicantStoreError.tooManyAchievements }
      do {
        _ = try await run(
          """
          INSERT INTO applicant_achievements(id, user_id, kind, title, description, year, created_at)
          VALUES ($1, $2, $3, $4, $5, $6, $7)
          """,
          [
            achievement.id, user.rawValue, achievement.kind.rawValue, achievement.title, achievement.description,
            achievement.year, achievement.createdAt,
          ])
      } catch  where Self.isUniqueViolation(error) {
        throw ApplicantStoreError.duplicateID(achievement.id)
      }
    }
  }

  public func achievements(of user: UserID) async throws -> [Achievement] {
    try await rows(
      Self.placeQuery(
        """
        SELECT id, kind, title, description, year, created_at FROM applicant_achievements
        WHERE user_id = $1 ORDER BY seq DESC
        """, [user.rawValue])
    ).map { row in
      let (id, kind, title, description, year, createdAt) = try row.decode(
        (String, String, String, String, Int?, Int64).self)
      return Achievement(
        id: id, kind: AchievementKind(rawValue: kind) ?? .study, title: title, description: description, year: year,
        createdAt: createdAt)
    }
  }

  public func deleteAchievement(_ id: String, user: UserID) async throws -> Bool {
    try await !rows(
      Self.placeQuery(
        "DELETE FROM applicant_achievements WHERE id = $1 AND user_id = $2 RETURNING 1", [id, user.rawValue])
    ).isEmpty
  }

  public func saveQuestionnaire(_ questionnaire: Questionnaire, user: UserID, now: Int64) async throws
    -> Questionnaire
  {
    var stored = questionnaire
    stored.updatedAt = now
    let answers = try JSONColumn.encode(stored)
    do {
      _ = try await rows(
        Self.placeQuery(
          """
          INSERT INTO applicant_questionnaires(user_id, answers, total_score, preferred_form, updated_at)
          VALUES ($1, $2::jsonb, $3, $4, $5)
          ON CONFLICT(user_id) DO UPDATE SET answers = excluded.answers, total_score = excluded.total_score,
            preferred_form = excluded.preferred_form, updated_at = excluded.updated_at
          """, [user.rawValue, answers, stored.totalScore, stored.preferredForm ?? "", now]))
    } catch  where Self.sqlState(error) == "23503" {
      throw ApplicantStoreError.unknownUser(user)
    }
    return stored
  }

  public func questionnaire(of user: UserID) async throws -> Questionnaire? {
    try await rows(
      Self.placeQuery("SELECT answers::text FROM applicant_questionnaires WHERE user_id = $1", [user.rawValue])
    ).first.map { try JSONColumn.decode(Questionnaire.self, from: try $0.decode(String.self)) }
  }
}

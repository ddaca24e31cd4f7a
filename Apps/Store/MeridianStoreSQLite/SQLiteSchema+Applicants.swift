import PersistenceKit

extension SQLiteSchema {
  /// Appends the applicant's tables: achievements and questionnaires, deleted with their account (their foreign
  /// keys are what the account deletion follows).
  static func appendApplicantMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 applicant achievements and questionnaires", applicants))
  }

  /// `applicant_achievements`: one row per achievement, listed newest first by `seq`. `applicant_questionnaires`:
  /// one row per person, the questionnaire as JSON, with its total score and preferred form as columns.
  static let applicants = """
    CREATE TABLE applicant_achievements(
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      kind TEXT NOT NULL CHECK (kind IN ('study', 'sport', 'creative')),
      title TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
      description TEXT NOT NULL DEFAULT '',
      year INTEGER,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX applicant_achievements_user ON applicant_achievements(user_id, seq);
    CREATE TABLE applicant_questionnaires(
      user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
      answers TEXT NOT NULL,
      total_score INTEGER NOT NULL,
      preferred_form TEXT NOT NULL,
      updated_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    """
}

import PersistenceKit

extension PostgresSchema {
  /// Appends the applicant's tables, as on SQLite: achievements and questionnaires, deleted with their account.
  static func appendApplicantMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 applicant achievements and questionnaires", applicants))
  }

  /// `applicant_achievements`: one row per achievement, listed newest first by `seq`. `applicant_questionnaires`:
  /// one row per person, the questionnaire as JSON, with its total score and preferred form as columns.
  static let applicants = """
    CREATE TABLE applicant_achievements(
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      kind text NOT NULL CHECK (kind IN ('study', 'sport', 'creative')),
      title text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
      description text NOT NULL DEFAULT '',
      year integer,
      created_at bigint NOT NULL
    );
    CREATE INDEX applicant_achievements_user ON applicant_achievements(user_id, seq);
    CREATE TABLE applicant_questionnaires(
      user_id text PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
      answers jsonb NOT NULL,
      total_score integer NOT NULL,
      preferred_form text NOT NULL,
      updated_at bigint NOT NULL
    );
    """
}

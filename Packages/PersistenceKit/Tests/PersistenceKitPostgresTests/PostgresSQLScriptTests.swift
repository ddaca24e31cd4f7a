import PersistenceKitPostgres
import Testing

@Suite struct PostgresSQLScriptTests {
  private func statements(_ sql: String) throws -> [String] {
    try PostgresSQLScript(sql).statements.map(\.sql)
  }

  @Test func splitsOnSemicolonsAndDropsEmptyStatements() throws {
    #expect(
      try statements("CREATE TABLE a(x int);\n\n;  CREATE TABLE b(y int) ; -- done\n") == [
        "CREATE TABLE a(x int)", "CREATE TABLE b(y int)",
      ])
    #expect(try statements("  -- only a comment\n/* and another */ ").isEmpty)
  }

  @Test func keepsSemicolonsInsideStringsIdentifiersAndComments() throws {
    let sql = """
      INSERT INTO t VALUES ('a;b', 'it''s; fine', E'esc\\';aped');
      CREATE TABLE "odd;name" ("col;umn" int);
      SELECT 1 /* one; /* nested; */ still */ + 2; -- trailing; comment
      SELECT $1::int
      """
    #expect(
      try statements(sql) == [
        "INSERT INTO t VALUES ('a;b', 'it''s; fine', E'esc\\';aped')",
        "CREATE TABLE \"odd;name\" (\"col;umn\" int)",
        "SELECT 1 /* one; /* nested; */ still */ + 2",
        "-- trailing; comment\nSELECT $1::int",
      ])
  }

  @Test func keepsDollarQuotedBodiesWhole() throws {
    let sql = """
      CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$
      BEGIN
        PERFORM 1; RETURN $$x;y$$::text::int;
      END
      $body$;
      DO $$ BEGIN PERFORM 1; END $$;
      SELECT a$b$ FROM t
      """
    let split = try statements(sql)
    #expect(split.count == 3)
    #expect(split[0].hasSuffix("$body$"))
    #expect(split[1] == "DO $$ BEGIN PERFORM 1; END $$")
    #expect(split[2] == "SELECT a$b$ FROM t")
  }

  @Test func keepsParenthesesAndAtomicBodiesWhole() throws {
    let sql = """
      CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO log VALUES (1); INSERT INTO log VALUES (2));
      CREATE OR REPLACE FUNCTION g(x int) RETURNS int LANGUAGE sql
      BEGIN ATOMIC
        SELECT CASE WHEN x > 0 THEN 1 ELSE 0 END;
      END;
      BEGIN; SELECT 1; COMMIT
      """
    let split = try statements(sql)
    #expect(split.count == 5)
    #expect(split[0].hasSuffix("INSERT INTO log VALUES (2))"))
    #expect(split[1].hasPrefix("CREATE OR REPLACE FUNCTION g") && split[1].hasSuffix("END;\nEND"))
    #expect(Array(split[2...]) == ["BEGIN", "SELECT 1", "COMMIT"])
  }

  @Test func recordsTheLineEachStatementStartsOn() throws {
    let script = try PostgresSQLScript("SELECT 1;\n-- note\n\nSELECT\n2;\n  SELECT 'a\nb';SELECT 3")
    #expect(script.statements.map(\.line) == [1, 4, 6, 7])
  }

  @Test(arguments: [
    ("SELECT 1;\nSELECT 'open", "string constant", 2),
    ("SELECT \"open", "quoted identifier", 1),
    ("SELECT 1;\n\nDO $f$ BEGIN END $g$", "dollar-quoted string $f$", 3),
    ("SELECT 1 /* /* */", "comment /* */", 1),
  ])
  func reportsWhatIsUnterminated(sql: String, construct: String, line: Int) {
    #expect(throws: PostgresSQLScriptError(construct: construct, line: line)) {
      try PostgresSQLScript(sql)
    }
  }
}

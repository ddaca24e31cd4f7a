import DomainKit
import Foundation
import GRDB
import MeridianAdmin
import MeridianStore
import Testing

/// What users wrote through the API reaches the operator's terminal with its control characters shown, never raw
/// (issue 33): a name such as `ESC]0;…BEL ESC[2J` retitled and cleared the terminal of `users list` and `polls show`.
@Suite("meridian-admin shows control characters visibly")
struct AdminTerminalSafetyTests {
  /// Retitles the window, clears the screen, then an 8-bit CSI (U+009B), a carriage return and a right-to-left
  /// override.
  static let hostile = "Anna\u{1B}]0;pwned\u{07}\u{1B}[2J\u{9B}31m\rX\u{202E}z"

  /// Whether `text` holds a character that must not reach a terminal raw (line feeds of the output itself aside).
  static func hasRawControl(_ text: String) -> Bool {
    text.unicodeScalars.contains { $0 != "\n" && TerminalText.isUnsafe($0) }
  }

  @Test func usersAndPollsListAndShowPrintNoRawControlCharacters() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    _ = try await store.createAccount(
      id: UserID("anna"), credential: .email("anna@example.com"), passwordHash: nil, now: 1)
    let poll = try Poll(
      id: "tea", authorID: "anna", title: "Tea", first: PollOption(text: "Yes"), second: PollOption(text: "No"),
      createdAt: 1_000)
    _ = try await store.createPoll(poll, closesAt: nil, reward: 10, now: 1_000)
    _ = try await store.addComment(
      try PollComment(id: "c1", pollID: "tea", authorID: "anna", text: "fine", createdAt: 2_000))
    // Stored as the API stored them before its text rules: written straight to the database.
    let database = try DatabaseQueue(path: sandbox.database)
    try await database.write { db in
      try db.execute(
        sql: """
          INSERT INTO profiles(user_id, full_name) VALUES('anna', ?)
          ON CONFLICT(user_id) DO UPDATE SET full_name = excluded.full_name
          """, arguments: [Self.hostile])
      try db.execute(
        sql: "UPDATE polls SET title = ?, option0_text = ? WHERE id = 'tea'", arguments: [Self.hostile, Self.hostile])
      try db.execute(sql: "UPDATE poll_comments SET text = ? WHERE id = 'c1'", arguments: [Self.hostile])
    }
    try await database.close()

    let visible = #"Anna\u{1B}]0;pwned\u{7}\u{1B}[2J\u{9B}31m\u{D}X\u{202E}z"#
    for arguments in [["users", "list"], ["users", "show", "anna"], ["polls", "list"], ["polls", "show", "tea"]] {
      let run = try await sandbox.admin(arguments)
      #expect(run.status == 0, "\(run)")
      #expect(!Self.hasRawControl(run.stdout + run.stderr), "\(arguments): \(run.stdout.debugDescription)")
      #expect(run.stdout.contains(visible), "\(arguments): \(run.stdout)")
    }
    // JSON escapes them (C0 by the encoder, C1 and bidirectional controls by the admin): the same value, parsed.
    for arguments in [["users", "show", "anna", "--json"], ["polls", "show", "tea", "--json"]] {
      let run = try await sandbox.admin(arguments)
      #expect(run.status == 0, "\(run)")
      #expect(!Self.hasRawControl(run.stdout), "\(arguments): \(run.stdout.debugDescription)")
      #expect(run.stdout.contains(#"\u009B"#) && run.stdout.contains(#"\u202E"#), "\(arguments): \(run.stdout)")
      func strings(_ value: Any) -> [String] {
        switch value {
        case let text as String: [text]
        case let list as [Any]: list.flatMap(strings)
        case let object as [String: Any]: object.values.flatMap(strings)
        default: []
        }
      }
      #expect(try strings(run.json()).contains(Self.hostile), "\(arguments)")
    }
  }

  @Test func tableCellsCantForgeRowsAndCleanTextIsUnchanged() {
    var table = TextTable(["id", "name"])
    table.add(["u1", "Anna\nu2  root"])
    #expect(table.text == "id  name\nu1  Anna\\u{A}u2  root")
    #expect(TerminalText.visible("Київ\tok", keepingLineBreaks: true) == "Київ\tok")
    #expect(TerminalText.visible("a\u{7F}b\u{0}") == #"a\u{7F}b\u{0}"#)
  }
}

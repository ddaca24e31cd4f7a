import DomainKit
import Testing

@Suite struct UserTextTests {
  let name = UserText.singleLine(maximumLength: 10)
  let note = UserText.multiLine(maximumLength: 10)

  @Test func trimsAndKeepsWhatIsAllowed() throws {
    #expect(try name.validated("  Anna Ü  \n") == "Anna Ü")
    #expect(try note.validated("a\tb\nc") == "a\tb\nc")
    // Ten characters, however many scalars each: a flag is two, an accented letter two.
    #expect(try name.validated(String(repeating: "🇺🇦", count: 10)).count == 10)
    #expect(try name.validated(String(repeating: "e\u{301}", count: 10)).count == 10)
    #expect(try note.validated("   ") == "")
  }

  @Test func refusesControlCharactersAndLineBreaksInOneLine() {
    for scalar: Unicode.Scalar in [
      "\u{0}", "\u{7}", "\u{1B}", "\t", "\n", "\r", "\u{7F}", "\u{85}", "\u{9B}", "\u{2028}",
    ] {
      // In the middle, so trimming can't take it away.
      #expect(throws: UserText.Problem.forbiddenCharacter(scalar, lines: .single)) {
        try name.validated("a\(Character(scalar))b")
      }
    }
    for scalar: Unicode.Scalar in ["\u{0}", "\u{7}", "\u{1B}", "\r", "\u{7F}", "\u{9B}"] {
      #expect(throws: UserText.Problem.forbiddenCharacter(scalar, lines: .multiple)) {
        try note.validated("a\(Character(scalar))b")
      }
    }
  }

  @Test func limitsLength() {
    #expect(throws: UserText.Problem.tooLong(maximum: 10)) { try name.validated(String(repeating: "a", count: 11)) }
    #expect(throws: UserText.Problem.empty) { try name.validated(" \n ") }
    // Combining marks stacked on one character don't dodge the limit.
    #expect(throws: UserText.Problem.tooLong(maximum: 10)) {
      try name.validated("a" + String(repeating: "\u{301}", count: 100))
    }
  }

  @Test func messagesNameTheFieldAndTheCharacter() {
    #expect(
      UserText.Problem.tooLong(maximum: 200).message(field: "options[0].text")
        == "'options[0].text' can have at most 200 characters.")
    #expect(UserText.Problem.forbiddenCharacter("\u{1B}", lines: .multiple).message(field: "text").contains("U+001B"))
  }
}

import DomainKit
import MeridianStore
import Testing

/// The rules written once in MeridianStore that every engine applies (the contract suite checks that the engines
/// apply them alike). The one-time codes' rule: (the contract suite checks the engines apply it alike).
@Suite("One-time code rule")
struct OneTimeCodeRuleTests {
  let code = StoredOneTimeCode(codeHash: "right", expiresAt: 100, attemptsLeft: 2)

  @Test func eachStateAnswersAndChangesTheStoredCodeOnce() {
    #expect(OneTimeCodeRule.check(nil, codeHash: "right", now: 0) == (.expired, .keep))
    #expect(OneTimeCodeRule.check(code, codeHash: "right", now: 1) == (.valid, .delete))
    #expect(OneTimeCodeRule.check(code, codeHash: "wrong", now: 1) == (.wrong(remaining: 1), .spendAttempt))
    // Expiry wins over the right code; at the expiry instant the code is gone.
    #expect(OneTimeCodeRule.check(code, codeHash: "right", now: 100) == (.expired, .delete))
    var last = code
    last.attemptsLeft = 1
    #expect(OneTimeCodeRule.check(last, codeHash: "wrong", now: 1) == (.exhausted, .spendAttempt))
    // Used up: even the right code is refused, and the row stays until a new code replaces it.
    last.attemptsLeft = 0
    #expect(OneTimeCodeRule.check(last, codeHash: "right", now: 1) == (.exhausted, .keep))
  }
}

/// The polls' rules.
@Suite("Poll rules")
struct PollRulesTests {
  let poll = PollID("p1")

  @Test func aHiddenPollIsSeenByItsAuthorAndByModeratorsOnly() {
    let anna = UserID("anna")
    #expect(PollRules.isVisible(hidden: false, authorID: "bob", to: nil))
    #expect(!PollRules.isVisible(hidden: true, authorID: "bob", to: anna))
    #expect(!PollRules.isVisible(hidden: true, authorID: "bob", to: nil))
    #expect(PollRules.isVisible(hidden: true, authorID: "anna", to: anna))
    #expect(PollRules.isVisible(hidden: true, authorID: "bob", to: nil, includeHidden: true))
  }

  @Test func hiddenPollsTakeNothingAndClosedOnesTakeCommentsButNoVotes() {
    #expect(throws: PollStoreError.pollHidden(poll)) {
      try PollRules.checkOpen(poll, hidden: true, closesAt: nil, now: 0)
    }
    #expect(throws: PollStoreError.pollClosed(poll)) {
      try PollRules.checkOpen(poll, hidden: false, closesAt: 5, now: 5)
    }
    #expect(throws: Never.self) { try PollRules.checkOpen(poll, hidden: false, closesAt: 5, now: 4) }
    #expect(throws: PollStoreError.pollHidden(poll)) { try PollRules.checkCommentable(poll, hidden: true) }
    #expect(throws: Never.self) { try PollRules.checkCommentable(poll, hidden: false) }
  }

  @Test func aFirstVoteCountsAndEarnsAChangeMovesAndTheSameChoiceDoesNothing() {
    #expect(PollRules.ballot(previous: nil, choice: .first) == .init(first: 1, second: 0, total: 1, earnsReward: true))
    #expect(PollRules.ballot(previous: nil, choice: .second) == .init(first: 0, second: 1, total: 1, earnsReward: true))
    #expect(
      PollRules.ballot(previous: .first, choice: .second) == .init(first: -1, second: 1, total: 0, earnsReward: false))
    #expect(
      PollRules.ballot(previous: .second, choice: .first) == .init(first: 1, second: -1, total: 0, earnsReward: false))
    #expect(PollRules.ballot(previous: .first, choice: .first) == .none)
    #expect(PollRules.ballot(previous: .second, choice: .second) == .none)
  }
}

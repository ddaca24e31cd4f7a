import Testing

@testable import MeridianAdmin

/// The counts of polls and rewards in en, ru and uk, against the forms people write (CLDR's plural rules).
@Suite struct PollStringsTests {
  @Test func theCatalogIsCompleteForEveryPluralCategory() {
    #expect(PollStrings.issues().isEmpty, "\(PollStrings.issues())")
  }

  @Test func russianAndUkrainianCountsTakeTheirPluralForms() {
    func forms(_ key: String, _ language: String) -> [String] {
      [1, 2, 3, 5, 11, 21, 22, 25, 101, 111].map { PollStrings.count(key, $0, language: language) }
    }
    #expect(
      forms("polls.votes", "ru") == [
        "1 голос", "2 голоса", "3 голоса", "5 голосов", "11 голосов", "21 голос", "22 голоса", "25 голосов",
        "101 голос", "111 голосов",
      ])
    #expect(
      forms("polls.votes", "uk") == [
        "1 голос", "2 голоси", "3 голоси", "5 голосів", "11 голосів", "21 голос", "22 голоси", "25 голосів",
        "101 голос", "111 голосів",
      ])
    #expect(
      forms("points.count", "ru") == [
        "1 балл", "2 балла", "3 балла", "5 баллов", "11 баллов", "21 балл", "22 балла", "25 баллов", "101 балл",
        "111 баллов",
      ])
    #expect(forms("coupons.count", "en").prefix(3) == ["1 coupon", "2 coupons", "3 coupons"])
    #expect(PollStrings.count("polls.comments", 0, language: "en") == "0 comments")
    #expect(PollStrings.count("polls.comments", 0, language: "ru") == "0 комментариев")
    // A language the catalog doesn't have reads English.
    #expect(PollStrings.count("polls.votes", 2, language: "de") == "2 votes")
  }
}

import Foundation
import PersistenceKitStrings
import Testing

@testable import MeridianAdmin

/// The counts of polls and rewards in en, ru and uk, against the forms people write (CLDR's plural rules), read from
/// the String Catalog the CLI ships.
@Suite struct PollStringsTests {
  /// The catalog in the repository (the one the build copies into the CLI's resources).
  static let shippedFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Apps/Admin/MeridianAdmin/Resources/Localizable.xcstrings")

  @Test func theCatalogIsCompleteForEveryPluralCategory() throws {
    #expect(PollStrings.loaded.problem == nil)
    #expect(PollStrings.issues().isEmpty, "\(PollStrings.issues())")
    // The CLI reads the file in the repository, not a copy of its own.
    let shipped = try StringCatalog(contentsOf: Self.shippedFile)
    #expect(shipped.strings == PollStrings.catalog.strings)
    #expect(Set(shipped.strings.keys) == ["polls.votes", "polls.comments", "points.count", "coupons.count"])
    #expect(Set(shipped.languages) == ["en", "ru", "uk"])
  }

  /// The counts 1, 2, 3, 5, 11, 21, 22, 25, 101 and 111 of each key, as a Russian or Ukrainian speaker writes them.
  static let expected: [(key: String, language: String, forms: String)] = [
    (
      "polls.votes", "ru",
      "1 голос, 2 голоса, 3 голоса, 5 голосов, 11 голосов, 21 голос, 22 голоса, 25 голосов, 101 голос, 111 голосов"
    ),
    (
      "polls.votes", "uk",
      "1 голос, 2 голоси, 3 голоси, 5 голосів, 11 голосів, 21 голос, 22 голоси, 25 голосів, 101 голос, 111 голосів"
    ),
    (
      "points.count", "ru",
      "1 балл, 2 балла, 3 балла, 5 баллов, 11 баллов, 21 балл, 22 балла, 25 баллов, 101 балл, 111 баллов"
    ),
    ("points.count", "uk", "1 бал, 2 бали, 3 бали, 5 балів, 11 балів, 21 бал, 22 бали, 25 балів, 101 бал, 111 балів"),
    (
      "polls.comments", "ru",
      "1 комментарий, 2 комментария, 3 комментария, 5 комментариев, 11 комментариев, 21 комментарий, "
        + "22 комментария, 25 комментариев, 101 комментарий, 111 комментариев"
    ),
    (
      "polls.comments", "uk",
      "1 коментар, 2 коментарі, 3 коментарі, 5 коментарів, 11 коментарів, 21 коментар, 22 коментарі, "
        + "25 коментарів, 101 коментар, 111 коментарів"
    ),
    (
      "coupons.count", "ru",
      "1 купон, 2 купона, 3 купона, 5 купонов, 11 купонов, 21 купон, 22 купона, 25 купонов, 101 купон, 111 купонов"
    ),
    (
      "coupons.count", "uk",
      "1 купон, 2 купони, 3 купони, 5 купонів, 11 купонів, 21 купон, 22 купони, 25 купонів, 101 купон, 111 купонів"
    ),
    (
      "coupons.count", "en",
      "1 coupon, 2 coupons, 3 coupons, 5 coupons, 11 coupons, 21 coupons, 22 coupons, 25 coupons, 101 coupons, 111 coupons"
    ),
  ]

  @Test func russianAndUkrainianCountsTakeTheirPluralForms() {
    for (key, language, forms) in Self.expected {
      let counts = [1, 2, 3, 5, 11, 21, 22, 25, 101, 111].map { PollStrings.count(key, $0, language: language) }
      #expect(counts.joined(separator: ", ") == forms, "\(key) in \(language)")
    }
    #expect(PollStrings.count("polls.comments", 0, language: "en") == "0 comments")
    #expect(PollStrings.count("polls.comments", 0, language: "ru") == "0 комментариев")
    // A language the catalog doesn't have reads English.
    #expect(PollStrings.count("polls.votes", 2, language: "de") == "2 votes")
  }

  /// `i18n check` validates the shipped catalog and finds nothing missing in en, ru and uk; the file imports as it
  /// is with no warning; a copy that lacks a Ukrainian plural form and a Russian translation is caught.
  @Test func i18nCheckFindsNoneMissingInTheShippedCatalog() async throws {
    let sandbox = try AdminSandbox()
    _ = try sandbox.store()  // a migrated database
    let fresh = try await sandbox.admin(["i18n", "check", "--json"])
    #expect(fresh.status == 0, "\(fresh)")
    let freshReport = try fresh.object()
    #expect(freshReport["ok"] as? Bool == true, "\(fresh)")
    #expect(freshReport["builtIn"] as? [String] == [], "\(fresh)")
    let readable = try await sandbox.admin(["i18n", "check"])
    #expect(readable.stdout.contains("The CLI's Localizable.xcstrings (en, ru, uk): no problems."), "\(readable)")

    let imported = try await sandbox.admin(["i18n", "import-catalog", Self.shippedFile.path, "--json"])
    #expect(imported.status == 0, "\(imported)")
    let report = try imported.object()
    #expect(report["imported"] as? Bool == true)
    #expect(report["keys"] as? Int == 4)
    #expect(report["warnings"] as? [String] == [], "\(imported)")
    let percents = (report["languages"] as? [[String: Any]] ?? []).compactMap { $0["percent"] as? Double }
    #expect(percents == [100, 100, 100], "\(imported)")
    let checked = try await sandbox.admin(["i18n", "check", "--json"])
    #expect(checked.status == 0, "\(checked)")
    let catalog = try #require(try checked.object()["catalog"] as? [String: Any], "\(checked)")
    #expect(catalog["warnings"] as? [String] == [] && catalog["errors"] as? [String] == [], "\(checked)")

    // The same file with Ukrainian's `few` of votes and Russian's points taken out.
    var document = try #require(
      try JSONSerialization.jsonObject(with: Data(contentsOf: Self.shippedFile)) as? [String: Any])
    var strings = try #require(document["strings"] as? [String: [String: Any]])
    var votes = try #require(strings["polls.votes"]?["localizations"] as? [String: [String: Any]])
    var plural = try #require((votes["uk"]?["variations"] as? [String: Any])?["plural"] as? [String: Any])
    plural["few"] = nil
    votes["uk"] = ["variations": ["plural": plural]]
    strings["polls.votes"]?["localizations"] = votes
    var points = try #require(strings["points.count"]?["localizations"] as? [String: Any])
    points["ru"] = nil
    strings["points.count"]?["localizations"] = points
    document["strings"] = strings
    let broken = sandbox.path("Broken.xcstrings")
    try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: broken))
    let refused = try await sandbox.admin(["i18n", "import-catalog", broken, "--json"])
    #expect(refused.status == 1, "\(refused)")
    let refusal = try refused.object()
    #expect(refusal["errors"] as? [String] == ["uk: 'polls.votes' lacks plural forms few"], "\(refused)")
    #expect(refusal["warnings"] as? [String] == ["ru: 'points.count' is not translated"], "\(refused)")
  }
}

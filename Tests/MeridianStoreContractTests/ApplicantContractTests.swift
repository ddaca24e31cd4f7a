import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// The applicant's achievements and questionnaire, on every engine: kept per person, newest first, capped, deleted
/// one by one and with the account.
@Suite("Store contract: applicant achievements and questionnaire")
struct ApplicantContractTests {
  func makeUsers(_ store: any MeridianStore, _ names: [String]) async throws {
    for name in names {
      _ = try #require(
        try await store.createAccount(
          id: UserID(name), credential: .email("\(name)@example.com"), passwordHash: nil, now: 1))
    }
  }

  static let questionnaire = Questionnaire(
    fullName: "Анна Иванова", birthDate: "2008-03-14", city: "Томск", graduationYear: 2026,
    examScores: ["math": 82, "physics": 77, "russian": 90], preferredForm: "full-time")

  @Test(arguments: StoreEngine.all)
  func achievementsAreKeptPerPersonNewestFirstAndCapped(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      let olympiad = Achievement(
        id: "a1", kind: .study, title: "Regional physics olympiad, 2nd place", description: "Tomsk, 2025",
        year: 2025, createdAt: 10)
      try await store.addAchievement(olympiad, user: "ann")
      try await store.addAchievement(
        Achievement(id: "a2", kind: .sport, title: "Кандидат в мастера спорта по лыжам", createdAt: 20), user: "ann")
      try await store.addAchievement(
        Achievement(id: "b1", kind: .creative, title: "Art school diploma", createdAt: 15), user: "bob")
      #expect(try await store.achievements(of: "ann").map(\.id) == ["a2", "a1"])
      #expect(try await store.achievements(of: "ann").last == olympiad)
      #expect(try await store.achievements(of: "bob").map(\.kind) == [.creative])

      // A taken id and an unknown person are refused, and change nothing.
      await #expect(throws: ApplicantStoreError.duplicateID("a1")) {
        try await store.addAchievement(Achievement(id: "a1", kind: .study, title: "Again", createdAt: 30), user: "bob")
      }
      await #expect(throws: ApplicantStoreError.unknownUser("nobody")) {
        try await store.addAchievement(Achievement(id: "n1", kind: .study, title: "X", createdAt: 30), user: "nobody")
      }
      #expect(try await store.achievements(of: "bob").map(\.id) == ["b1"])

      // Only the owner deletes.
      #expect(!(try await store.deleteAchievement("a1", user: "bob")))
      #expect(try await store.deleteAchievement("a1", user: "ann"))
      #expect(!(try await store.deleteAchievement("a1", user: "ann")))
      #expect(try await store.achievements(of: "ann").map(\.id) == ["a2"])

      // At most Achievement.maximumCount each.
      for index in 1..<Achievement.maximumCount {
        try await store.addAchievement(
          Achievement(id: "c\(index)", kind: .study, title: "Certificate \(index)", createdAt: 100), user: "bob")
      }
      await #expect(throws: ApplicantStoreError.tooManyAchievements) {
        try await store.addAchievement(
          Achievement(id: "c-last", kind: .study, title: "One too many", createdAt: 200), user: "bob")
      }
      #expect(try await store.achievements(of: "bob").count == Achievement.maximumCount)
    }
  }

  @Test(arguments: StoreEngine.all)
  func questionnaireIsReplacedWholeAndGoesWithTheAccount(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["ann", "bob"])
      #expect(try await store.questionnaire(of: "ann") == nil)
      let saved = try await store.saveQuestionnaire(Self.questionnaire, user: "ann", now: 1_000)
      #expect(saved.updatedAt == 1_000)
      var expected = Self.questionnaire
      expected.updatedAt = 1_000
      #expect(try await store.questionnaire(of: "ann") == expected)
      #expect(try await store.questionnaire(of: "bob") == nil)

      var changed = Self.questionnaire
      changed.examScores = ["math": 60]
      changed.preferredForm = "extramural"
      changed.phone = "+7 913 000-00-00"
      _ = try await store.saveQuestionnaire(changed, user: "ann", now: 2_000)
      let stored = try #require(try await store.questionnaire(of: "ann"))
      #expect(stored.examScores == ["math": 60] && stored.totalScore == 60)
      #expect(stored.preferredForm == "extramural" && stored.phone == "+7 913 000-00-00" && stored.updatedAt == 2_000)

      await #expect(throws: ApplicantStoreError.unknownUser("nobody")) {
        try await store.saveQuestionnaire(Self.questionnaire, user: "nobody", now: 1)
      }

      // Deleting the account deletes both; the other person's stay.
      try await store.addAchievement(Achievement(id: "a1", kind: .study, title: "Olympiad", createdAt: 1), user: "ann")
      try await store.addAchievement(Achievement(id: "b1", kind: .sport, title: "Ski", createdAt: 1), user: "bob")
      _ = try await store.saveQuestionnaire(Self.questionnaire, user: "bob", now: 3_000)
      let counts = try await store.deleteUser("ann", dryRun: false, batchSize: 1000)
      #expect(counts.contains { $0.table == "applicant_achievements" && $0.rows == 1 }, "\(counts)")
      #expect(counts.contains { $0.table == "applicant_questionnaires" && $0.rows == 1 }, "\(counts)")
      #expect(try await store.questionnaire(of: "ann") == nil)
      #expect(try await store.achievements(of: "ann").isEmpty)
      #expect(try await store.questionnaire(of: "bob")?.updatedAt == 3_000)
      #expect(try await store.achievements(of: "bob").map(\.id) == ["b1"])
    }
  }
}

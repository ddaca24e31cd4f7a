import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianServer
import MeridianStore
import NetworkingKit
import Testing

/// The applicant's side of the directory over HTTP, on every engine: achievements, the questionnaire with one
/// error per bad field (and nothing stored), and the programmes it can enter.
@Suite("Applicant achievements and questionnaire over HTTP", .inProcess)
struct ApplicantTests {
  /// The error envelope with its per-field errors, from a raw answer.
  static func fieldErrors(_ response: TransportResponse) throws -> FieldErrorEnvelope {
    try JSONDecoder().decode(FieldErrorEnvelope.self, from: response.body)
  }

  @Test(arguments: PollTests.engines)
  func achievementsQuestionnaireAndMatchingProgrammes(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      try await PlaceTests.seed(server.app.environment.store)
      let anna = try await server.signUp("anna")
      let boris = try await server.signUp("boris")
      let json: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(anna.session.token)"]

      // Achievements: added, listed newest first, deleted by their owner only.
      let olympiad = try await anna.client.send(
        API.addAchievement,
        body: NewAchievement(kind: "study", title: " Regional physics olympiad, 2nd place ", year: 2025))
      #expect(olympiad.title == "Regional physics olympiad, 2nd place" && olympiad.kind == .study)
      let ski = try await anna.client.send(API.addAchievement, body: NewAchievement(kind: "sport", title: "Лыжи, КМС"))
      #expect(try await anna.client.send(API.achievements).items.map(\.id) == [ski.id, olympiad.id])
      #expect(try await boris.client.send(API.achievements).items.isEmpty)
      await expectAPIError(.notFound, status: 404) {
        try await boris.client.send(API.deleteAchievement, parameters: AchievementRef(id: olympiad.id))
      }
      _ = try await anna.client.send(API.deleteAchievement, parameters: AchievementRef(id: olympiad.id))
      #expect(try await anna.client.send(API.achievements).items.map(\.id) == [ski.id])
      let badAchievement = try await server.phoneAppRequest(
        .post, "/v1/me/achievements", headers: json, body: Data(#"{"kind":"chess","title":"","year":1800}"#.utf8))
      #expect(badAchievement.head.status.code == 422)
      let achievementErrors = try Self.fieldErrors(badAchievement).error
      #expect(achievementErrors.code == "invalid_achievement")
      #expect(achievementErrors.fields.map(\.field) == ["kind", "title", "year"])
      #expect(achievementErrors.fields.map(\.code) == ["invalid", "required", "invalid"])
      #expect(try await anna.client.send(API.achievements).items.count == 1)

      // No questionnaire yet: reading it and matching are 404s.
      await expectAPIError(.notFound, status: 404) { try await anna.client.send(API.questionnaire) }
      await expectAPIError(.notFound, status: 404) {
        try await anna.client.send(API.questionnaireProgrammes, parameters: PlacesParameters())
      }
      // Every required field missing: one error each, nothing stored.
      let empty = try await server.phoneAppRequest(.put, "/v1/me/questionnaire", headers: json, body: Data("{}".utf8))
      #expect(empty.head.status.code == 422)
      let missing = try Self.fieldErrors(empty).error
      #expect(missing.code == "invalid_questionnaire")
      #expect(
        missing.fields.map(\.field) == [
          "fullName", "birthDate", "city", "graduationYear", "examScores", "preferredForm",
        ])
      #expect(missing.fields.allSatisfy { $0.code == "required" })
      await expectAPIError(.notFound, status: 404) { try await anna.client.send(API.questionnaire) }

      // A whole questionnaire: 80 + 75 + 85 = 240 points, full-time.
      let filled = Questionnaire(
        fullName: "Анна Петрова", birthDate: "2008-03-14", city: "Томск", graduationYear: 2026,
        examScores: ["math": 80, "physics": 75, "russian": 85], preferredForm: "full-time")
      let saved = try await anna.client.send(API.saveQuestionnaire, body: filled)
      #expect(saved.updatedAt != nil && saved.totalScore == 240)
      #expect(try await anna.client.send(API.questionnaire) == saved)
      let matches = try await anna.client.send(API.questionnaireProgrammes, parameters: PlacesParameters())
      #expect(matches.items.map(\.place.id.rawValue) == ["tsu-ff-phys", "tsu-gf-geo"])
      let byRussianPrefix = try await anna.client.send(
        API.questionnaireProgrammes, parameters: PlacesParameters(q: "геог"))
      #expect(byRussianPrefix.items.map(\.place.id.rawValue) == ["tsu-gf-geo"])

      // Bad values: one error per field, and the stored questionnaire stays as it was.
      let bad = try await server.phoneAppRequest(
        .put, "/v1/me/questionnaire", headers: json,
        body: Data(
          #"""
          {"fullName":"Анна","birthDate":"2008-02-30","city":"Томск","graduationYear":2026,
           "examScores":{"math":120},"preferredForm":"evening"}
          """#.utf8))
      #expect(bad.head.status.code == 422)
      let invalid = try Self.fieldErrors(bad).error
      #expect(invalid.fields.map(\.field) == ["birthDate", "examScores.math", "preferredForm"])
      #expect(invalid.fields.allSatisfy { $0.code == "invalid" })
      #expect(invalid.message.contains("birthDate must be a date as YYYY-MM-DD"))
      #expect(try await anna.client.send(API.questionnaire) == saved)

      // Another form: no programme matches; fewer points: fewer programmes.
      var extramural = filled
      extramural.preferredForm = "extramural"
      _ = try await anna.client.send(API.saveQuestionnaire, body: extramural)
      #expect(try await anna.client.send(API.questionnaireProgrammes, parameters: PlacesParameters()).items.isEmpty)
      var fewer = filled
      fewer.examScores = ["math": 70, "physics": 65, "russian": 70]
      _ = try await anna.client.send(API.saveQuestionnaire, body: fewer)
      let fewerMatches = try await anna.client.send(API.questionnaireProgrammes, parameters: PlacesParameters())
      #expect(fewerMatches.items.map(\.place.id.rawValue) == ["tsu-gf-geo"])

      // Signed-out callers get 401; boris sees nothing of anna's.
      let unsigned = try await server.phoneAppRequest(.get, "/v1/me/questionnaire")
      #expect(unsigned.head.status == .unauthorized)
      await expectAPIError(.notFound, status: 404) { try await boris.client.send(API.questionnaire) }
    }
  }
}

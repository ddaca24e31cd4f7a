import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import NetworkingKit

/// The applicant's side of the directory: the caller's achievements and questionnaire (validated here, one error
/// per field), and the programmes the questionnaire can enter. Everything needs a signed-in caller.
struct ApplicantFeature: Sendable {
  let environment: ServerEnvironment
  var store: any MeridianStore { environment.store }

  /// Registers the routes of `API.applicantEndpoints`.
  func register(on routes: RouteRegistrar) {
    routes.on(API.achievements) { call in
      AchievementList(items: try await store.achievements(of: call.authenticated()))
    }
    routes.on(API.addAchievement, status: .created) { call in
      let user = try call.authenticated()
      let now = environment.now()
      switch call.body.validated(id: UUID().uuidString.lowercased(), now: now) {
      case .failure(let errors): throw errors.apiError(.invalidAchievement, "achievement")
      case .success(let achievement):
        do {
          try await store.addAchievement(achievement, user: user)
        } catch ApplicantStoreError.tooManyAchievements {
          throw APIError(
            status: 409, code: .quotaExceeded, message: ApplicantStoreError.tooManyAchievements.description)
        }
        return achievement
      }
    }
    routes.on(API.deleteAchievement, status: .noContent) { call in
      guard try await store.deleteAchievement(call.parameters.id, user: call.authenticated()) else {
        throw APIError.notFound("You have no achievement with this id.")
      }
      return NoContent()
    }
    routes.on(API.questionnaire) { call in
      guard let questionnaire = try await store.questionnaire(of: call.authenticated()) else {
        throw Self.noQuestionnaire
      }
      return questionnaire
    }
    routes.on(API.saveQuestionnaire) { call in
      let user = try call.authenticated()
      let now = environment.now()
      switch call.body.validated(now: now) {
      case .failure(let errors): throw errors.apiError(.invalidQuestionnaire, "questionnaire")
      case .success(let questionnaire): return try await store.saveQuestionnaire(questionnaire, user: user, now: now)
      }
    }
    routes.on(API.questionnaireProgrammes) { call in
      guard let questionnaire = try await store.questionnaire(of: call.authenticated()) else {
        throw Self.noQuestionnaire
      }
      var parameters = call.parameters
      parameters.kinds = [PlaceKind.programme.rawValue]
      parameters.attributes += Self.matching(questionnaire)
      return try await PlaceFeature(environment: environment).list(parameters, scope: .all)
    }
  }

  static let noQuestionnaire = APIError.notFound(
    "You have no questionnaire; fill it in first (PUT /v1/me/questionnaire).")

  /// What a programme the questionnaire can enter has: a passing score at most its total, its preferred form.
  static func matching(_ questionnaire: Questionnaire) -> [PlaceAttributeFilter] {
    [
      PlaceAttributeFilter(name: "passingScore", maximum: Double(questionnaire.totalScore)),
      PlaceAttributeFilter(name: "form", equals: questionnaire.preferredForm ?? StudyForm.fullTime.rawValue),
    ]
  }
}

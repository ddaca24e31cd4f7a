import DomainKit
import Foundation
import MeridianAPI

/// The applicant's side of the places directory: a person's achievements (study, sport, creative) and their
/// questionnaire, which programmes are matched against. Both are the person's own: they go with the account.
///
/// The store keeps what it is given; the server validates bodies first (``NewAchievement/validated(id:now:)``,
/// ``Questionnaire/validated(now:)``). The store still refuses what would break its own rules.
public protocol ApplicantStore: Sendable {
  /// Adds an achievement of `user`.
  /// - Throws: ``ApplicantStoreError`` `.tooManyAchievements` past ``Achievement/maximumCount``, `.unknownUser`,
  ///   `.duplicateID`.
  func addAchievement(_ achievement: Achievement, user: UserID) async throws
  /// `user`'s achievements, newest first.
  func achievements(of user: UserID) async throws -> [Achievement]
  /// Deletes `user`'s achievement `id`. False when they have none with that id.
  func deleteAchievement(_ id: String, user: UserID) async throws -> Bool
  /// Stores `user`'s questionnaire (replacing the earlier one) with `updatedAt` = `now`, and returns it.
  /// - Throws: ``ApplicantStoreError/unknownUser(_:)``.
  func saveQuestionnaire(_ questionnaire: Questionnaire, user: UserID, now: Int64) async throws -> Questionnaire
  /// `user`'s questionnaire, or nil when they have none.
  func questionnaire(of user: UserID) async throws -> Questionnaire?
}

/// Why an applicant's write was refused.
public enum ApplicantStoreError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The person already keeps ``Achievement/maximumCount`` achievements.
  case tooManyAchievements
  /// No such account.
  case unknownUser(UserID)
  /// The achievement id is taken.
  case duplicateID(String)

  /// What was wrong and what to do.
  public var description: String {
    switch self {
    case .tooManyAchievements:
      "You keep \(Achievement.maximumCount) achievements already, the most there may be; delete one first."
    case .unknownUser(let id): "There is no account '\(id)'."
    case .duplicateID(let id): "An achievement with id '\(id)' exists already."
    }
  }
}

import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// What a person told Meridian about their stays: the home and work they set (DomainKit's ``HomeWorkRules`` proposes
/// them otherwise) and their corrections (merge, split, rename — DomainKit's ``StayCorrection``), applied again each
/// time stays are detected.
public protocol StayStore: Sendable {
  /// The home and work the owner set; nil for those they did not.
  func homeWork(owner: UserID) async throws -> HomeWorkChoice
  /// Replaces the owner's home and work (nil clears one).
  func setHomeWork(_ choice: HomeWorkChoice, owner: UserID, now: Int64) async throws
  /// The owner's corrections, in the order they were made.
  func stayCorrections(owner: UserID) async throws -> [StoredStayCorrection]
  /// Adds a correction for `owner`; false (nothing stored) when they already have `maximumCount`.
  func addStayCorrection(_ correction: StoredStayCorrection, owner: UserID, maximumCount: Int) async throws -> Bool
  /// Deletes the owner's correction `id`; false when they have none with that id.
  func deleteStayCorrection(id: String, owner: UserID) async throws -> Bool
}

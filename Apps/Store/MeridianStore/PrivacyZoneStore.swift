import DomainKit
import Foundation

/// The circles people draw where others must not see them (DomainKit's ``PrivacyZone``); ``SocialStore``'s
/// `privacySettings(owner:)` carries them too, for the rule that applies them (``AudienceView``).
public protocol PrivacyZoneStore: Sendable {
  /// The owner's zones, oldest first.
  func privacyZones(owner: UserID) async throws -> [PrivacyZone]
  /// Inserts `zone` for `owner`, or replaces the owner's zone with its id; false (nothing stored) when it is new and
  /// the owner already has `maximumCount` zones.
  func savePrivacyZone(_ zone: PrivacyZone, owner: UserID, now: Int64, maximumCount: Int) async throws -> Bool
  /// Deletes the owner's zone `id`; false when they have none with that id.
  func deletePrivacyZone(id: String, owner: UserID) async throws -> Bool
}

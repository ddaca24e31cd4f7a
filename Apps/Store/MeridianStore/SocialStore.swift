import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// The social graph: profiles with their field audiences, groups and members, and sharing switches — what
/// DomainKit's `Sharing` rules read.
public protocol SocialStore: Sendable {
  // MARK: Profiles

  /// A user's full profile.
  func profile(_ userID: UserID) async throws -> Profile?
  /// Replaces a user's profile.
  func saveProfile(_ profile: Profile) async throws
  /// Profiles whose name contains `text` or whose phone equals `phone`, at most `limit`.
  func searchProfiles(text: String, phone: String?, excluding: UserID, limit: Int) async throws -> [Profile]

  // MARK: Groups and sharing

  /// The groups `owner` owns, with members.
  func groups(owner: UserID) async throws -> [Group]
  /// One group with members.
  func group(_ id: GroupID) async throws -> Group?
  /// Inserts or updates a group and replaces its members.
  func saveGroup(_ group: Group) async throws
  /// Deletes a group and its memberships.
  func deleteGroup(_ id: GroupID) async throws
  /// The owner's sharing switches.
  func sharing(owner: UserID) async throws -> SharingState
  /// Replaces the owner's sharing switches.
  func saveSharing(_ state: SharingState, owner: UserID) async throws
  /// Groups, field audiences and sharing of `owner`: the input of DomainKit's `Sharing.canSee`.
  func privacySettings(owner: UserID) async throws -> PrivacySettings?
  /// The users who may share their location with `viewer`: owners of groups (other than Blacklists) that have
  /// the viewer as a member, and owners with a direct grant to the viewer. A superset, without the viewer, sorted;
  /// `Sharing.canSee` decides.
  func sharingCandidates(viewer: UserID) async throws -> [UserID]
}

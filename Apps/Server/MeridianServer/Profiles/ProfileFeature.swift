import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import NetworkingKit

/// The caller's account and profile, other people's profiles (only the fields they may see) and user search.
struct ProfileFeature: Sendable {
  let environment: ServerEnvironment
  /// Where profile photos uploaded with `POST /v1/blobs` are; an avatar `/v1/blobs/<hash>` must be one of them.
  var blobs: (any BlobStore)? = nil
  var accounts: any AccountStore { environment.store }
  var store: any SocialStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.me) { call in try await me(call.authenticated()) }
    routes.on(API.updateProfile) { call in try await updateProfile(call.authenticated(), call.body) }
    routes.on(API.updateSettings) { call in try await updateSettings(call.authenticated(), call.body) }
    routes.on(API.userProfile) { call in try await userProfile(viewer: call.authenticated(), of: call.parameters.id) }
    routes.on(API.searchUsers) { call in try await searchUsers(viewer: call.authenticated(), call.parameters.q) }
  }

  func me(_ user: UserID) async throws -> Me {
    guard let account = try await accounts.account(user), let profile = try await store.profile(user) else {
      throw APIError.tokenInvalid
    }
    return Me(
      account: account, profile: profile, sharing: try await store.sharing(owner: user),
      lastFixAt: try await environment.lastFix(of: user)?.timestamp,
      settings: AccountSettings(liveOnly: try await accounts.isLiveOnly(user)))
  }

  /// `PATCH /v1/me/settings`: live only on or off, deleting the history with it when asked.
  func updateSettings(_ user: UserID, _ update: AccountSettingsUpdate) async throws -> AccountSettingsChange {
    var liveOnly = try await accounts.isLiveOnly(user)
    var deleted = 0
    if update.deleteHistory == true, update.liveOnly != true {
      throw APIError.invalidRequest(
        "'deleteHistory' deletes the history when live only is turned on; send it with \"liveOnly\": true.")
    }
    if let wanted = update.liveOnly {
      guard
        let count = try await accounts.setLiveOnly(
          user, wanted, deletingHistory: update.deleteHistory == true, now: environment.now())
      else { throw APIError.tokenInvalid }
      liveOnly = wanted
      deleted = count
    }
    return AccountSettingsChange(settings: AccountSettings(liveOnly: liveOnly), deletedFixes: deleted)
  }

  func updateProfile(_ user: UserID, _ update: ProfileUpdate) async throws -> Profile {
    guard var profile = try await store.profile(user) else { throw APIError.tokenInvalid }
    let previousAvatar = profile.avatar
    func text(_ value: String?, _ field: String, _ rule: UserText) throws(APIError) -> String?? {
      guard let value else { return .none }
      let checked = try rule.checked(value, field: field)
      return .some(checked.isEmpty ? nil : checked)
    }
    if let avatar = update.avatar {
      // An empty string clears the photo; any other value is an image uploaded to the blob store.
      if avatar.isEmpty {
        profile.avatar = nil
      } else {
        guard try await (blobs ?? environment.blobs).isUploadedImage(avatar) else {
          throw APIError.invalidRequest(
            "'avatar' must be an image uploaded with POST /v1/blobs, referred to as /v1/blobs/<hash>.")
        }
        profile.avatar = avatar
      }
    }
    if let name = try text(update.fullName, "fullName", Profile.fullNameRule) { profile.fullName = name }
    if let status = try text(update.status, "status", Profile.statusRule) { profile.status = status }
    if let birthday = update.birthday { profile.birthday = birthday }
    if let gender = update.gender { profile.gender = gender }
    for (name, audience) in update.audience ?? [:] {
      guard let field = ProfileField(rawValue: name) else {
        throw APIError.invalidRequest(
          "Unknown profile field \(QuotedValue.quote(name)); use \(ProfileField.allCases.map(\.rawValue).joined(separator: ", "))."
        )
      }
      profile.audience[field] = audience
    }
    try await store.saveProfile(profile)
    // The photo replaced goes from the blob store when it was its last reference.
    if let blobs, let previous = BlobReference.hash(in: previousAvatar),
      previous != BlobReference.hash(in: profile.avatar)
    {
      _ = try await blobs.deleteUnreferenced(
        [previous], in: environment.store, now: environment.now(), gracePeriod: environment.blobGracePeriod)
    }
    return profile
  }

  func userProfile(viewer: UserID, of user: UserID) async throws -> Profile {
    guard let profile = try await store.profile(user), let settings = try await store.privacySettings(owner: user),
      !settings.isBlacklisted(viewer)
    else { throw APIError.notFound("There is no such user.") }
    return profile.redacted(keeping: Sharing.visibleFields(to: viewer, of: settings, at: environment.now()))
  }

  func searchUsers(viewer: UserID, _ text: String) async throws -> UserSearchResult {
    let now = environment.now()
    if let wait = await environment.searchLimiter.take(viewer.rawValue, cost: 1, now: now) {
      throw APIError.rateLimited("Too many searches; try again in a minute.", retryAfterMilliseconds: wait)
    }
    let phone = try? PhoneNumber.normalize(text)
    var results: [Profile] = []
    for profile in try await store.searchProfiles(text: text, phone: phone, excluding: viewer, limit: 50) {
      guard let settings = try await store.privacySettings(owner: profile.userID), !settings.isBlacklisted(viewer)
      else { continue }
      let visible = Sharing.visibleFields(to: viewer, of: settings, at: now)
      // A name match must be on a name the viewer may see. A phone match is on a number the viewer already knows:
      // it finds the person unless they hid their number from everybody (audience `nobody`).
      let matchedPhone = phone != nil && profile.phone == phone && profile.audience(of: .phone) != .nobody
      guard matchedPhone || visible.contains(.fullName) else { continue }
      results.append(profile.redacted(keeping: visible))
    }
    return UserSearchResult(users: results)
  }
}

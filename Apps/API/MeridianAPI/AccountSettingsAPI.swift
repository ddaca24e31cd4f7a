import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: Account settings

  /// `PATCH /v1/me/settings {liveOnly?, deleteHistory?}` → the settings and how many fixes were deleted. Live only
  /// keeps nothing but the last position: no history is stored (the live position, sharing and geofences work as
  /// before) and history imports are refused with `409 live_only`. `deleteHistory: true` with `liveOnly: true`
  /// deletes the history stored so far (the last position stays); without it that history stays. `400
  /// invalid_request` for `deleteHistory` without `liveOnly: true`.
  public static let updateSettings = Endpoint<Void, AccountSettingsUpdate, AccountSettingsChange>(
    .patch, "/v1/me/settings")

  /// The account-settings endpoints, for ``all``.
  static let accountSettingsEndpoints: [EndpointDescriptor] = [updateSettings.descriptor]
}

/// The caller's account settings (in `GET /v1/me` as `settings`).
public struct AccountSettings: Sendable, Hashable, Codable {
  /// Whether only the last position is kept (no history).
  public var liveOnly: Bool
  /// Settings.
  public init(liveOnly: Bool = false) { self.liveOnly = liveOnly }
}

/// `PATCH /v1/me/settings`: absent fields stay as they are.
public struct AccountSettingsUpdate: Sendable, Hashable, Codable {
  /// Keep only the last position (true) or the whole history (false).
  public var liveOnly: Bool?
  /// With `liveOnly: true`: delete the history stored so far, all but the last position.
  public var deleteHistory: Bool?
  /// An update.
  public init(liveOnly: Bool? = nil, deleteHistory: Bool? = nil) {
    self.liveOnly = liveOnly
    self.deleteHistory = deleteHistory
  }
}

/// `PATCH /v1/me/settings`'s answer.
public struct AccountSettingsChange: Sendable, Hashable, Codable {
  /// The settings now.
  public var settings: AccountSettings
  /// How many fixes the change deleted (0 without `deleteHistory`).
  public var deletedFixes: Int
  /// An answer.
  public init(settings: AccountSettings, deletedFixes: Int) {
    self.settings = settings
    self.deletedFixes = deletedFixes
  }
}

extension APIError {
  /// 409 with ``APIErrorCode/liveOnly``: the account keeps no history, so none can be imported.
  public static let liveOnlyRefusesImport = APIError(
    status: 409, code: .liveOnly,
    message:
      "This account keeps only its last position (live only), so no history can be imported. Nothing was imported; "
      + "turn live only off in the settings (PATCH /v1/me/settings {\"liveOnly\": false}) to import.")
}

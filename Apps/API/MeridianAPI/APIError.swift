import Foundation
import NetworkingKit

/// The stable, machine-readable codes of the error envelope `{"error":{"code","message"}}`.
///
/// Clients switch on these; the message is for people. Codes never change meaning once published.
public enum APIErrorCode: String, Sendable, Hashable, Codable, CaseIterable {
  /// The body is not valid JSON or does not have the expected shape.
  case invalidJSON = "invalid_json"
  /// A path or query parameter, or a body field, is missing or out of range.
  case invalidRequest = "invalid_request"
  /// A location fix has a field out of range (the message names it).
  case invalidFix = "invalid_fix"
  /// The body is larger than the server accepts.
  case bodyTooLarge = "body_too_large"
  /// The `Content-Encoding` is not supported or the compressed body is corrupt.
  case unsupportedEncoding = "unsupported_encoding"
  /// The bearer token is missing, unknown, revoked or expired: sign in again.
  case tokenInvalid = "token_invalid"
  /// No route for this path.
  case routeNotFound = "route_not_found"
  /// The path exists but not with this method.
  case methodNotAllowed = "method_not_allowed"
  /// The resource (user, group, …) does not exist or is not visible to the caller.
  case notFound = "not_found"
  /// Too many requests; retry later.
  case rateLimited = "rate_limited"
  /// The phone number is not an international number.
  case invalidPhone = "invalid_phone"
  /// The email address is not valid.
  case invalidEmail = "invalid_email"
  /// The password does not meet the rules.
  case invalidPassword = "invalid_password"
  /// The one-time code is wrong.
  case otpInvalid = "otp_invalid"
  /// No valid one-time code: never requested, expired or used up.
  case otpExpired = "otp_expired"
  /// Too many wrong codes; request a new one.
  case otpAttemptsExceeded = "otp_attempts_exceeded"
  /// The SMS gateway did not take the code (it failed, timed out or refused); nothing was counted, try again (503).
  case smsUnavailable = "sms_unavailable"
  /// The email address already has an account.
  case emailTaken = "email_taken"
  /// Email and password don't match an account.
  case invalidCredentials = "invalid_credentials"
  /// Standard groups (Family, Friends, Blacklist) can't be renamed or deleted.
  case standardGroup = "standard_group"
  /// The group name is empty or too long.
  case invalidGroupName = "invalid_group_name"
  /// The user can't be a member of that group (e.g. the owner themselves).
  case invalidMember = "invalid_member"
  /// The device is registered to another account.
  case deviceNotOwned = "device_not_owned"
  /// The user's location is unknown or not shared with the caller.
  case locationUnavailable = "location_unavailable"
  /// An `Idempotency-Key` was reused for a different request.
  case idempotencyConflict = "idempotency_conflict"
  /// The promotion doesn't run now, or was never offered to the caller (403).
  case promotionNotAvailable = "promotion_not_available"
  /// The promo code is not the promotion's (422).
  case promotionCodeInvalid = "promotion_code_invalid"
  /// The caller already redeemed this promotion (409).
  case alreadyRedeemed = "already_redeemed"
  /// The caller is not an advertiser of the venue (or the promotion's venue) named (403).
  case notAdvertiser = "not_advertiser"
  /// The caller advertises for the venue they claim already (409).
  case alreadyAdvertiser = "already_advertiser"
  /// The account is disabled by an operator (403).
  case accountDisabled = "account_disabled"
  /// The account already has as many of something (groups, devices) as it may (409).
  case quotaExceeded = "quota_exceeded"
  /// The request's `Content-Type` is not one the route reads (415).
  case unsupportedMediaType = "unsupported_media_type"
  /// A poll breaks its rules: an empty or long title, a long description, not exactly two options, an empty
  /// caption, an image that isn't an uploaded blob, a close time in the past (422).
  case invalidPoll = "invalid_poll"
  /// A comment is empty or longer than 1000 characters (422).
  case invalidComment = "invalid_comment"
  /// A review breaks its rules: a grade outside 1…5 or a text longer than 2,000 characters (422).
  case invalidReview = "invalid_review"
  /// A geofence breaks its rules: a bad name, a radius outside 25 m – 50 km, a polygon that isn't simple or has
  /// over 1,000 vertices, or sharing with a group the owner doesn't have (422).
  case invalidGeofence = "invalid_geofence"
  /// A privacy zone breaks its rules: a bad name, a centre off the globe, a radius outside 50 m – 50 km (422).
  case invalidPrivacyZone = "invalid_privacy_zone"
  /// A stay correction breaks its rules: a merge whose `to` is before its `from`, a name empty or over 100
  /// characters (422).
  case invalidStayCorrection = "invalid_stay_correction"
  /// A geofence's `alerts` rule is not valid: an unknown time zone, days or hours without one, hours that aren't
  /// `HH:mm`, an empty list, or a person who doesn't share their location with the fence's owner (400).
  case invalidAlertRule = "invalid_alert_rule"
  /// A proximity rule is not valid: a radius outside 25 m – 50 km, an unknown person, oneself, or a person who
  /// doesn't share their location with the caller (400).
  case invalidProximityRule = "invalid_proximity_rule"
  /// The person has as many geofences as the server allows (`MERIDIAN_GEOFENCE_MAX_PER_PERSON`, 100 by default);
  /// nothing was stored (409).
  case geofenceLimitReached = "geofence_limit_reached"
  /// An achievement breaks its rules: an unknown kind, an empty or long title, a year out of range (422, with
  /// `fields`).
  case invalidAchievement = "invalid_achievement"
  /// A questionnaire lacks a required field or has a bad one (422, with one entry per field in `fields`).
  case invalidQuestionnaire = "invalid_questionnaire"
  /// Voting in this poll has ended (409).
  case pollClosed = "poll_closed"
  /// The poll is hidden by an operator and takes no votes or comments (409).
  case pollHidden = "poll_hidden"
  /// Only the poll's author may close or delete it (403).
  case notPollAuthor = "not_poll_author"
  /// The caller's points don't cover the price; nothing changed (409).
  case insufficientPoints = "insufficient_points"
  /// The coupon offer has no coupons left (409).
  case outOfStock = "out_of_stock"
  /// The coupon offer has ended (409).
  case offerExpired = "offer_expired"
  /// An upload is not a JPEG, PNG or WebP image by its first bytes (415).
  case unsupportedImage = "unsupported_image"
  /// A webhook URL isn't an absolute `http`/`https` URL with a host, or its host doesn't resolve (422).
  case webhookURLInvalid = "webhook_url_invalid"
  /// A webhook URL's host is (or resolves to) a loopback, private, link-local or metadata address, which the
  /// server's operator doesn't allow (422).
  case webhookAddressForbidden = "webhook_address_forbidden"
  /// The share link's `until` has passed: it shows nothing any more (410).
  case shareLinkExpired = "share_link_expired"
  /// The share link's owner revoked it: it shows nothing any more (410).
  case shareLinkRevoked = "share_link_revoked"
  /// The account keeps only its last position (live only), so it refuses a history import (409).
  case liveOnly = "live_only"
  /// No new accounts are made on this server (`MERIDIAN_REGISTRATION=closed`), by any way of signing in (403).
  case registrationClosed = "registration_closed"
  /// Email and password sign-in and registration are turned off (`MERIDIAN_PASSWORD_SIGN_IN=off`) (403).
  case passwordSignInDisabled = "password_sign_in_disabled"
  /// No OpenID provider is configured (404).
  case ssoNotConfigured = "sso_not_configured"
  /// The single sign-on's `state` or one-time code is unknown, used, expired or another browser's (400).
  case ssoStateInvalid = "sso_state_invalid"
  /// The provider's ID token failed a check: signature, issuer, audience, times or nonce (401).
  case ssoTokenInvalid = "sso_token_invalid"
  /// The provider refused the sign-in or answered something unusable (502).
  case ssoProviderError = "sso_provider_error"
  /// The provider did not answer within the deadline (503).
  case ssoProviderUnavailable = "sso_provider_unavailable"
  /// The server is shutting down or temporarily unable to answer.
  case unavailable = "unavailable"
  /// An unexpected server failure.
  case `internal` = "internal"
}

/// A failure as the API reports it: an HTTP status and the envelope's code and message.
///
/// The server throws it from handlers; clients see it as NetworkingKit's `ServerError` with the same code.
public struct APIError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The HTTP status code.
  public var status: Int
  /// The stable code.
  public var code: APIErrorCode
  /// A sentence that says what was wrong and what to do.
  public var message: String
  /// For 429 and 503: how many seconds to wait before trying again (sent as `Retry-After`).
  public var retryAfterSeconds: Int?
  /// For a body with several bad fields: one error per field (sent as the envelope's `fields`).
  public var fields: [APIFieldError] = []

  /// Creates an error.
  public init(status: Int, code: APIErrorCode, message: String, retryAfterSeconds: Int? = nil) {
    self.status = status
    self.code = code
    self.message = message
    self.retryAfterSeconds = retryAfterSeconds
  }

  /// The envelope this error is sent as.
  public var envelope: StandardErrorEnvelope { StandardErrorEnvelope(code: code.rawValue, message: message) }

  /// `status code: message`.
  public var description: String { "\(status) \(code.rawValue): \(message)" }

  /// 400 with ``APIErrorCode/invalidRequest``.
  public static func invalidRequest(_ message: String) -> APIError {
    APIError(status: 400, code: .invalidRequest, message: message)
  }

  /// 401 with ``APIErrorCode/tokenInvalid``.
  public static let tokenInvalid = APIError(
    status: 401, code: .tokenInvalid, message: "The access token is missing, invalid or expired. Sign in again.")

  /// 403 with ``APIErrorCode/accountDisabled``.
  public static let accountDisabled = APIError(
    status: 403, code: .accountDisabled, message: "This account is disabled; contact the operator of this server.")

  /// 404 with ``APIErrorCode/notFound``.
  public static func notFound(_ message: String) -> APIError {
    APIError(status: 404, code: .notFound, message: message)
  }

  /// 429 with ``APIErrorCode/rateLimited``, and `Retry-After` when `retryAfterMilliseconds` is given.
  public static func rateLimited(_ message: String, retryAfterMilliseconds: Int64? = nil) -> APIError {
    APIError(
      status: 429, code: .rateLimited, message: message,
      retryAfterSeconds: retryAfterMilliseconds.map { Int(max(1, ($0 + 999) / 1000)) })
  }
}

/// What was wrong with one field of a body. Wire names: `field` (`birthDate`, `examScores.math`), `code`
/// (`required` or `invalid`), `message`.
public struct APIFieldError: Sendable, Hashable, Codable {
  /// The field's wire name.
  public var field: String
  /// `required` or `invalid`.
  public var code: String
  /// What is wrong, after the field's name ("must be a date as YYYY-MM-DD").
  public var message: String

  /// An error.
  public init(field: String, code: String, message: String) {
    self.field = field
    self.code = code
    self.message = message
  }

  /// The field is missing or empty.
  public static func required(_ field: String) -> APIFieldError {
    APIFieldError(field: field, code: "required", message: "is required")
  }

  /// The field's value breaks a rule.
  public static func invalid(_ field: String, _ message: String) -> APIFieldError {
    APIFieldError(field: field, code: "invalid", message: message)
  }
}

/// The error envelope with per-field errors: `{"error":{"code","message","fields":[{"field","code","message"}]}}`.
/// Clients that read only `code` and `message` read it as the standard envelope.
public struct FieldErrorEnvelope: Sendable, Hashable, Codable {
  /// The inner object.
  public struct Detail: Sendable, Hashable, Codable {
    /// The stable code.
    public var code: String
    /// The message.
    public var message: String
    /// One per bad field.
    public var fields: [APIFieldError]
  }

  /// The `error` object.
  public var error: Detail

  /// An envelope.
  public init(code: String, message: String, fields: [APIFieldError]) {
    error = Detail(code: code, message: message, fields: fields)
  }
}

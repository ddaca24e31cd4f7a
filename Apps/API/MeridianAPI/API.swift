import DomainKit
import Foundation
import NetworkingKit

/// Every endpoint of Meridian's HTTP API, defined once: the server registers its routes from these values and
/// every client (tracker, admin, tests) sends requests with them through NetworkingKit's `NetworkClient`.
///
/// Errors use `StandardErrorEnvelope` (`{"error":{"code","message"}}`) with an ``APIErrorCode``.
public enum API {
  // MARK: Operations

  /// `GET /health`: liveness and a database check.
  public static let health = Endpoint<Void, NoBody, HealthStatus>(.get, "/health", authentication: .none)
  /// `GET /metrics`: Prometheus text exposition (requests, latencies, fixes ingested, replays seen). The admin token
  /// is the bearer token, unless the server runs with `--metrics public`.
  public static let metrics = Endpoint<Void, NoBody, Data>(.get, "/metrics", body: .none, response: .raw)

  // MARK: Authentication

  /// `POST /v1/auth/otp/request` → 202: sends a 6-digit code by SMS (valid 5 minutes, 5 attempts).
  public static let requestOTP = Endpoint<Void, OTPRequest, NoContent>(
    .post, "/v1/auth/otp/request", body: .json(), response: .empty, authentication: .none)
  /// `POST /v1/auth/otp/verify` → a session; creates the account on first sign-in (`isNew`).
  public static let verifyOTP = Endpoint<Void, OTPVerification, AuthSession>(
    .post, "/v1/auth/otp/verify", authentication: .none)
  /// `POST /v1/auth/register` → 201 with a session for a new email account.
  public static let register = Endpoint<Void, EmailCredentials, AuthSession>(
    .post, "/v1/auth/register", authentication: .none)
  /// `POST /v1/auth/login` → a session.
  public static let login = Endpoint<Void, EmailCredentials, AuthSession>(
    .post, "/v1/auth/login", authentication: .none)
  /// `POST /v1/auth/logout` → 204: revokes the token used.
  public static let logout = Endpoint<Void, NoBody, NoContent>(
    .post, "/v1/auth/logout", body: .none, response: .empty)

  // MARK: Users and profiles

  /// `GET /v1/me`.
  public static let me = Endpoint<Void, NoBody, Me>(.get, "/v1/me")
  /// `PATCH /v1/me/profile` → the updated profile.
  public static let updateProfile = Endpoint<Void, ProfileUpdate, Profile>(.patch, "/v1/me/profile")
  /// `GET /v1/users/{id}/profile`: only the fields the caller may see.
  public static let userProfile = Endpoint<UserRef, NoBody, Profile>(.get, "/v1/users/\(\.id, "id")/profile")
  /// `GET /v1/users/search?q=`: by name or phone.
  public static let searchUsers = Endpoint<UserSearchQuery, NoBody, UserSearchResult>(
    .get, "/v1/users/search", query: { $0.queryItems })

  // MARK: Groups

  /// `GET /v1/groups`.
  public static let groups = Endpoint<Void, NoBody, GroupList>(.get, "/v1/groups")
  /// `POST /v1/groups` → 201 with the custom group.
  public static let createGroup = Endpoint<Void, NewGroup, Group>(.post, "/v1/groups")
  /// `PATCH /v1/groups/{id}`: rename (custom groups only) or change visibility.
  public static let updateGroup = Endpoint<GroupRef, GroupUpdate, Group>(.patch, "/v1/groups/\(\.id, "id")")
  /// `DELETE /v1/groups/{id}` → 204 (custom groups only).
  public static let deleteGroup = Endpoint<GroupRef, NoBody, NoContent>(
    .delete, "/v1/groups/\(\.id, "id")", body: .none, response: .empty)
  /// `PUT /v1/groups/{id}/members/{userId}` → the group.
  public static let addMember = Endpoint<GroupMemberRef, NoBody, Group>(
    .put, "/v1/groups/\(\.groupID, "id")/members/\(\.userID, "userId")")
  /// `DELETE /v1/groups/{id}/members/{userId}` → the group.
  public static let removeMember = Endpoint<GroupMemberRef, NoBody, Group>(
    .delete, "/v1/groups/\(\.groupID, "id")/members/\(\.userID, "userId")")

  // MARK: Sharing

  /// `POST /v1/sharing/pause` → the sharing state: nobody sees the location.
  public static let pauseSharing = Endpoint<Void, NoBody, SharingState>(.post, "/v1/sharing/pause")
  /// `POST /v1/sharing/resume` → the sharing state: shared again, without expiry.
  public static let resumeSharing = Endpoint<Void, NoBody, SharingState>(.post, "/v1/sharing/resume")
  /// `POST /v1/sharing/until` → the sharing state: shared until an instant.
  public static let shareUntil = Endpoint<Void, SharingUntil, SharingState>(.post, "/v1/sharing/until")
  /// `DELETE /v1/sharing/until/{id}` → the sharing state: the group sees the location without a deadline again.
  public static let clearGroupUntil = Endpoint<GroupRef, NoBody, SharingState>(
    .delete, "/v1/sharing/until/\(\.id, "id")")
  /// `GET /v1/sharing/visible`: the people whose location the caller may see now (what `watch` subscribes to).
  public static let visibleUsers = Endpoint<Void, NoBody, VisibleUsers>(.get, "/v1/sharing/visible")

  // MARK: Locations and history

  /// `POST /v1/fixes` → `{accepted, duplicates}` after a durable commit. Idempotent by device + timestamp;
  /// an `Idempotency-Key` replay returns the first answer. `Content-Encoding: gzip` accepted.
  public static let postFixes = Endpoint<Void, FixBatch, FixReceipt>(.post, "/v1/fixes", idempotency: .key)
  /// `GET /v1/users/{id}/location`: the last known fix, if the caller may see it.
  public static let userLocation = Endpoint<UserRef, NoBody, UserLocation>(
    .get, "/v1/users/\(\.id, "id")/location")
  /// `GET /v1/history`: the caller's fixes, filtered and paged (newest first).
  public static let history = Endpoint<HistoryQuery, NoBody, HistoryPage>(
    .get, "/v1/history", query: { $0.queryItems })
  /// `DELETE /v1/history`: deletes the caller's fixes the filters select (all of them without filters).
  public static let deleteHistory = Endpoint<HistoryQuery, NoBody, HistoryDeletion>(
    .delete, "/v1/history", query: { $0.queryItems })
  /// `GET /v1/history/clusters`: count and centroid per geohash cell.
  public static let historyClusters = Endpoint<ClusterQuery, NoBody, HistoryClusters>(
    .get, "/v1/history/clusters", query: { $0.queryItems })
  /// `GET /v1/history/map`: the caller's history in a view at a zoom, as simplified tracks or counted cells.
  public static let historyMap = Endpoint<HistoryMapQuery, NoBody, HistoryMap>(
    .get, "/v1/history/map", query: { $0.queryItems })

  /// Every endpoint, for route tables and the OpenAPI check.
  public static let all: [EndpointDescriptor] =
    [
      health.descriptor, metrics.descriptor, requestOTP.descriptor, verifyOTP.descriptor, register.descriptor,
      login.descriptor,
      logout.descriptor, me.descriptor, updateProfile.descriptor, userProfile.descriptor, searchUsers.descriptor,
      groups.descriptor, createGroup.descriptor, updateGroup.descriptor, deleteGroup.descriptor, addMember.descriptor,
      removeMember.descriptor, pauseSharing.descriptor, resumeSharing.descriptor, shareUntil.descriptor,
      clearGroupUntil.descriptor,
      visibleUsers.descriptor,
      postFixes.descriptor, userLocation.descriptor, history.descriptor, deleteHistory.descriptor,
      historyClusters.descriptor, historyMap.descriptor, historyVisits.descriptor, historyExport.descriptor,
      venues.descriptor, venue.descriptor, venuePromotions.descriptor, redeemPromotion.descriptor,
      promotionQR.descriptor, advertiserVenues.descriptor, advertiserPromotions.descriptor,
      createAdvertisedPromotion.descriptor, updateAdvertisedPromotion.descriptor,
      setAdvertisedPromotionState.descriptor, advertisedPromotionAudience.descriptor,
      advertisedPromotionStats.descriptor, claimVenue.descriptor, venueClaims.descriptor,
      ownTracksPublish.descriptor, osmAndReport.descriptor, osmAndPost.descriptor, overlandBatch.descriptor,
      gpsLoggerReport.descriptor, gpsLoggerPost.descriptor, devices.descriptor,
      enableOsmAnd.descriptor, disableOsmAnd.descriptor, issueMQTTCredentials.descriptor,
      revokeMQTTCredentials.descriptor,
      adminStats.descriptor, adminUsers.descriptor, adminUser.descriptor, adminDisableUser.descriptor,
      adminEnableUser.descriptor, adminDeleteUser.descriptor, adminRevokeUserTokens.descriptor, adminTokens.descriptor,
      adminRevokeToken.descriptor, adminUserGroups.descriptor, adminVenuePromotions.descriptor,
      adminPromotionStatistics.descriptor, adminPromotions.descriptor,
      polls.descriptor, createPoll.descriptor, poll.descriptor, updatePoll.descriptor, deletePoll.descriptor,
      vote.descriptor, pollComments.descriptor,
      addPollComment.descriptor, deletePollComment.descriptor, hidePollComment.descriptor, coupons.descriptor,
      purchaseCoupon.descriptor, myCoupons.descriptor, myPoints.descriptor, uploadBlob.descriptor, blob.descriptor,
      places.descriptor, place.descriptor, placeChildren.descriptor, placeReviews.descriptor, saveReview.descriptor,
      deleteReview.descriptor, favourites.descriptor, addFavourite.descriptor, removeFavourite.descriptor,
      news.descriptor,
    ] + applicantEndpoints  // ApplicantAPI.swift
    + geofenceEndpoints  // GeofenceAPI.swift
    + proximityEndpoints  // ProximityAPI.swift
    + webhookEndpoints  // WebhookAPI.swift
    + historyGeoEndpoints  // HistoryGeoAPI.swift
    + historyImportJobEndpoints  // HistoryImportJobAPI.swift
    + shareLinkEndpoints  // ShareLinkAPI.swift
    + accountSettingsEndpoints  // AccountSettingsAPI.swift
    + singleSignOnEndpoints  // SingleSignOnAPI.swift
    + privacyEndpoints  // PrivacyAPI.swift
    + stayEndpoints  // StayAPI.swift
}

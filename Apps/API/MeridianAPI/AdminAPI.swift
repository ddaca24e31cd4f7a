import DomainKit
import Foundation
import NetworkingKit

/// The admin API (`/v1/admin/…`), what `meridian-admin --server URL --token T` uses where the database is not
/// local. Every endpoint takes `Authorization: Bearer <admin token>` (the server's `MERIDIAN_ADMIN_TOKEN`); users'
/// tokens are refused with 401 `token_invalid`. Users are named by id, email address or phone number.
extension API {
  /// `GET /v1/admin/stats?days=`: counts, fixes per UTC day, database size, live connections and ingest rate.
  public static let adminStats = Endpoint<AdminStatsQuery, NoBody, DatabaseStatistics>(
    .get, "/v1/admin/stats", query: { $0.queryItems })
  /// `GET /v1/admin/users?limit=&offset=`: accounts, oldest first.
  public static let adminUsers = Endpoint<AdminUsersQuery, NoBody, AdminUserList>(
    .get, "/v1/admin/users", query: { $0.queryItems })
  /// `GET /v1/admin/users/{id}`: one account with devices, usable tokens and groups.
  public static let adminUser = Endpoint<AdminUserRef, NoBody, UserDetail>(.get, "/v1/admin/users/\(\.user, "id")")
  /// `POST /v1/admin/users/{id}/disable`: sign-in off; the user's tokens stop working and live sockets close.
  public static let adminDisableUser = Endpoint<AdminUserRef, NoBody, AdminUserState>(
    .post, "/v1/admin/users/\(\.user, "id")/disable")
  /// `POST /v1/admin/users/{id}/enable`: sign-in on again.
  public static let adminEnableUser = Endpoint<AdminUserRef, NoBody, AdminUserState>(
    .post, "/v1/admin/users/\(\.user, "id")/enable")
  /// `DELETE /v1/admin/users/{id}?dryRun=`: every row of the user; answers the rows per table.
  public static let adminDeleteUser = Endpoint<AdminUserDeletionQuery, NoBody, AdminUserDeletion>(
    .delete, "/v1/admin/users/\(\.user, "id")", query: { $0.queryItems })
  /// `POST /v1/admin/users/{id}/tokens/revoke`: revokes every usable token of the user.
  public static let adminRevokeUserTokens = Endpoint<AdminUserRef, NoBody, AdminTokenRevocation>(
    .post, "/v1/admin/users/\(\.user, "id")/tokens/revoke")
  /// `GET /v1/admin/tokens?user=&all=`: tokens by the first 12 hex characters of their SHA-256, newest first.
  public static let adminTokens = Endpoint<AdminTokensQuery, NoBody, AdminTokenList>(
    .get, "/v1/admin/tokens", query: { $0.queryItems })
  /// `POST /v1/admin/tokens/{id}/revoke`: revokes the one usable token whose hash starts with `id` (≥ 8 hex).
  public static let adminRevokeToken = Endpoint<AdminTokenRef, NoBody, AdminTokenRevocation>(
    .post, "/v1/admin/tokens/\(\.id, "id")/revoke")
  /// `GET /v1/admin/users/{id}/groups`: the user's groups with members and visibility.
  public static let adminUserGroups = Endpoint<AdminUserRef, NoBody, AdminGroupList>(
    .get, "/v1/admin/users/\(\.user, "id")/groups")
  /// `GET /v1/admin/venues/{id}/promotions`: every promotion of the venue, running or not, and the venue's time zone.
  public static let adminVenuePromotions = Endpoint<VenueRef, NoBody, AdminPromotionList>(
    .get, "/v1/admin/venues/\(\.id, "id")/promotions")
  /// `GET /v1/admin/promotions?venue=&advertiser=&state=&limit=&offset=`: a page of every venue's promotions (by
  /// venue, then id), each with its state and whether it runs now.
  public static let adminPromotions = Endpoint<AdminPromotionQuery, NoBody, AdminPromotionPage>(
    .get, "/v1/admin/promotions", query: { $0.queryItems })
  /// `GET /v1/admin/venues/{id}/promotions/stats`: shown, redeemed and the eligible audience, per promotion.
  public static let adminPromotionStatistics = Endpoint<VenueRef, NoBody, VenuePromotionStatistics>(
    .get, "/v1/admin/venues/\(\.id, "id")/promotions/stats")

}

// MARK: Parameters

/// `?days=` of `GET /v1/admin/stats` (1…366, default 7).
public struct AdminStatsQuery: RouteParameters, Hashable {
  /// Days of fixes per day.
  public var days: Int
  /// A query.
  public init(days: Int = 7) { self.days = days }
  /// Reads `days`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    let days = try query.int64("days") ?? 7
    guard (1...366).contains(days) else { throw .invalidRequest("'days' must be 1…366.") }
    self.days = Int(days)
  }
  var queryItems: [QueryItem] { [QueryItem("days", days)] }
}

/// `?limit=&offset=` of `GET /v1/admin/users` (limit 1…1000, default 100).
public struct AdminUsersQuery: RouteParameters, Hashable {
  /// At most this many users.
  public var limit: Int
  /// Users skipped.
  public var offset: Int
  /// A page.
  public init(limit: Int = 100, offset: Int = 0) {
    self.limit = limit
    self.offset = offset
  }
  /// Reads `limit` and `offset`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    let limit = try query.int64("limit") ?? 100
    let offset = try query.int64("offset") ?? 0
    guard (1...1000).contains(limit), offset >= 0, offset <= Int64(Int32.max) else {
      throw .invalidRequest("'limit' must be 1…1000 and 'offset' not negative.")
    }
    self.limit = Int(limit)
    self.offset = Int(offset)
  }
  var queryItems: [QueryItem] { [QueryItem("limit", limit), QueryItem("offset", offset)] }
}

/// `?venue=&advertiser=&state=&limit=&offset=` of `GET /v1/admin/promotions` (limit 1…1000, default 100).
public struct AdminPromotionQuery: RouteParameters, Hashable {
  /// Only this venue's.
  public var venue: PlaceID?
  /// Only those of the venues this user (id, email address or phone number) advertises for.
  public var advertiser: String?
  /// Only those in this state.
  public var state: PromotionState?
  /// At most this many.
  public var limit: Int
  /// Skipped first.
  public var offset: Int

  /// A page.
  public init(
    venue: PlaceID? = nil, advertiser: String? = nil, state: PromotionState? = nil, limit: Int = 100, offset: Int = 0
  ) {
    self.venue = venue
    self.advertiser = advertiser
    self.state = state
    self.limit = limit
    self.offset = offset
  }

  /// Reads `venue`, `advertiser`, `state`, `limit` and `offset`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    let page = try AdminUsersQuery(path: path, query: query)
    venue = query.string("venue").map { PlaceID($0) }
    advertiser = query.string("advertiser")
    if let text = query.string("state") {
      guard let state = PromotionState(rawValue: text) else {
        throw .invalidRequest("'state' must be running, paused or ended, not '\(echo(text))'.")
      }
      self.state = state
    }
    limit = page.limit
    offset = page.offset
  }

  var queryItems: [QueryItem] {
    var items = [QueryItem("limit", limit), QueryItem("offset", offset)]
    if let venue { items.append(QueryItem("venue", venue.rawValue)) }
    if let advertiser { items.append(QueryItem("advertiser", advertiser)) }
    if let state { items.append(QueryItem("state", state.rawValue)) }
    return items
  }
}

/// A user in an admin path, named by id, email address or phone number: `/v1/admin/users/{id}`.
public struct AdminUserRef: RouteParameters, Hashable {
  /// The id, email address or phone number.
  public var user: String
  /// A reference to `user`.
  public init(user: String) { self.user = user }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    user = try path.required("id")
  }
}

/// `DELETE /v1/admin/users/{id}?dryRun=true`.
public struct AdminUserDeletionQuery: RouteParameters, Hashable {
  /// The id, email address or phone number.
  public var user: String
  /// Only count.
  public var dryRun: Bool
  /// A deletion of `user`.
  public init(user: String, dryRun: Bool = false) {
    self.user = user
    self.dryRun = dryRun
  }
  /// Reads `{id}` and `dryRun`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    user = try path.required("id")
    dryRun = try query.flag("dryRun")
  }
  var queryItems: [QueryItem] { dryRun ? [QueryItem("dryRun", "true")] : [] }
}

/// `?user=&all=` of `GET /v1/admin/tokens`.
public struct AdminTokensQuery: RouteParameters, Hashable {
  /// Only this user's tokens (id, email address or phone number).
  public var user: String?
  /// Revoked and expired tokens too.
  public var all: Bool
  /// A query.
  public init(user: String? = nil, all: Bool = false) {
    self.user = user
    self.all = all
  }
  /// Reads `user` and `all`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    user = query.string("user")
    all = try query.flag("all")
  }
  var queryItems: [QueryItem] { [QueryItem("user", user)] + (all ? [QueryItem("all", "true")] : []) }
}

/// A token in an admin path by the first hex characters of its SHA-256: `/v1/admin/tokens/{id}/revoke`.
public struct AdminTokenRef: RouteParameters, Hashable {
  /// At least 8 hexadecimal characters of the token's hash (what `GET /v1/admin/tokens` shows).
  public var id: String
  /// A reference to `id`.
  public init(id: String) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = try path.required("id")
  }
}

extension [String: [String]] {
  /// The query item `name` as `true`/`false` (absent: false).
  func flag(_ name: String) throws(APIError) -> Bool {
    switch string(name)?.lowercased() {
    case nil, "false", "0": return false
    case "true", "1": return true
    case let other?: throw .invalidRequest("'\(name)' must be true or false, not '\(echo(other))'.")
    }
  }
}

// MARK: Answers

/// One table's row count (deleted, or that would be deleted).
public struct TableCount: Sendable, Hashable, Codable {
  /// The table.
  public var table: String
  /// Rows.
  public var rows: Int
  /// A count.
  public init(table: String, rows: Int) {
    self.table = table
    self.rows = rows
  }
}

/// A user in listings.
public struct UserSummary: Sendable, Hashable, Codable {
  /// The id.
  public var id: String
  /// Account creation, UTC ms.
  public var createdAt: Int64
  /// Whether sign-in is disabled.
  public var disabled: Bool
  /// The profile's full name.
  public var name: String?
  /// `email:…` and `phone:…`.
  public var credentials: [String]
  /// Registered devices.
  public var devices: Int
  /// Stored fixes.
  public var fixes: Int
  /// The newest fix's time, UTC ms.
  public var lastFix: Int64?

  /// A summary.
  public init(
    id: String, createdAt: Int64, disabled: Bool, name: String?, credentials: [String], devices: Int, fixes: Int,
    lastFix: Int64?
  ) {
    self.id = id
    self.createdAt = createdAt
    self.disabled = disabled
    self.name = name
    self.credentials = credentials
    self.devices = devices
    self.fixes = fixes
    self.lastFix = lastFix
  }
}

/// `GET /v1/admin/users`.
public struct AdminUserList: Sendable, Hashable, Codable {
  /// The page of users, oldest account first.
  public var users: [UserSummary]
  /// A list.
  public init(users: [UserSummary]) { self.users = users }
}

/// A device of a user.
public struct DeviceSummary: Sendable, Hashable, Codable {
  /// The device id.
  public var id: String
  /// When it was registered, UTC ms.
  public var createdAt: Int64
  /// Its stored fixes.
  public var fixes: Int
  /// Its newest fix, UTC ms.
  public var lastFix: Int64?

  /// A summary.
  public init(id: String, createdAt: Int64, fixes: Int, lastFix: Int64?) {
    self.id = id
    self.createdAt = createdAt
    self.fixes = fixes
    self.lastFix = lastFix
  }
}

/// A group in listings.
public struct GroupSummary: Sendable, Hashable, Codable {
  /// The group id.
  public var id: String
  /// family, friends, blacklist or custom.
  public var kind: String
  /// The name.
  public var name: String
  /// Member ids, sorted.
  public var members: [String]
  /// Whether members see the owner's location.
  public var sharesLocation: Bool
  /// Profile fields members see.
  public var fields: [String]

  /// A summary of `group`.
  public init(_ group: Group) {
    id = group.id.rawValue
    kind = group.kind.rawValue
    name = group.name
    members = group.members.map(\.rawValue).sorted()
    sharesLocation = group.visibility.location
    fields = group.visibility.fields.map(\.rawValue).sorted()
  }
}

/// `GET /v1/admin/users/{id}` and `meridian-admin users show`.
public struct UserDetail: Sendable, Hashable, Codable {
  /// The summary.
  public var user: UserSummary
  /// The devices.
  public var devices: [DeviceSummary]
  /// Usable tokens.
  public var activeTokens: Int
  /// The user's groups.
  public var groups: [GroupSummary]

  /// A detail.
  public init(user: UserSummary, devices: [DeviceSummary], activeTokens: Int, groups: [GroupSummary]) {
    self.user = user
    self.devices = devices
    self.activeTokens = activeTokens
    self.groups = groups
  }
}

/// Disabling or enabling a user.
public struct AdminUserState: Sendable, Hashable, Codable {
  /// The user's id.
  public var user: String
  /// Whether sign-in is now disabled.
  public var disabled: Bool
  /// Whether this request changed it.
  public var changed: Bool
  /// A state.
  public init(user: String, disabled: Bool, changed: Bool) {
    self.user = user
    self.disabled = disabled
    self.changed = changed
  }
}

/// Deleting a user: the rows per table.
public struct AdminUserDeletion: Sendable, Hashable, Codable {
  /// The user's id.
  public var user: String
  /// Whether nothing was deleted (only counted).
  public var dryRun: Bool
  /// Rows per table (tables without rows left out).
  public var tables: [TableCount]
  /// All rows.
  public var total: Int
  /// A deletion report.
  public init(user: String, dryRun: Bool, tables: [TableCount]) {
    self.user = user
    self.dryRun = dryRun
    self.tables = tables
    total = tables.reduce(0) { $0 + $1.rows }
  }
}

/// A token in listings; never the secret, only the first characters of its SHA-256.
public struct TokenSummary: Sendable, Hashable, Codable {
  /// Characters of the hash shown as the token's id.
  public static let idLength = 12
  /// The first characters of the token's SHA-256 (what `tokens revoke` takes).
  public var id: String
  /// The owner.
  public var user: String
  /// Issued, UTC ms.
  public var createdAt: Int64
  /// Expiry, UTC ms.
  public var expiresAt: Int64
  /// Revocation, UTC ms.
  public var revokedAt: Int64?
  /// active, expired or revoked.
  public var state: String

  /// A summary.
  public init(id: String, user: String, createdAt: Int64, expiresAt: Int64, revokedAt: Int64?, state: String) {
    self.id = id
    self.user = user
    self.createdAt = createdAt
    self.expiresAt = expiresAt
    self.revokedAt = revokedAt
    self.state = state
  }
}

/// `GET /v1/admin/tokens`.
public struct AdminTokenList: Sendable, Hashable, Codable {
  /// Tokens, newest first.
  public var tokens: [TokenSummary]
  /// A list.
  public init(tokens: [TokenSummary]) { self.tokens = tokens }
}

/// Revoking tokens.
public struct AdminTokenRevocation: Sendable, Hashable, Codable {
  /// Tokens revoked.
  public var revoked: Int
  /// A report.
  public init(revoked: Int) { self.revoked = revoked }
}

/// Fixes of one UTC day.
public struct DayCount: Sendable, Hashable, Codable {
  /// `YYYY-MM-DD`.
  public var day: String
  /// Fixes with timestamps on that day.
  public var fixes: Int
  /// A count.
  public init(day: String, fixes: Int) {
    self.day = day
    self.fixes = fixes
  }
}

/// What a running server does now (only `GET /v1/admin/stats` knows it).
public struct LiveStatistics: Sendable, Hashable, Codable {
  /// Open live (WebSocket) connections.
  public var connections: Int
  /// Fixes accepted (stored, not duplicates) during the last ``windowSeconds``.
  public var fixesAccepted: Int
  /// The window of ``fixesAccepted``, seconds.
  public var windowSeconds: Int
  /// ``fixesAccepted`` / ``windowSeconds``.
  public var fixesPerSecond: Double
  /// Live figures.
  public init(connections: Int, fixesAccepted: Int, windowSeconds: Int) {
    self.connections = connections
    self.fixesAccepted = fixesAccepted
    self.windowSeconds = windowSeconds
    fixesPerSecond = windowSeconds > 0 ? Double(fixesAccepted) / Double(windowSeconds) : 0
  }
}

/// `GET /v1/admin/stats` and `meridian-admin stats`.
public struct DatabaseStatistics: Sendable, Hashable, Codable {
  /// Accounts.
  public var users: Int
  /// Disabled accounts.
  public var disabledUsers: Int
  /// Devices.
  public var devices: Int
  /// Fixes.
  public var fixes: Int
  /// Usable tokens.
  public var activeTokens: Int
  /// Venues.
  public var venues: Int
  /// Promotions.
  public var promotions: Int
  /// Fixes per day (by fix time) for the last days, oldest first.
  public var fixesPerDay: [DayCount]
  /// The main file's pages.
  public var databaseBytes: Int64
  /// Free pages (what `db vacuum` gives back).
  public var freeBytes: Int64
  /// The write-ahead log.
  public var walBytes: Int64
  /// Live connections and ingest rate: only from a running server.
  public var live: LiveStatistics?

  /// Statistics.
  public init(
    users: Int, disabledUsers: Int, devices: Int, fixes: Int, activeTokens: Int, venues: Int, promotions: Int,
    fixesPerDay: [DayCount], databaseBytes: Int64, freeBytes: Int64, walBytes: Int64, live: LiveStatistics? = nil
  ) {
    self.users = users
    self.disabledUsers = disabledUsers
    self.devices = devices
    self.fixes = fixes
    self.activeTokens = activeTokens
    self.venues = venues
    self.promotions = promotions
    self.fixesPerDay = fixesPerDay
    self.databaseBytes = databaseBytes
    self.freeBytes = freeBytes
    self.walBytes = walBytes
    self.live = live
  }
}

/// `GET /v1/admin/users/{id}/groups`.
public struct AdminGroupList: Sendable, Hashable, Codable {
  /// The groups.
  public var groups: [GroupSummary]
  /// A list.
  public init(groups: [GroupSummary]) { self.groups = groups }
}

/// `GET /v1/admin/venues/{id}/promotions`.
public struct AdminPromotionList: Sendable, Hashable, Codable {
  /// The venue.
  public var venueId: PlaceID
  /// Its IANA time zone (validity windows are in it).
  public var timeZone: String
  /// Every promotion, by id.
  public var promotions: [Promotion]
  /// A list.
  public init(venueId: PlaceID, timeZone: String, promotions: [Promotion]) {
    self.venueId = venueId
    self.timeZone = timeZone
    self.promotions = promotions
  }
}

/// `GET /v1/admin/promotions`. Wire name: `items`.
public struct AdminPromotionPage: Sendable, Hashable, Codable {
  /// The promotions, by venue, then id.
  public var items: [AdminPromotionItem]
  /// A page.
  public init(items: [AdminPromotionItem]) { self.items = items }
}

/// A promotion as operators list it: its advertiser's settings, and whether it runs now (its state is running and
/// the time lies in its validity and daily window, in its venue's time zone). Wire names: `promotion`, `state`,
/// `eligibility`, `running`.
public struct AdminPromotionItem: Sendable, Hashable, Codable {
  /// The promotion.
  public var promotion: Promotion
  /// Its state.
  public var state: PromotionState
  /// Its special-audience rule.
  public var eligibility: PromotionEligibility
  /// Whether it runs now.
  public var running: Bool

  /// An item.
  public init(_ advertised: AdvertisedPromotion, running: Bool) {
    promotion = advertised.promotion
    state = advertised.state
    eligibility = advertised.eligibility
    self.running = running
  }
}

/// How a venue's promotions do (`GET /v1/admin/venues/{id}/promotions/stats`, `meridian-admin promotions stats`).
public struct VenuePromotionStatistics: Sendable, Hashable, Codable {
  /// The venue.
  public var venue: String
  /// Promotions stored.
  public var promotions: Int
  /// Of those, running now (their state is running, and the time lies in their validity and daily window).
  public var running: Int
  /// Of those, special (personalized).
  public var special: Int
  /// Users the running special promotions would be offered to now, each by its own audience rule, each user once.
  public var eligible: Int
  /// Users offered a promotion, each promotion's users counted once.
  public var shown: Int
  /// Redemptions.
  public var redeemed: Int
  /// Per promotion.
  public var byPromotion: [PromotionFigures]

  /// Statistics.
  public init(
    venue: String, promotions: Int, running: Int, special: Int, eligible: Int, shown: Int, redeemed: Int,
    byPromotion: [PromotionFigures]
  ) {
    self.venue = venue
    self.promotions = promotions
    self.running = running
    self.special = special
    self.eligible = eligible
    self.shown = shown
    self.redeemed = redeemed
    self.byPromotion = byPromotion
  }
}

/// One promotion's figures.
public struct PromotionFigures: Sendable, Hashable, Codable {
  /// The promotion.
  public var id: String
  /// Its name.
  public var name: String
  /// general or special.
  public var audience: String
  /// Whether it runs now.
  public var running: Bool
  /// Users it was offered to.
  public var shownUsers: Int
  /// Times it was offered, all users together.
  public var shownTimes: Int
  /// Users who redeemed it.
  public var redeemed: Int

  /// Figures.
  public init(
    id: String, name: String, audience: String, running: Bool, shownUsers: Int, shownTimes: Int, redeemed: Int
  ) {
    self.id = id
    self.name = name
    self.audience = audience
    self.running = running
    self.shownUsers = shownUsers
    self.shownTimes = shownTimes
    self.redeemed = redeemed
  }
}

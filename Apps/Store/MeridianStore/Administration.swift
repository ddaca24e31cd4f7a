import DomainKit
import Foundation
import MeridianAPI

/// The operators' operations over a ``MeridianStore``, shared by the admin API (``AdminFeatures``) and
/// `meridian-admin`'s local mode, so both name users, check input and word failures the same way.
///
/// Users are named by id, email address or phone number. Failures are ``APIError``s: 404 `not_found` for a user or
/// token that does not exist, 400 `invalid_request` for bad input.
public struct Administration: Sendable {
  /// The store.
  public let store: any MeridianStore
  /// The current time, UTC ms (token expiry, statistics' days).
  public let now: @Sendable () -> Int64
  /// Where the server keeps images: a deleted user's avatar and poll images go with them when nothing else refers
  /// to them (nil: left where they are).
  public let blobs: (any BlobStore)?
  /// How long an image uploaded (again) is kept though nothing refers to it, ms (see ``BlobGracePeriod``).
  public let blobGracePeriod: Int64

  /// Operations on `store`, deleting unreferenced images from `blobs`.
  public init(
    store: any MeridianStore, blobs: (any BlobStore)? = nil, blobGracePeriod: Int64 = BlobGracePeriod.default,
    now: @escaping @Sendable () -> Int64 = Timestamp.systemClock
  ) {
    self.store = store
    self.blobs = blobs
    self.blobGracePeriod = blobGracePeriod
    self.now = now
  }

  /// The user named `text` (id, email address or phone number).
  public func user(named text: String) async throws -> UserID {
    guard let id = try await store.findUser(text) else {
      throw APIError.notFound(
        "No user \(QuotedValue.quote("\(text)")) (looked for an id, an email address and a phone number).")
    }
    return id
  }

  /// Counts, fixes per UTC day for the last `days` days (1…366) and the database's size.
  public func statistics(days: Int) async throws -> DatabaseStatistics {
    guard (1...366).contains(days) else { throw APIError.invalidRequest("days must be 1…366.") }
    return try await store.statistics(now: now(), days: days)
  }

  /// Accounts, oldest first.
  public func users(limit: Int, offset: Int) async throws -> [UserSummary] {
    guard limit > 0, offset >= 0 else {
      throw APIError.invalidRequest("limit must be positive and offset not negative.")
    }
    return try await store.userSummaries(limit: limit, offset: offset)
  }

  /// One account: credentials, devices, usable tokens, groups.
  public func user(_ text: String) async throws -> UserDetail {
    let id = try await user(named: text)
    guard let detail = try await store.userDetail(id, now: now()) else {
      throw APIError.notFound("No user \(QuotedValue.quote("\(text)")).")
    }
    return detail
  }

  /// Disables or enables sign-in; a disabled user's tokens stop working at once.
  public func setDisabled(_ text: String, _ disabled: Bool) async throws -> AdminUserState {
    let id = try await user(named: text)
    let changed = try await store.setDisabled(id, disabled)
    return AdminUserState(user: id.rawValue, disabled: disabled, changed: changed)
  }

  /// Deletes every row of the user (see ``AdministrationStore/deleteUser(_:dryRun:batchSize:)``), then the images
  /// of their avatar and polls that nothing else refers to any more (and not uploaded again within the grace period);
  /// `dryRun` counts.
  public func deleteUser(_ text: String, dryRun: Bool) async throws -> AdminUserDeletion {
    let id = try await user(named: text)
    var referenced: [String] = []
    if !dryRun, blobs != nil { referenced = try await store.blobReferences(of: id) }
    let tables = try await store.deleteUser(id, dryRun: dryRun, batchSize: 1000)
    if let blobs, !referenced.isEmpty {
      _ = try await blobs.deleteUnreferenced(referenced, in: store, now: now(), gracePeriod: blobGracePeriod)
    }
    return AdminUserDeletion(user: id.rawValue, dryRun: dryRun, tables: tables)
  }

  /// Tokens, newest first: everyone's or one user's; only usable ones unless `includeInactive`.
  public func tokens(user text: String?, includeInactive: Bool) async throws -> [TokenSummary] {
    var id: UserID?
    if let text { id = try await user(named: text) }
    return try await store.tokens(user: id, includeInactive: includeInactive, now: now())
  }

  /// Revokes the one usable token whose hash starts with `prefix` (at least 8 hexadecimal characters, as
  /// ``tokens(user:includeInactive:)`` shows them).
  public func revokeToken(prefix: String) async throws -> AdminTokenRevocation {
    try await revokeTokenReturningHash(prefix: prefix).revocation
  }

  /// ``revokeToken(prefix:)``, also answering which token it was (the server closes the sockets it opened).
  public func revokeTokenReturningHash(prefix: String) async throws -> (revocation: AdminTokenRevocation, hash: String)
  {
    guard prefix.count >= 8, prefix.allSatisfy(\.isHexDigit) else {
      throw APIError.invalidRequest(
        "Give at least 8 hexadecimal characters of the token id (as `tokens list` shows), not \(QuotedValue.quote("\(prefix)"))."
      )
    }
    let hashes = try await store.tokenHashes(prefix: prefix, now: now())
    guard let hash = hashes.first else {
      throw APIError.notFound("No usable token starts with \(QuotedValue.quote("\(prefix)")).")
    }
    guard hashes.count == 1 else {
      throw APIError.invalidRequest(
        "\(hashes.count) tokens start with \(QuotedValue.quote("\(prefix)")); give more characters.")
    }
    try await store.revokeToken(hash: hash)
    return (AdminTokenRevocation(revoked: 1), hash)
  }

  /// Revokes every usable token of the user.
  public func revokeTokens(user text: String) async throws -> AdminTokenRevocation {
    AdminTokenRevocation(revoked: try await store.revokeTokens(user: try await user(named: text), now: now()))
  }

  /// The user's groups with members and visibility.
  public func groups(user text: String) async throws -> [GroupSummary] {
    try await store.groups(owner: try await user(named: text)).map(GroupSummary.init)
  }

  /// The venue `id` as a DomainKit place (its location and time zone drive the promotion rules).
  public func place(venue id: String) async throws -> Place {
    guard let venue = try await store.venue(PlaceID(id), language: nil) else {
      throw APIError.notFound(
        "There is no venue \(QuotedValue.quote("\(id)")); import it with `meridian-admin venues import`.")
    }
    do {
      return try venue.place()
    } catch {
      throw APIError(
        status: 500, code: .internal, message: "Venue \(QuotedValue.quote("\(id)")) is stored wrongly: \(error)")
    }
  }

  /// Every promotion of the venue, running or not, with the venue's time zone.
  public func promotions(venue id: String) async throws -> AdminPromotionList {
    let place = try await place(venue: id)
    return AdminPromotionList(
      venueId: place.id, timeZone: place.resolvedTimeZone.identifier,
      promotions: try await store.promotions(venue: place.id))
  }

  /// A page of every venue's promotions matching `query` (by venue, then id), each with its state and whether it
  /// runs now by the venue's rule (``PromotionAvailability``).
  /// - Throws: 404 for an unknown venue or advertiser.
  public func promotionPage(_ query: AdminPromotionQuery) async throws -> AdminPromotionPage {
    var filter = PromotionFilter(venue: query.venue, state: query.state)
    if let venue = query.venue { _ = try await place(venue: venue.rawValue) }
    if let advertiser = query.advertiser { filter.advertiser = try await user(named: advertiser) }
    let page = try await store.promotionPage(filter, limit: query.limit, offset: query.offset)
    let time = now()
    var zones: [PlaceID: TimeZone] = [:]
    var items: [AdminPromotionItem] = []
    for item in page {
      let venue = item.promotion.venueID
      if zones[venue] == nil { zones[venue] = try await place(venue: venue.rawValue).resolvedTimeZone }
      let running = PromotionAvailability.isRunning(
        item.promotion, state: item.state, at: time, timeZone: zones[venue] ?? .gmt)
      items.append(AdminPromotionItem(item, running: running))
    }
    return AdminPromotionPage(items: items)
  }

  /// How the venue's promotions do: running, shown (offered by `GET /v1/venues/{id}/promotions`), redeemed, and
  /// how many users the special ones would be offered to now — by the rules of ``PromotionAvailability``, as the
  /// venue's listing applies them.
  public func promotionStatistics(venue id: String) async throws -> VenuePromotionStatistics {
    let place = try await place(venue: id)
    let availability = try await PromotionAvailability(venue: place, store: store, now: now())
    let promotions = availability.promotions
    let activity = Dictionary(
      try await store.promotionActivity(venue: place.id).map { ($0.promotionID, $0) },
      uniquingKeysWith: { first, _ in first })
    let figures = promotions.map { promotion in
      let done = activity[promotion.id]
      return PromotionFigures(
        id: promotion.id.rawValue, name: promotion.name, audience: promotion.audience.rawValue,
        running: availability.isRunning(promotion), shownUsers: done?.offeredUsers ?? 0,
        shownTimes: done?.offers ?? 0, redeemed: done?.redeemed ?? 0)
    }
    return VenuePromotionStatistics(
      venue: place.id.rawValue, promotions: promotions.count, running: figures.filter(\.running).count,
      special: promotions.filter { $0.audience == .special }.count,
      eligible: try await availability.eligibleCount(),
      shown: figures.reduce(0) { $0 + $1.shownUsers },
      redeemed: figures.reduce(0) { $0 + $1.redeemed }, byPromotion: figures)
  }
}

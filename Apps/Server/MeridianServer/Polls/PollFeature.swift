import DomainKit
import Foundation
import HTTPTypes
import Hummingbird
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NIOCore
import NetworkingKit
import RealtimeKit

/// Polls with rewards: the feed, posting (with two images from the blob store), voting, comments, points and
/// coupons; and the blob store's upload and download routes.
struct PollFeature: Sendable {
  let environment: ServerEnvironment
  let settings: PollSettings
  /// Where images are kept.
  let blobs: any BlobStore
  /// Polls per account per hour.
  let pollLimiter: RateLimiter
  /// Comments per account per minute.
  let commentLimiter: RateLimiter
  /// Image uploads per account per hour.
  let blobLimiter: RateLimiter
  /// The `poll:<id>` channel's publisher, when the server has a live hub.
  let live: PollLive?
  var store: any MeridianStore { environment.store }

  init(environment: ServerEnvironment, configuration: ServerConfiguration, hub: RealtimeHub? = nil) {
    self.environment = environment
    self.settings = configuration.polls
    self.blobs = environment.blobs
    // Counted where the other limits are: in memory on SQLite, in the database every node shares on PostgreSQL.
    let shared = environment.store.sharedLimits
    self.pollLimiter = RateLimiter(
      limit: environment.limits.pollsPerAccountPerHour, window: 3_600_000,
      counters: .of(shared, purpose: "polls.account"))
    self.commentLimiter = RateLimiter(
      limit: environment.limits.commentsPerAccountPerMinute, window: 60_000,
      counters: .of(shared, purpose: "comments.account"))
    self.blobLimiter = RateLimiter(
      limit: environment.limits.blobsPerAccountPerHour, window: 3_600_000,
      counters: .of(shared, purpose: "blobs.account"))
    self.live = hub.map { PollLive(hub: $0, store: environment.store) }
  }

  /// Registers the routes of `API.pollEndpoints`.
  func register(on routes: RouteRegistrar) {
    routes.on(API.polls) { call in try await feed(call.parameters, viewer: call.authenticated()) }
    routes.on(API.createPoll, status: .created) { call in try await create(call.body, by: call.authenticated()) }
    routes.on(API.poll) { call in
      let viewer = try call.authenticated()
      guard let poll = try await store.poll(call.parameters.id, viewer: viewer) else { throw Self.pollNotFound }
      return poll
    }
    routes.on(API.updatePoll) { call in try await update(call.parameters.id, call.body, by: call.authenticated()) }
    routes.on(API.deletePoll, status: .noContent) { call in
      try await delete(call.parameters.id, by: call.authenticated())
      return NoContent()
    }
    routes.on(API.vote) { call in
      try await vote(call.parameters.id, choice: call.body.choice, by: call.authenticated())
    }
    routes.on(API.pollComments) { call in
      let parameters = call.parameters
      return try await Self.translating {
        try await store.comments(
          of: parameters.id, viewer: call.authenticated(), cursor: parameters.cursor, limit: parameters.limit)
      }
    }
    routes.on(API.addPollComment, status: .created) { call in
      try await comment(call.body.text, on: call.parameters.id, by: call.authenticated())
    }
    routes.on(API.deletePollComment, status: .noContent) { call in
      let parameters = call.parameters
      guard try await store.deleteComment(parameters.commentID, on: parameters.pollID, by: call.authenticated())
      else {
        throw APIError.notFound("You have no comment with this id on this poll.")
      }
      return NoContent()
    }
    routes.on(API.hidePollComment, status: .noContent) { call in
      let user = try call.authenticated()
      guard
        try await store.setCommentHidden(
          call.parameters.commentID, on: call.parameters.pollID, hidden: call.body.hidden, by: user)
      else { throw APIError.notFound("There is no comment with this id on a poll of yours.") }
      return NoContent()
    }
    routes.on(API.coupons) { _ in CouponCatalog(items: try await store.couponOffers(validAt: environment.now())) }
    routes.on(API.purchaseCoupon, status: .created) { call in
      try await purchase(call.parameters.id, by: call.authenticated(), key: call.idempotency?.key)
    }
    routes.on(API.myCoupons) { call in CouponList(items: try await store.coupons(of: call.authenticated())) }
    routes.on(API.myPoints) { call in try await store.points(of: call.authenticated(), limit: 50) }
    registerBlobRoutes(on: routes)
  }

  static let pollNotFound = APIError.notFound("There is no poll with this id.")

  // MARK: Polls

  func feed(_ parameters: PollFeedParameters, viewer: UserID) async throws -> PollPage {
    let author = parameters.author.map { $0 == "me" ? viewer : UserID($0) }
    let query = PollFeedQuery(
      order: PollFeedQuery.Order(rawValue: parameters.order) ?? .newest, author: author, viewer: viewer,
      cursor: parameters.cursor, limit: parameters.limit)
    return try await Self.translating { try await store.polls(query) }
  }

  func create(_ request: NewPoll, by author: UserID) async throws -> PollSummary {
    let now = environment.now()
    guard request.options.count == 2 else {
      throw Self.invalidPoll("A poll has exactly 2 options, not \(request.options.count).")
    }
    if let closesAt = request.closesAt, closesAt <= now { throw Self.invalidPoll("'closesAt' must be in the future.") }
    let poll: Poll
    do {
      poll = try Poll(
        id: PollID(UUID().uuidString.lowercased()), authorID: author, title: request.title,
        description: request.description ?? "", first: request.options[0], second: request.options[1],
        createdAt: now)
    } catch {
      throw Self.invalidPoll(error.description)
    }
    for (index, option) in poll.options.enumerated() {
      guard let url = option.imageURL, try await blobs.isUploadedImage(url) else {
        throw Self.invalidPoll(
          "'options[\(index)].imageUrl' must be an image uploaded with POST /v1/blobs, referred to as "
            + "/v1/blobs/<hash>.")
      }
    }
    if let wait = await pollLimiter.take(author.rawValue, cost: 1, now: now) {
      throw APIError.rateLimited("Too many polls; try again later.", retryAfterMilliseconds: wait)
    }
    return try await Self.translating {
      try await store.createPoll(poll, closesAt: request.closesAt, reward: settings.rewards.pollPosted, now: now)
    }
  }

  /// The poll `user` wrote: 404 when they can't see it, 403 `not_poll_author` when it is someone else's.
  func ownPoll(_ id: PollID, by user: UserID) async throws -> PollSummary {
    guard let poll = try await store.poll(id, viewer: user) else { throw Self.pollNotFound }
    guard poll.author.id == user else {
      throw APIError(status: 403, code: .notPollAuthor, message: "Only the poll's author may close or delete it.")
    }
    return poll
  }

  /// `{"closed": true}` closes the author's poll now; nothing else can change.
  func update(_ id: PollID, _ update: PollUpdate, by user: UserID) async throws -> PollSummary {
    guard let closed = update.closed else {
      throw APIError.invalidRequest("Send {\"closed\": true} to close the poll.")
    }
    guard closed else { throw APIError.invalidRequest("A closed poll can't reopen; only {\"closed\": true} is taken.") }
    _ = try await ownPoll(id, by: user)
    guard try await store.closePoll(id, now: environment.now()), let poll = try await store.poll(id, viewer: user)
    else { throw Self.pollNotFound }
    return poll
  }

  /// Deletes the author's poll with its ballots and comments, and the images nothing else refers to (unless
  /// uploaded again within the blob store's grace period).
  func delete(_ id: PollID, by user: UserID) async throws {
    _ = try await ownPoll(id, by: user)
    guard let unreferenced = try await store.deletePoll(id) else { throw Self.pollNotFound }
    _ = try await blobs.deleteUnreferenced(
      unreferenced, in: store, now: environment.now(), gracePeriod: environment.blobGracePeriod)
  }

  func vote(_ id: PollID, choice: PollChoice, by user: UserID) async throws -> VoteReceipt {
    let outcome = try await Self.translating {
      try await store.vote(id, user: user, choice: choice, reward: settings.rewards.voted, now: environment.now())
    }
    if outcome.previous != choice { await live?.changed(id) }
    return VoteReceipt(results: outcome.results, myChoice: choice, awarded: outcome.awarded)
  }

  func comment(_ text: String, on poll: PollID, by author: UserID) async throws -> PollCommentView {
    let now = environment.now()
    let comment: PollComment
    do {
      comment = try PollComment(
        id: CommentID(UUID().uuidString.lowercased()), pollID: poll, authorID: author, text: text, createdAt: now)
    } catch {
      throw APIError(status: 422, code: .invalidComment, message: error.description)
    }
    if let wait = await commentLimiter.take(author.rawValue, cost: 1, now: now) {
      throw APIError.rateLimited("Too many comments; wait a minute.", retryAfterMilliseconds: wait)
    }
    return try await Self.translating { try await store.addComment(comment) }
  }

  // MARK: Coupons

  /// Buys a coupon with a fresh redemption code (drawn again in the rare case it is taken). With an
  /// `Idempotency-Key`, a retry returns the first purchase; the key used for another offer is a conflict.
  func purchase(_ offer: CouponID, by user: UserID, key: String?) async throws -> CouponPurchase {
    for _ in 0..<3 {
      do {
        let purchase = try await Self.translating {
          try await store.purchaseCoupon(
            offer, user: user, couponID: CouponID(UUID().uuidString.lowercased()), code: Self.redemptionCode(),
            requestKey: key, now: environment.now())
        }
        guard purchase.coupon.offerID == offer else {
          throw APIError(
            status: 422, code: .idempotencyConflict,
            message: "This Idempotency-Key was already used for a different request; use a new key.")
        }
        return purchase
      } catch PollStoreError.codeTaken {
        continue
      }
    }
    throw APIError(status: 503, code: .unavailable, message: "No free redemption code was found; try again.")
  }

  /// Twelve characters of Crockford's base 32 (no I, L, O, U) in groups of four: `7KQ2-M9XD-4HTR`, 60 random bits.
  static func redemptionCode() -> String {
    let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    var generator = SystemRandomNumberGenerator()
    let characters = (0..<12).map { _ in alphabet[Int(generator.next(upperBound: UInt32(alphabet.count)))] }
    return [0, 4, 8].map { String(characters[$0..<$0 + 4]) }.joined(separator: "-")
  }

  // MARK: Errors

  static func invalidPoll(_ message: String) -> APIError { APIError(status: 422, code: .invalidPoll, message: message) }

  /// Runs `body`, turning the store's refusals into the API's stable errors.
  static func translating<T>(_ body: () async throws -> T) async throws -> T {
    do {
      return try await body()
    } catch let error as PollStoreError {
      switch error {
      case .pollNotFound: throw pollNotFound
      case .pollHidden: throw APIError(status: 409, code: .pollHidden, message: error.description)
      case .pollClosed: throw APIError(status: 409, code: .pollClosed, message: error.description)
      case .commentNotFound, .offerNotFound, .userNotFound: throw APIError.notFound(error.description)
      case .outOfStock: throw APIError(status: 409, code: .outOfStock, message: error.description)
      case .invalidCursor: throw APIError.invalidRequest(error.description)
      case .duplicateID: throw APIError(status: 409, code: .invalidRequest, message: error.description)
      case .codeTaken: throw error
      }
    } catch let error as PointsError {
      switch error {
      case .notEnoughPoints:
        throw APIError(status: 409, code: .insufficientPoints, message: error.description)
      case .offerExpired: throw APIError(status: 409, code: .offerExpired, message: error.description)
      case .invalidAmount: throw APIError.invalidRequest(error.description)
      }
    }
  }
}

// MARK: Blobs

extension PollFeature {
  /// `POST /v1/blobs` (its own body limit, the blob store's, not the JSON routes') and `GET /v1/blobs/{hash}`.
  func registerBlobRoutes(on routes: RouteRegistrar) {
    let blobs = self.blobs
    let maximum = settings.maximumBlobBytes
    let clock = environment.now
    let limiter = blobLimiter
    let limits = RouteRegistrar.BodyLimits(wire: maximum, decompressed: maximum)
    routes.onStream(API.uploadBlob, limits: limits) { call in
      let user = try call.authenticated()
      // Counted before the body is read: an upload over the limit costs no more than its head.
      if let wait = await limiter.take(user.rawValue, cost: 1, now: clock()) {
        throw APIError.rateLimited(
          "At most \(limiter.limit) images an hour; wait \((wait + 999) / 1000) s before uploading another.",
          retryAfterMilliseconds: wait)
      }
      let data = try await call.body.collect()
      guard let kind = BlobKind(sniffing: data) else {
        throw APIError(
          status: 415, code: .unsupportedImage, message: "Send a JPEG, PNG or WebP image (by its first bytes).")
      }
      let hash = try await blobs.putBlob(data, kind: kind, now: clock())
      let receipt = BlobReceipt(hash: hash, url: "/v1/blobs/\(hash)", contentType: kind.contentType, size: data.count)
      return try RouteRegistrar.json(receipt, status: .created, headers: [.location: receipt.url])
    }
    routes.onStream(API.blob) { call in
      let notFound = APIError.notFound("There is no image with this hash.")
      guard let hash = try? call.parameters().hash, BlobKind.isHash(hash) else { throw notFound }
      let etag = "\"\(hash)\""
      var headers: HTTPFields = [.eTag: etag, .cacheControl: "public, max-age=31536000, immutable"]
      // The content never changes under its hash: a client that has it needs no bytes.
      if let match = call.headers[.ifNoneMatch],
        match.split(separator: ",").contains(where: {
          $0.trimmingCharacters(in: .whitespaces) == etag || $0.trimmingCharacters(in: .whitespaces) == "*"
        }), try await blobs.hasBlob(hash)
      {
        return Response(status: .notModified, headers: headers)
      }
      guard let blob = try await blobs.blob(hash) else { throw notFound }
      headers[.contentType] = blob.kind.contentType
      return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: blob.data)))
    }
  }
}

import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: Polls and rewards

  /// `GET /v1/polls?order=newest|most_voted&cursor=&limit=&author=`: a page of polls (10 by default, at most 100),
  /// each with its author's public profile; `author=me` lists the caller's own ("my polls", hidden ones included).
  public static let polls = Endpoint<PollFeedParameters, NoBody, PollPage>(
    .get, "/v1/polls", query: { $0.queryItems })
  /// `POST /v1/polls` → 201 with the poll: a title (1…255 characters), a description (≤ 500) and exactly two
  /// options, each with a caption and an image from `POST /v1/blobs`. The author earns points.
  public static let createPoll = Endpoint<Void, NewPoll, PollSummary>(.post, "/v1/polls")
  /// `GET /v1/polls/{id}`: the poll with its results and the caller's vote.
  public static let poll = Endpoint<PollRef, NoBody, PollSummary>(.get, "/v1/polls/\(\.id, "id")")
  /// `PATCH /v1/polls/{id} {"closed": true}` → the poll, closed now: its author ends the voting early (a closed poll
  /// can't reopen; 400). Someone else's poll is `403 not_poll_author`.
  public static let updatePoll = Endpoint<PollRef, PollUpdate, PollSummary>(.patch, "/v1/polls/\(\.id, "id")")
  /// `DELETE /v1/polls/{id}` → 204: its author deletes it with its votes and comments (and its images when nothing
  /// else uses them). Someone else's poll is `403 not_poll_author`.
  public static let deletePoll = Endpoint<PollRef, NoBody, NoContent>(
    .delete, "/v1/polls/\(\.id, "id")", body: .none, response: .empty)
  /// `POST /v1/polls/{id}/vote {choice}` → the results: one vote per person (changeable until the poll closes);
  /// the first vote in a poll earns points.
  public static let vote = Endpoint<PollRef, PollVote, VoteReceipt>(.post, "/v1/polls/\(\.id, "id")/vote")
  /// `GET /v1/polls/{id}/comments?cursor=&limit=`: oldest first, authors embedded.
  public static let pollComments = Endpoint<PollCommentsParameters, NoBody, PollCommentPage>(
    .get, "/v1/polls/\(\.id, "id")/comments", query: { $0.queryItems })
  /// `POST /v1/polls/{id}/comments {text}` → 201 with the comment (1…1000 characters).
  public static let addPollComment = Endpoint<PollRef, NewPollComment, PollCommentView>(
    .post, "/v1/polls/\(\.id, "id")/comments")
  /// `DELETE /v1/polls/{id}/comments/{commentId}` → 204: the caller's own comment.
  public static let deletePollComment = Endpoint<PollCommentRef, NoBody, NoContent>(
    .delete, "/v1/polls/\(\.pollID, "id")/comments/\(\.commentID, "commentId")", body: .none, response: .empty)
  /// `PATCH /v1/polls/{id}/comments/{commentId} {hidden}` → 204: the poll's author hides or shows a comment.
  public static let hidePollComment = Endpoint<PollCommentRef, CommentVisibility, NoContent>(
    .patch, "/v1/polls/\(\.pollID, "id")/comments/\(\.commentID, "commentId")", body: .json(), response: .empty)
  /// `GET /v1/coupons`: the offers still valid, with their stock.
  public static let coupons = Endpoint<Void, NoBody, CouponCatalog>(.get, "/v1/coupons")
  /// `POST /v1/coupons/{id}/purchase` → 201 with the coupon and its redemption code; `409 insufficient_points`
  /// changes nothing. Send an `Idempotency-Key`: a retry returns the same coupon.
  public static let purchaseCoupon = Endpoint<CouponRef, NoBody, CouponPurchase>(
    .post, "/v1/coupons/\(\.id, "id")/purchase", idempotency: .key)
  /// `GET /v1/me/coupons`: what the caller bought, newest first.
  public static let myCoupons = Endpoint<Void, NoBody, CouponList>(.get, "/v1/me/coupons")
  /// `GET /v1/me/points`: the balance and the newest ledger entries.
  public static let myPoints = Endpoint<Void, NoBody, PointsStatement>(.get, "/v1/me/points")
  /// `POST /v1/blobs` (the image's bytes; JPEG, PNG or WebP by their magic bytes) → 201 with its SHA-256 and URL.
  public static let uploadBlob = Endpoint<Void, Data, BlobReceipt>(
    .post, "/v1/blobs", body: .raw(contentType: "application/octet-stream"))
  /// `GET /v1/blobs/{hash}`: the image, with `ETag` (its hash) and a year-long immutable cache lifetime.
  public static let blob = Endpoint<BlobRef, NoBody, Data>(
    .get, "/v1/blobs/\(\.hash, "hash")", body: .none, response: .raw, authentication: .none)
}

/// `GET /v1/polls` parameters.
public struct PollFeedParameters: RouteParameters, Hashable {
  /// `newest` (default) or `most_voted`.
  public var order: String
  /// The previous page's `nextCursor`.
  public var cursor: String?
  /// Page size, 1…100 (default 10).
  public var limit: Int
  /// Only this author's polls; `me` for the caller's own.
  public var author: String?

  /// Parameters.
  public init(order: String = "newest", cursor: String? = nil, limit: Int = 10, author: String? = nil) {
    self.order = order
    self.cursor = cursor
    self.limit = limit
    self.author = author
  }

  /// Reads `order`, `cursor`, `limit` and `author`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    order = query.string("order") ?? "newest"
    guard ["newest", "most_voted"].contains(order) else {
      throw .invalidRequest("'order' must be 'newest' or 'most_voted', not '\(echo(order))'.")
    }
    cursor = query.string("cursor")
    let limit = try query.int64("limit") ?? 10
    guard (1...100).contains(limit) else { throw .invalidRequest("'limit' must be between 1 and 100.") }
    self.limit = Int(limit)
    author = query.string("author")
    if let author { try Identifier.check(author, name: "author") }
  }

  var queryItems: [QueryItem] {
    var items = [QueryItem("order", order), QueryItem("limit", limit)]
    if let cursor { items.append(QueryItem("cursor", cursor)) }
    if let author { items.append(QueryItem("author", author)) }
    return items
  }
}

/// A poll in the path: `/v1/polls/{id}/…`.
public struct PollRef: RouteParameters, Hashable {
  /// The poll.
  public var id: PollID
  /// A reference to `id`.
  public init(id: PollID) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = PollID(try path.required("id"))
  }
}

/// `GET /v1/polls/{id}/comments` parameters.
public struct PollCommentsParameters: RouteParameters, Hashable {
  /// The poll.
  public var id: PollID
  /// The previous page's `nextCursor`.
  public var cursor: String?
  /// Page size, 1…100 (default 20).
  public var limit: Int
  /// Parameters.
  public init(id: PollID, cursor: String? = nil, limit: Int = 20) {
    self.id = id
    self.cursor = cursor
    self.limit = limit
  }
  /// Reads `{id}`, `cursor` and `limit`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = PollID(try path.required("id"))
    cursor = query.string("cursor")
    let limit = try query.int64("limit") ?? 20
    guard (1...100).contains(limit) else { throw .invalidRequest("'limit' must be between 1 and 100.") }
    self.limit = Int(limit)
  }
  var queryItems: [QueryItem] {
    [QueryItem("limit", limit)] + (cursor.map { [QueryItem("cursor", $0)] } ?? [])
  }
}

/// A comment in the path: `/v1/polls/{id}/comments/{commentId}`.
public struct PollCommentRef: RouteParameters, Hashable {
  /// The poll.
  public var pollID: PollID
  /// The comment.
  public var commentID: CommentID
  /// A reference.
  public init(pollID: PollID, commentID: CommentID) {
    self.pollID = pollID
    self.commentID = commentID
  }
  /// Reads `{id}` and `{commentId}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    pollID = PollID(try path.required("id"))
    commentID = CommentID(try path.required("commentId"))
  }
}

/// A coupon offer in the path: `/v1/coupons/{id}/…`.
public struct CouponRef: RouteParameters, Hashable {
  /// The offer.
  public var id: CouponID
  /// A reference to `id`.
  public init(id: CouponID) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = CouponID(try path.required("id"))
  }
}

/// A blob in the path: `/v1/blobs/{hash}`.
public struct BlobRef: RouteParameters, Hashable {
  /// The SHA-256 of the blob's bytes, 64 lowercase hex digits.
  public var hash: String
  /// A reference to `hash`.
  public init(hash: String) { self.hash = hash }
  /// Reads `{hash}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    hash = try path.required("hash")
  }
}

/// `POST /v1/polls`. Wire names: `title`, `description`, `options` (two `{text, imageUrl}`), `closesAt` (UTC ms,
/// optional).
public struct NewPoll: Sendable, Hashable, Codable {
  /// 1…255 characters.
  public var title: String
  /// At most 500 characters.
  public var description: String?
  /// Exactly two options, each with an image from `POST /v1/blobs` (`/v1/blobs/<hash>`).
  public var options: [PollOption]
  /// When voting ends, UTC ms (in the future).
  public var closesAt: Int64?
  /// A new poll.
  public init(title: String, description: String? = nil, options: [PollOption], closesAt: Int64? = nil) {
    self.title = title
    self.description = description
    self.options = options
    self.closesAt = closesAt
  }
}

/// `POST /v1/polls/{id}/vote`. Wire name: `choice` (0 or 1).
public struct PollVote: Sendable, Hashable, Codable {
  /// The option.
  public var choice: PollChoice
  /// A vote.
  public init(choice: PollChoice) { self.choice = choice }
}

/// The answer to a vote. Wire names: `results`, `myChoice`, `awarded` (points earned by this vote).
public struct VoteReceipt: Sendable, Hashable, Codable {
  /// The poll's results after the vote.
  public var results: PollResults
  /// The caller's vote.
  public var myChoice: PollChoice
  /// Points credited for it (only a first vote earns).
  public var awarded: Int
  /// A receipt.
  public init(results: PollResults, myChoice: PollChoice, awarded: Int) {
    self.results = results
    self.myChoice = myChoice
    self.awarded = awarded
  }
}

/// `POST /v1/polls/{id}/comments`. Wire name: `text`.
public struct NewPollComment: Sendable, Hashable, Codable {
  /// 1…1000 characters.
  public var text: String
  /// A comment.
  public init(text: String) { self.text = text }
}

/// `PATCH /v1/polls/{id}/comments/{commentId}`. Wire name: `hidden`.
public struct CommentVisibility: Sendable, Hashable, Codable {
  /// Whether the comment is hidden.
  public var hidden: Bool
  /// A visibility.
  public init(hidden: Bool) { self.hidden = hidden }
}

/// `PATCH /v1/polls/{id}`. Wire name: `closed`.
public struct PollUpdate: Sendable, Hashable, Codable {
  /// `true` closes the poll now.
  public var closed: Bool?
  /// An update.
  public init(closed: Bool? = nil) { self.closed = closed }
}

/// `GET /v1/coupons`. Wire name: `items`.
public struct CouponCatalog: Sendable, Hashable, Codable {
  /// The offers.
  public var items: [CouponListing]
  /// A catalogue.
  public init(items: [CouponListing]) { self.items = items }
}

/// `GET /v1/me/coupons`. Wire name: `items`.
public struct CouponList: Sendable, Hashable, Codable {
  /// The coupons.
  public var items: [Coupon]
  /// A list.
  public init(items: [Coupon]) { self.items = items }
}

/// The answer to `POST /v1/blobs`. Wire names: `hash`, `url`, `contentType`, `size`.
public struct BlobReceipt: Sendable, Hashable, Codable {
  /// SHA-256 of the bytes, hex.
  public var hash: String
  /// Where it is served: `/v1/blobs/<hash>` (what poll options and avatars refer to).
  public var url: String
  /// The type found by the magic bytes.
  public var contentType: String
  /// Bytes.
  public var size: Int
  /// A receipt.
  public init(hash: String, url: String, contentType: String, size: Int) {
    self.hash = hash
    self.url = url
    self.contentType = contentType
    self.size = size
  }
}

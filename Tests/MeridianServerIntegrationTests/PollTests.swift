import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianSecrets
import MeridianServer
import MeridianStore
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import RealtimeKit
import Testing

/// Polls with rewards through the HTTP API, on every engine the server runs on: images, posting, the feed, votes
/// (also many at once), comments, points and coupons (also bought at once).
@Suite("Polls and rewards over HTTP", .inProcess)
struct PollTests {
  static let engines = ["sqlite", "postgres"]

  /// Runs `body` against a server on `engine` (a fresh database each time), with `clock` as its clock when given.
  static func withServer(
    _ engine: String, clock: TestClock? = nil, _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in },
    _ body: (TestServer) async throws -> Void
  ) async throws {
    guard engine == "postgres" else { return try await TestServer.with(clock: clock, configure, body) }
    let database = try await PostgresTestDatabase.create()
    do {
      try await TestServer.with(
        clock: clock,
        {
          $0.database = .postgres(url: database.url)
          configure(&$0)
        }, body)
    } catch {
      await database.drop()
      throw error
    }
    await database.drop()
  }

  /// A PNG of `size` bytes: the signature, then filler (the blob store checks the magic bytes only).
  static func png(_ size: Int, seed: UInt8 = 1) -> Data {
    Data(
      [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        + (0..<max(0, size - 8)).map { UInt8(truncatingIfNeeded: $0) &+ seed })
  }

  static func newPoll(_ title: String, images: [String]) -> NewPoll {
    NewPoll(
      title: title, description: "Which one?",
      options: [PollOption(text: "Tea", imageURL: images[0]), PollOption(text: "Coffee", imageURL: images[1])])
  }

  @Test(arguments: engines)
  func theWholeLoopFromImagesToACoupon(_ engine: String) async throws {
    try await Self.withServer(engine) { server in
      let anna = try await server.signUp("anna")
      let boris = try await server.signUp("boris")
      let clara = try await server.signUp("clara")
      // Two images; the second is larger than the client's gzip threshold, so it arrives compressed.
      let first = try await anna.client.send(API.uploadBlob, body: Self.png(1_000))
      let second = try await anna.client.send(API.uploadBlob, body: Self.png(20_000, seed: 7))
      #expect(first.hash == SecretHash.sha256(Self.png(1_000)) && first.contentType == "image/png")
      #expect(second.size == 20_000 && second.url == "/v1/blobs/\(second.hash)")
      let image = try await server.phoneAppRequest(.get, second.url)
      #expect(image.head.status == .ok && image.body == Self.png(20_000, seed: 7))
      #expect(image.head.headerFields[.contentType] == "image/png")
      #expect(image.head.headerFields[.eTag] == "\"\(second.hash)\"")
      #expect(image.head.headerFields[.cacheControl]?.contains("immutable") == true)
      let cached = try await server.phoneAppRequest(.get, second.url, headers: [.ifNoneMatch: "\"\(second.hash)\""])
      #expect(cached.head.status == .notModified && cached.body.isEmpty)

      let posted = try await anna.client.send(
        API.createPoll, body: Self.newPoll("Tea or coffee?", images: [first.url, second.url]))
      #expect(posted.poll.title == "Tea or coffee?" && posted.author.id == anna.session.userId)
      #expect(posted.results == PollResults(counts: [0, 0]) && posted.results.percentages == [0, 0])
      let id = PollRef(id: posted.id)

      let borisVote = try await boris.client.send(API.vote, parameters: id, body: PollVote(choice: .first))
      #expect(borisVote.awarded == 1 && borisVote.results.counts == [1, 0])
      let claraVote = try await clara.client.send(API.vote, parameters: id, body: PollVote(choice: .second))
      #expect(claraVote.results.counts == [1, 1] && claraVote.results.percentages == [50, 50])
      // Boris changes his mind: still one ballot, no second reward.
      let changed = try await boris.client.send(API.vote, parameters: id, body: PollVote(choice: .second))
      #expect(changed.awarded == 0 && changed.results.counts == [0, 2] && changed.results.percentages == [0, 100])

      let comment = try await clara.client.send(
        API.addPollComment, parameters: id, body: NewPollComment(text: "Coffee, obviously"))
      #expect(comment.comment.text == "Coffee, obviously" && comment.author.id == clara.session.userId)
      let comments = try await boris.client.send(API.pollComments, parameters: PollCommentsParameters(id: posted.id))
      #expect(comments.items.map(\.comment.text) == ["Coffee, obviously"])

      let seen = try await clara.client.send(API.poll, parameters: id)
      #expect(seen.myChoice == .second && seen.comments == 1 && seen.results.total == 2)
      let feed = try await boris.client.send(API.polls, parameters: PollFeedParameters())
      #expect(feed.items.map(\.id) == [posted.id] && feed.nextCursor == nil)
      let mine = try await anna.client.send(API.polls, parameters: PollFeedParameters(author: "me"))
      #expect(mine.items.map(\.id) == [posted.id])
      #expect(try await boris.client.send(API.polls, parameters: PollFeedParameters(author: "me")).items.isEmpty)

      // Points: 10 for the poll, 1 per first vote.
      #expect(try await anna.client.send(API.myPoints).balance == 10)
      let borisPoints = try await boris.client.send(API.myPoints)
      #expect(borisPoints.balance == 1 && borisPoints.entries.map(\.reason) == [.voted])

      // A coupon: not enough points is a clear 409 that changes nothing; then anna buys one.
      let store = server.app.environment.store
      _ = try await store.upsertCouponOffer(
        CouponOffer(id: "latte", shopName: "Lviv Coffee", title: "Free latte", price: 8), description: "Any size",
        stock: 5, now: 0)
      let catalog = try await boris.client.send(API.coupons)
      #expect(catalog.items.map(\.id) == ["latte"] && catalog.items.first?.remaining == 5)
      await expectAPIError(.insufficientPoints, status: 409) {
        try await boris.client.send(API.purchaseCoupon, parameters: CouponRef(id: "latte"))
      }
      #expect(try await boris.client.send(API.myPoints).balance == 1)
      let bought = try await anna.client.send(
        API.purchaseCoupon, parameters: CouponRef(id: "latte"), idempotencyKey: "buy-latte-1")
      #expect(bought.balance == 2 && bought.coupon.offerID == "latte" && bought.coupon.code.count == 14)
      // The same request again (a retry): the same coupon, nothing spent twice.
      let retried = try await anna.client.send(
        API.purchaseCoupon, parameters: CouponRef(id: "latte"), idempotencyKey: "buy-latte-1")
      #expect(retried == bought)
      #expect(try await anna.client.send(API.myCoupons).items == [bought.coupon])
      #expect(try await anna.client.send(API.myPoints).balance == 2)
      #expect(try await boris.client.send(API.coupons).items.first?.remaining == 4)
    }
  }

  @Test(arguments: engines)
  func badInputGetsStableCodesAndStoresNothing(_ engine: String) async throws {
    try await Self.withServer(engine, { $0.polls.maximumBlobBytes = 64 * 1024 }) { server in
      let anna = try await server.signUp("anna")
      let boris = try await server.signUp("boris")
      // Uploads: not an image, too large, no token.
      await expectAPIError(.unsupportedImage, status: 415) {
        try await anna.client.send(API.uploadBlob, body: Data("GIF89a, not accepted".utf8))
      }
      await expectAPIError(.bodyTooLarge, status: 413) {
        try await anna.client.send(API.uploadBlob, body: Self.png(64 * 1024 + 1))
      }
      let anonymous = try await server.phoneAppRequest(.post, "/v1/blobs", body: Self.png(100))
      #expect(anonymous.head.status == .unauthorized)
      #expect(
        try await server.phoneAppRequest(.get, "/v1/blobs/\(String(repeating: "0", count: 64))").head.status
          == .notFound)
      #expect(try await server.phoneAppRequest(.get, "/v1/blobs/..%2Fmeridian.sqlite").head.status == .notFound)

      let image = try await anna.client.send(API.uploadBlob, body: Self.png(500)).url
      // Polls: empty title, a third option, an image that was never uploaded, a long description.
      await expectAPIError(.invalidPoll, status: 422) {
        try await anna.client.send(API.createPoll, body: Self.newPoll("   ", images: [image, image]))
      }
      await expectAPIError(.invalidPoll, status: 422) {
        var poll = Self.newPoll("Three?", images: [image, image])
        poll.options.append(PollOption(text: "Juice", imageURL: image))
        return try await anna.client.send(API.createPoll, body: poll)
      }
      await expectAPIError(.invalidPoll, status: 422) {
        try await anna.client.send(
          API.createPoll,
          body: Self.newPoll("Missing", images: [image, "/v1/blobs/\(String(repeating: "a", count: 64))"]))
      }
      await expectAPIError(.invalidPoll, status: 422) {
        var poll = Self.newPoll("Long", images: [image, image])
        poll.description = String(repeating: "x", count: 501)
        return try await anna.client.send(API.createPoll, body: poll)
      }
      await expectAPIError(.invalidPoll, status: 422) {
        var poll = Self.newPoll("Past", images: [image, image])
        poll.closesAt = 1
        return try await anna.client.send(API.createPoll, body: poll)
      }
      #expect(try await anna.client.send(API.polls, parameters: PollFeedParameters()).items.isEmpty)
      #expect(try await anna.client.send(API.myPoints).balance == 0)

      // Votes and comments on what isn't there, or is hidden; choices out of range; empty comments.
      let poll = try await anna.client.send(API.createPoll, body: Self.newPoll("Tea?", images: [image, image]))
      let ref = PollRef(id: poll.id)
      await expectAPIError(.notFound, status: 404) {
        try await boris.client.send(API.vote, parameters: PollRef(id: "nope"), body: PollVote(choice: .first))
      }
      let badChoice = try await server.phoneAppRequest(
        .post, "/v1/polls/\(poll.id)/vote",
        headers: [.authorization: "Bearer \(boris.session.token)", .contentType: "application/json"],
        body: Data(#"{"choice":2}"#.utf8))
      #expect(badChoice.head.status == .badRequest)
      await expectAPIError(.invalidComment, status: 422) {
        try await boris.client.send(API.addPollComment, parameters: ref, body: NewPollComment(text: "  "))
      }
      #expect(try await server.app.environment.store.setPollHidden(poll.id, hidden: true))
      await expectAPIError(.pollHidden, status: 409) {
        try await boris.client.send(API.vote, parameters: ref, body: PollVote(choice: .first))
      }
      await expectAPIError(.notFound, status: 404) { try await boris.client.send(API.poll, parameters: ref) }
      _ = try await server.app.environment.store.deletePoll(poll.id)
      await expectAPIError(.notFound, status: 404) {
        try await boris.client.send(API.addPollComment, parameters: ref, body: NewPollComment(text: "late"))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await boris.client.send(API.polls, parameters: PollFeedParameters(cursor: "garbage"))
      }
      // Coupons: unknown, sold out, replayed key for another offer.
      await expectAPIError(.notFound, status: 404) {
        try await boris.client.send(API.purchaseCoupon, parameters: CouponRef(id: "nope"))
      }
      let store = server.app.environment.store
      _ = try await store.grantPoints(100, to: boris.session.userId, note: "test", now: 0)
      _ = try await store.upsertCouponOffer(
        CouponOffer(id: "one", shopName: "Shop", title: "Last one", price: 10), description: "", stock: 1, now: 0)
      _ = try await store.upsertCouponOffer(
        CouponOffer(id: "two", shopName: "Shop", title: "Other", price: 10), description: "", stock: 9, now: 0)
      _ = try await boris.client.send(API.purchaseCoupon, parameters: CouponRef(id: "one"), idempotencyKey: "k1")
      await expectAPIError(.outOfStock, status: 409) {
        try await boris.client.send(API.purchaseCoupon, parameters: CouponRef(id: "one"), idempotencyKey: "k2")
      }
      await expectAPIError(.idempotencyConflict, status: 422) {
        try await boris.client.send(API.purchaseCoupon, parameters: CouponRef(id: "two"), idempotencyKey: "k1")
      }
      #expect(try await boris.client.send(API.myPoints).balance == 90)
    }
  }

  @Test(arguments: engines)
  func simultaneousVotesAndPurchasesOverHTTP(_ engine: String) async throws {
    try await Self.withServer(engine) { server in
      let anna = try await server.signUp("anna")
      var voters: [NetworkClient] = []
      for index in 0..<12 { voters.append(try await server.signUp("voter\(index)").client) }
      let image = try await anna.client.send(API.uploadBlob, body: Self.png(300)).url
      let poll = try await anna.client.send(API.createPoll, body: Self.newPoll("Hot", images: [image, image]))
      let ref = PollRef(id: poll.id)
      // Anna votes 10 times at once, both ways: one ballot, one point.
      try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<10 {
          group.addTask {
            _ = try await anna.client.send(
              API.vote, parameters: ref, body: PollVote(choice: index % 2 == 0 ? .first : .second))
          }
        }
        try await group.waitForAll()
      }
      // Twelve voters at once, each twice.
      try await withThrowingTaskGroup(of: Void.self) { group in
        for (index, voter) in voters.enumerated() {
          for round in 0..<2 {
            group.addTask {
              _ = try await voter.send(
                API.vote, parameters: ref, body: PollVote(choice: (index + round) % 2 == 0 ? .first : .second))
            }
          }
        }
        try await group.waitForAll()
      }
      let results = try await anna.client.send(API.poll, parameters: ref).results
      #expect(results.total == 13)
      var ballots = [0, 0]
      for voter in voters + [anna.client] {
        let choice = try #require(try await voter.send(API.poll, parameters: ref).myChoice)
        ballots[choice.rawValue] += 1
      }
      #expect(results.counts == ballots)
      #expect(try await anna.client.send(API.myPoints).balance == 10 + 1)

      // Points for one coupon, eight purchases at once: exactly one coupon, the rest 409 insufficient_points.
      _ = try await server.app.environment.store.upsertCouponOffer(
        CouponOffer(id: "cake", shopName: "Bakery", title: "Cake", price: 8), description: "", stock: 50, now: 0)
      let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
        for _ in 0..<8 {
          group.addTask {
            do {
              _ = try await anna.client.send(API.purchaseCoupon, parameters: CouponRef(id: "cake"))
              return "bought"
            } catch let error as NetworkingError {
              return error.serverError?.code ?? "\(error)"
            }
          }
        }
        return try await group.reduce(into: [String]()) { $0.append($1) }
      }
      #expect(outcomes.sorted() == ["bought"] + Array(repeating: "insufficient_points", count: 7))
      #expect(try await anna.client.send(API.myPoints).balance == 3)
      #expect(try await anna.client.send(API.myCoupons).items.count == 1)
    }
  }

  @Test func pollCreationIsRateLimitedPerAccount() async throws {
    try await TestServer.with({ $0.limits.pollsPerAccountPerHour = 2 }) { server in
      let anna = try await server.signUp("anna")
      let image = try await anna.client.send(API.uploadBlob, body: Self.png(300)).url
      for index in 0..<2 {
        _ = try await anna.client.send(API.createPoll, body: Self.newPoll("Poll \(index)", images: [image, image]))
      }
      await expectAPIError(.rateLimited, status: 429) {
        try await anna.client.send(API.createPoll, body: Self.newPoll("One too many", images: [image, image]))
      }
      let boris = try await server.signUp("boris")
      _ = try await boris.client.send(API.createPoll, body: Self.newPoll("Boris's", images: [image, image]))
    }
  }

  @Test func commentsAreRateLimitedPerAccount() async throws {
    try await TestServer.with({ $0.limits.commentsPerAccountPerMinute = 2 }) { server in
      let anna = try await server.signUp("anna")
      let boris = try await server.signUp("boris")
      let image = try await anna.client.send(API.uploadBlob, body: Self.png(300)).url
      let poll = PollRef(
        id: try await anna.client.send(API.createPoll, body: Self.newPoll("Tea?", images: [image, image])).id)
      for index in 0..<2 {
        _ = try await boris.client.send(API.addPollComment, parameters: poll, body: NewPollComment(text: "#\(index)"))
      }
      await expectAPIError(.rateLimited, status: 429) {
        try await boris.client.send(API.addPollComment, parameters: poll, body: NewPollComment(text: "one too many"))
      }
      // The refused comment stored nothing; another account still comments.
      _ = try await anna.client.send(API.addPollComment, parameters: poll, body: NewPollComment(text: "mine"))
      let comments = try await anna.client.send(API.pollComments, parameters: PollCommentsParameters(id: poll.id))
      #expect(comments.items.map(\.comment.text) == ["#0", "#1", "mine"])
    }
  }

  @Test(arguments: engines)
  func aCommentIsDeletedOrHiddenOnlyThroughItsOwnPoll(_ engine: String) async throws {
    try await Self.withServer(engine) { server in
      let anna = try await server.signUp("anna")
      let boris = try await server.signUp("boris")
      let image = try await anna.client.send(API.uploadBlob, body: Self.png(300)).url
      let tea = try await anna.client.send(API.createPoll, body: Self.newPoll("Tea?", images: [image, image])).id
      let cake = try await anna.client.send(API.createPoll, body: Self.newPoll("Cake?", images: [image, image])).id
      let comment = try await boris.client.send(
        API.addPollComment, parameters: PollRef(id: tea), body: NewPollComment(text: "Tea"))
      // Named with anna's other poll, boris's comment on "Tea?" is not there: 404, and it stays.
      let elsewhere = PollCommentRef(pollID: cake, commentID: comment.id)
      await expectAPIError(.notFound, status: 404) {
        try await boris.client.send(API.deletePollComment, parameters: elsewhere)
      }
      await expectAPIError(.notFound, status: 404) {
        try await anna.client.send(API.hidePollComment, parameters: elsewhere, body: CommentVisibility(hidden: true))
      }
      let kept = try await anna.client.send(API.pollComments, parameters: PollCommentsParameters(id: tea))
      #expect(kept.items.map(\.id) == [comment.id] && kept.items.allSatisfy { !$0.hidden })
      // Through its own poll it goes.
      let own = PollCommentRef(pollID: tea, commentID: comment.id)
      _ = try await anna.client.send(API.hidePollComment, parameters: own, body: CommentVisibility(hidden: true))
      _ = try await boris.client.send(API.deletePollComment, parameters: own)
      #expect(try await anna.client.send(API.pollComments, parameters: PollCommentsParameters(id: tea)).items.isEmpty)
    }
  }

  @Test(arguments: engines)
  func aProfilePhotoComesFromTheBlobStoreAndShowsOnPolls(_ engine: String) async throws {
    try await Self.withServer(engine) { server in
      let anna = try await server.signUp("anna")
      let photo = try await anna.client.send(API.uploadBlob, body: Self.png(2_000, seed: 3))
      let profile = try await anna.client.send(
        API.updateProfile, body: ProfileUpdate(avatar: photo.url, audience: [.avatar: .everyone, .fullName: .everyone]))
      #expect(profile.avatar == photo.url)
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.client.send(
          API.updateProfile, body: ProfileUpdate(avatar: "/v1/blobs/\(String(repeating: "0", count: 64))"))
      }
      #expect(try await anna.client.send(API.me).profile.avatar == photo.url)
      let poll = try await anna.client.send(
        API.createPoll, body: Self.newPoll("With a face", images: [photo.url, photo.url]))
      #expect(poll.author == PublicAuthor(id: anna.session.userId, fullName: "Anna", avatar: photo.url))
      let boris = try await server.signUp("boris")
      let feed = try await boris.client.send(API.polls, parameters: PollFeedParameters())
      #expect(feed.items.first?.author.avatar == photo.url)
    }
  }

  /// Whether the server still serves the blob at `url`.
  static func serves(_ server: TestServer, _ url: String) async throws -> Bool {
    let response = try await server.phoneAppRequest(.get, url)
    #expect([.ok, .notFound].contains(response.head.status), "\(response.head)")
    return response.head.status == .ok
  }

  @Test(arguments: engines)
  func authorsCloseAndDeleteTheirOwnPollsAndNobodyElseCan(_ engine: String) async throws {
    // No grace period: what is released goes at once (the contract tests cover the grace period).
    try await Self.withServer(engine, { $0.polls.blobGracePeriod = 0 }) { server in
      let anna = try await server.signUp("anna")
      let boris = try await server.signUp("boris")
      let own = try await anna.client.send(API.uploadBlob, body: Self.png(500, seed: 11)).url
      let shared = try await anna.client.send(API.uploadBlob, body: Self.png(500, seed: 12)).url
      let posted = try await anna.client.send(API.createPoll, body: Self.newPoll("Tea?", images: [own, shared]))
      _ = try await boris.client.send(API.createPoll, body: Self.newPoll("Boris's", images: [shared, shared]))
      let id = PollRef(id: posted.id)
      _ = try await boris.client.send(API.vote, parameters: id, body: PollVote(choice: .first))

      // Someone else's poll: refused, and nothing changes.
      await expectAPIError(.notPollAuthor, status: 403) {
        try await boris.client.send(API.updatePoll, parameters: id, body: PollUpdate(closed: true))
      }
      await expectAPIError(.notPollAuthor, status: 403) { try await boris.client.send(API.deletePoll, parameters: id) }
      let unknown = PollRef(id: "no-such-poll")
      await expectAPIError(.notFound, status: 404) {
        try await anna.client.send(API.updatePoll, parameters: unknown, body: PollUpdate(closed: true))
      }
      await expectAPIError(.notFound, status: 404) { try await anna.client.send(API.deletePoll, parameters: unknown) }
      // Reopening, or an update that says nothing, is refused.
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.client.send(API.updatePoll, parameters: id, body: PollUpdate(closed: false))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.client.send(API.updatePoll, parameters: id, body: PollUpdate())
      }
      let still = try await boris.client.send(API.poll, parameters: id)
      #expect(still.closesAt == nil && still.results.counts == [1, 0])

      // The author closes it: votes are refused from then on, the results stay.
      let closed = try await anna.client.send(API.updatePoll, parameters: id, body: PollUpdate(closed: true))
      let closesAt = try #require(closed.closesAt)
      #expect(closed.results.counts == [1, 0])
      await expectAPIError(.pollClosed, status: 409) {
        try await boris.client.send(API.vote, parameters: id, body: PollVote(choice: .second))
      }
      let again = try await anna.client.send(API.updatePoll, parameters: id, body: PollUpdate(closed: true))
      #expect(again.closesAt == closesAt)
      #expect(try await boris.client.send(API.poll, parameters: id).closesAt == closesAt)

      // The author deletes it: gone with its image, the image another poll uses stays; points earned stay.
      _ = try await anna.client.send(API.deletePoll, parameters: id)
      await expectAPIError(.notFound, status: 404) { try await boris.client.send(API.poll, parameters: id) }
      await expectAPIError(.notFound, status: 404) { try await anna.client.send(API.deletePoll, parameters: id) }
      #expect(try await !Self.serves(server, own))
      #expect(try await Self.serves(server, shared))
      #expect(
        try await boris.client.send(API.polls, parameters: PollFeedParameters()).items.map(\.poll.title) == [
          "Boris's"
        ])
      #expect(try await boris.client.send(API.myPoints).balance == 11)
    }
  }

  @Test(arguments: engines)
  func replacedPhotosAndDeletedAccountsReleaseTheirBlobs(_ engine: String) async throws {
    // No grace period: what is released goes at once (the contract tests cover the grace period).
    try await Self.withServer(engine, { $0.polls.blobGracePeriod = 0 }) { server in
      let anna = try await server.signUp("anna")
      let boris = try await server.signUp("boris")
      var urls: [String] = []
      for seed: UInt8 in 21...24 {
        urls.append(try await anna.client.send(API.uploadBlob, body: Self.png(400, seed: seed)).url)
      }
      let (first, second, pollOnly, shared) = (urls[0], urls[1], urls[2], urls[3])
      _ = try await anna.client.send(API.updateProfile, body: ProfileUpdate(avatar: first))
      _ = try await anna.client.send(API.updateProfile, body: ProfileUpdate(avatar: first))  // the same again
      #expect(try await Self.serves(server, first))
      // A new photo replaces the first, which nothing else used.
      _ = try await anna.client.send(API.updateProfile, body: ProfileUpdate(avatar: second))
      #expect(try await !Self.serves(server, first))
      #expect(try await Self.serves(server, second))
      // A photo a poll also shows stays when the profile drops it.
      _ = try await anna.client.send(API.createPoll, body: Self.newPoll("Mine", images: [pollOnly, second]))
      _ = try await anna.client.send(API.updateProfile, body: ProfileUpdate(avatar: ""))
      #expect(try await anna.client.send(API.me).profile.avatar == nil)
      #expect(try await Self.serves(server, second))
      _ = try await anna.client.send(API.updateProfile, body: ProfileUpdate(avatar: shared))
      _ = try await boris.client.send(API.createPoll, body: Self.newPoll("Boris's", images: [shared, shared]))

      // Deleting anna: her avatar and poll images go, except the one boris's poll shows.
      let admin = try server.client(token: ServerConfiguration.developmentAdminToken)
      let dryRun = try await admin.send(
        API.adminDeleteUser, parameters: AdminUserDeletionQuery(user: anna.session.userId.rawValue, dryRun: true))
      #expect(dryRun.dryRun)
      #expect(try await Self.serves(server, pollOnly))
      _ = try await admin.send(
        API.adminDeleteUser, parameters: AdminUserDeletionQuery(user: anna.session.userId.rawValue))
      #expect(try await !Self.serves(server, pollOnly))
      #expect(try await !Self.serves(server, second))
      #expect(try await Self.serves(server, shared))
    }
  }

  @Test(arguments: engines)
  func theServerSweepsUploadsNothingUses(_ engine: String) async throws {
    // A sweep every 100 ms and a grace period of 10 s on the test's clock (time enough to attach an upload to a poll
    // however loaded the machine: it passes only when the test moves the clock): an upload never attached goes by
    // itself, a poll's image stays.
    let clock = TestClock()
    try await Self.withServer(
      engine, clock: clock,
      {
        $0.polls.blobGracePeriod = 10_000
        $0.polls.blobSweepInterval = 100
      }
    ) { server in
      let anna = try await server.signUp("anna")
      let used = try await anna.client.send(API.uploadBlob, body: Self.png(300, seed: 31)).url
      _ = try await anna.client.send(API.createPoll, body: Self.newPoll("Kept", images: [used, used]))
      let orphan = try await anna.client.send(API.uploadBlob, body: Self.png(300, seed: 32)).url
      clock.advance(10_001)
      try await GeofenceQueueTests.waitFor("the sweep of an upload nothing uses", timeout: .seconds(30)) {
        try await !Self.serves(server, orphan)
      }
      #expect(try await Self.serves(server, used))
    }
  }

  /// What a `poll:<id>` event carries.
  struct ResultsEvent: Decodable {
    var type: String
    var pollId: PollID
    var results: PollResults
  }

  @Test(arguments: engines)
  func resultsArriveOnThePollChannelCoalesced(_ engine: String) async throws {
    try await Self.withServer(engine) { server in
      let anna = try await server.signUp("anna")
      var voters: [NetworkClient] = []
      for index in 0..<8 { voters.append(try await server.signUp("voter\(index)").client) }
      let image = try await anna.client.send(API.uploadBlob, body: Self.png(300)).url
      let poll = try await anna.client.send(API.createPoll, body: Self.newPoll("Live", images: [image, image]))
      let channel = try #require(ChannelName(namespace: "poll", id: poll.id.rawValue))
      let watcher = await LiveWatcher(server: server, token: anna.session.token)
      do {
        #expect(try await watcher.subscribe(channel))
        #expect(try await !watcher.subscribe(try #require(ChannelName(namespace: "poll", id: "no-such-poll"))))
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
          for (index, voter) in voters.enumerated() {
            group.addTask {
              _ = try await voter.send(
                API.vote, parameters: PollRef(id: poll.id), body: PollVote(choice: index < 6 ? .first : .second))
            }
          }
          try await group.waitForAll()
        }
        func events(_ items: [RealtimeClientEvent]) throws -> [ResultsEvent] {
          try items.compactMap { item in
            guard case .event(let event) = item, event.channel == channel else { return nil }
            return try event.payload.decode(as: ResultsEvent.self)
          }
        }
        try await watcher.wait("the final counts") { items in try events(items).last?.results.total == 8 }
        let received = try events(await watcher.items)
        #expect(received.last?.results == PollResults(counts: [6, 2]))
        #expect(received.allSatisfy { $0.type == "poll.results" && $0.pollId == poll.id })
        // Coalesced: a burst of eight votes is at most one event per 250 ms window.
        let windows = Int((ContinuousClock.now - started) / .milliseconds(250)) + 1
        #expect(received.count <= windows, "\(received.count) events in \(windows) windows")
      } catch {
        await watcher.stop()
        throw error
      }
      await watcher.stop()
    }
  }
}

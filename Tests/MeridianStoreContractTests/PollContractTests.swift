import DomainKit
import Foundation
import MeridianAPI
import MeridianBlobFiles
import MeridianSecrets
import MeridianStore
import MeridianStoreTesting
import Testing

/// Polls, ballots, comments, points and coupons: the database keeps one vote per person, counts equal to ballots,
/// a balance that never goes negative, and purchases that happen whole or not at all — also under concurrency.
@Suite("Store contract: polls and rewards")
struct PollContractTests {
  func makeUsers(_ store: any MeridianStore, _ names: [String]) async throws {
    for name in names {
      _ = try #require(
        try await store.createAccount(
          id: UserID(name), credential: .email("\(name)@example.com"), passwordHash: nil, now: 1))
    }
  }

  func makePoll(_ id: String, author: String, at time: Int64, images: (String?, String?) = (nil, nil)) throws -> Poll {
    try Poll(
      id: PollID(id), authorID: UserID(author), title: "Which is better? \(id)", description: "Pick one",
      first: PollOption(text: "Tea", imageURL: images.0), second: PollOption(text: "Coffee", imageURL: images.1),
      createdAt: time)
  }

  @Test(arguments: StoreEngine.all)
  func feedPagesNewestAndMostVotedWithAuthorsPublicFields(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris", "voter1", "voter2", "voter3"])
      var anna = try #require(try await store.profile("anna"))
      anna.fullName = "Anna K"
      anna.avatar = "/v1/blobs/x"
      anna.audience = [.fullName: .everyone, .avatar: .nobody]
      try await store.saveProfile(anna)
      var boris = try #require(try await store.profile("boris"))
      boris.fullName = "Boris"  // audience: groups (the default), so not public
      try await store.saveProfile(boris)

      for index in 0..<25 {
        _ = try await store.createPoll(
          try makePoll("p\(index)", author: index % 2 == 0 ? "anna" : "boris", at: 1_000 + Int64(index)),
          closesAt: nil, reward: 10, now: 1_000 + Int64(index))
      }
      // Newest first, pages of 10, every poll once.
      var seen: [PollSummary] = []
      var cursor: String?
      var pages = 0
      repeat {
        let page = try await store.polls(PollFeedQuery(order: .newest, cursor: cursor, limit: 10))
        seen += page.items
        cursor = page.nextCursor
        pages += 1
      } while cursor != nil
      #expect(pages == 3)
      #expect(seen.map(\.id.rawValue) == (0..<25).reversed().map { "p\($0)" })
      let byAnna = try #require(seen.first { $0.id == "p0" })
      #expect(byAnna.author == PublicAuthor(id: "anna", fullName: "Anna K", avatar: nil))
      #expect(try #require(seen.first { $0.id == "p1" }).author == PublicAuthor(id: "boris"))
      #expect(byAnna.results == PollResults(counts: [0, 0]))
      #expect(byAnna.results.percentages == [0, 0])

      // Most voted: p3 (3 votes), p7 (2), p11 (1), then the rest newest first.
      for (poll, voters) in [
        ("p3", ["voter1", "voter2", "voter3"]), ("p7", ["voter1", "voter2"]), ("p11", ["voter3"]),
      ] {
        for voter in voters {
          _ = try await store.vote(PollID(poll), user: UserID(voter), choice: .second, reward: 1, now: 2_000)
        }
      }
      var ranked: [String] = []
      cursor = nil
      repeat {
        let page = try await store.polls(PollFeedQuery(order: .mostVoted, cursor: cursor, limit: 7))
        ranked += page.items.map(\.id.rawValue)
        cursor = page.nextCursor
      } while cursor != nil
      let rest = (0..<25).reversed().map { "p\($0)" }.filter { !["p3", "p7", "p11"].contains($0) }
      #expect(ranked == ["p3", "p7", "p11"] + rest)

      // "My polls": the author's own, hidden ones included for them only.
      #expect(try await store.setPollHidden("p2", hidden: true))
      let mine = try await store.polls(PollFeedQuery(author: "anna", viewer: "anna", limit: 100))
      #expect(mine.items.count == 13 && mine.items.contains { $0.id == "p2" && $0.hidden })
      let theirs = try await store.polls(PollFeedQuery(author: "anna", viewer: "boris", limit: 100))
      #expect(theirs.items.count == 12 && !theirs.items.contains { $0.id == "p2" })
      #expect(try await store.polls(PollFeedQuery(limit: 100)).items.count == 24)
      #expect(try await store.poll("p2", viewer: "boris") == nil)
      #expect(try await store.poll("p2", viewer: "anna")?.hidden == true)
      await #expect(throws: PollStoreError.invalidCursor) {
        try await store.polls(PollFeedQuery(order: .mostVoted, cursor: "12.p3"))
      }
      // Posting earned the author points, once per poll.
      #expect(try await store.points(of: "anna", limit: 100).balance == 130)
      await #expect(throws: PollStoreError.duplicateID("p0")) {
        try await store.createPoll(try makePoll("p0", author: "anna", at: 5_000), closesAt: nil, reward: 10, now: 5_000)
      }
      #expect(try await store.points(of: "anna", limit: 100).balance == 130)
    }
  }

  @Test(arguments: StoreEngine.all)
  func oneBallotPerPersonChangeableUntilTheClose(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris", "clara"])
      _ = try await store.createPoll(try makePoll("tea", author: "anna", at: 10), closesAt: 1_000, reward: 0, now: 10)
      let first = try await store.vote("tea", user: "boris", choice: .first, reward: 2, now: 100)
      #expect(first == VoteOutcome(results: PollResults(counts: [1, 0]), previous: nil, awarded: 2))
      let again = try await store.vote("tea", user: "boris", choice: .first, reward: 2, now: 101)
      #expect(again == VoteOutcome(results: PollResults(counts: [1, 0]), previous: .first, awarded: 0))
      let changed = try await store.vote("tea", user: "boris", choice: .second, reward: 2, now: 102)
      #expect(changed == VoteOutcome(results: PollResults(counts: [0, 1]), previous: .first, awarded: 0))
      let clara = try await store.vote("tea", user: "clara", choice: .second, reward: 2, now: 103)
      #expect(clara.results.counts == [0, 2] && clara.results.percentages == [0, 100])
      #expect(try await store.poll("tea", viewer: "boris")?.myChoice == .second)
      #expect(try await store.poll("tea", viewer: "anna")?.myChoice == nil)
      // The voter earned once, however often they changed their mind.
      #expect(try await store.points(of: "boris", limit: 10).balance == 2)
      await #expect(throws: PollStoreError.pollClosed("tea")) {
        try await store.vote("tea", user: "anna", choice: .first, reward: 2, now: 1_000)
      }
      await #expect(throws: PollStoreError.pollNotFound("nope")) {
        try await store.vote("nope", user: "anna", choice: .first, reward: 2, now: 100)
      }
      _ = try await store.createPoll(try makePoll("hidden", author: "anna", at: 10), closesAt: nil, reward: 0, now: 10)
      #expect(try await store.setPollHidden("hidden", hidden: true))
      await #expect(throws: PollStoreError.pollHidden("hidden")) {
        try await store.vote("hidden", user: "boris", choice: .first, reward: 2, now: 100)
      }
      #expect(try await store.poll("tea", viewer: nil)?.results == PollResults(counts: [0, 2]))
    }
  }

  @Test(arguments: StoreEngine.all)
  func simultaneousVotesKeepOneBallotAndCountsEqualToBallots(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let voters = (0..<24).map { "v\($0)" }
      try await makeUsers(store, ["anna"] + voters)
      _ = try await store.createPoll(try makePoll("hot", author: "anna", at: 10), closesAt: nil, reward: 0, now: 10)
      // One user, 16 votes at once, alternating options: one ballot, one vote counted, points once.
      try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<16 {
          group.addTask {
            _ = try await store.vote(
              "hot", user: "v0", choice: index % 2 == 0 ? .first : .second, reward: 3, now: 20 + Int64(index))
          }
        }
        try await group.waitForAll()
      }
      var poll = try #require(try await store.poll("hot", viewer: "v0"))
      #expect(poll.results.total == 1)
      #expect(poll.results.counts[poll.myChoice?.rawValue ?? -1] == 1)
      #expect(try await store.points(of: "v0", limit: 10).balance == 3)
      // Everyone else at once, each twice (the second changes or repeats the vote).
      try await withThrowingTaskGroup(of: Void.self) { group in
        for (index, voter) in voters.dropFirst().enumerated() {
          for round in 0..<2 {
            group.addTask {
              let choice: PollChoice = (index + round) % 3 == 0 ? .first : .second
              _ = try await store.vote("hot", user: UserID(voter), choice: choice, reward: 3, now: 30)
            }
          }
        }
        try await group.waitForAll()
      }
      poll = try #require(try await store.poll("hot", viewer: nil))
      #expect(poll.results.total == 24)
      #expect(poll.results.percentages.reduce(0, +) == 100)
      var ballots = [0, 0]
      for voter in voters {
        let choice = try #require(try await store.poll("hot", viewer: UserID(voter))?.myChoice)
        ballots[choice.rawValue] += 1
        #expect(try await store.points(of: UserID(voter), limit: 10).balance == 3)
      }
      #expect(poll.results.counts == ballots)
    }
  }

  @Test(arguments: StoreEngine.all)
  func commentsPageHideAndDelete(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris", "clara"])
      _ = try await store.createPoll(try makePoll("tea", author: "anna", at: 10), closesAt: nil, reward: 0, now: 10)
      for index in 0..<15 {
        let author: UserID = index % 2 == 0 ? "boris" : "clara"
        let view = try await store.addComment(
          try PollComment(
            id: CommentID("c\(index)"), pollID: "tea", authorID: author, text: " #\(index) ",
            createdAt: 100 + Int64(index / 2)))
        #expect(view.comment.text == "#\(index)" && view.author.id == author)
      }
      #expect(try await store.poll("tea", viewer: nil)?.comments == 15)
      var seen: [String] = []
      var cursor: String?
      repeat {
        let page = try await store.comments(of: "tea", viewer: nil, cursor: cursor, limit: 4)
        seen += page.items.map(\.id.rawValue)
        cursor = page.nextCursor
      } while cursor != nil
      #expect(
        seen
          == (0..<15).map { "c\($0)" }.sorted { a, b in
            let (x, y) = (Int(a.dropFirst())!, Int(b.dropFirst())!)
            return (x / 2, a) < (y / 2, b)
          })
      // The poll's author hides one (others no longer see it; its author still does); boris can't hide on anna's.
      // Named with another poll, a comment is not found (by its author nor by an operator).
      #expect(try await !store.setCommentHidden("c1", on: "coffee", hidden: true, by: "anna"))
      #expect(try await !store.setCommentHidden("c1", on: "coffee", hidden: true, by: nil))
      #expect(try await store.setCommentHidden("c1", on: "tea", hidden: true, by: "anna"))
      #expect(try await !store.setCommentHidden("c2", on: "tea", hidden: true, by: "boris"))
      #expect(try await store.comments(of: "tea", viewer: "boris", cursor: nil, limit: 100).items.count == 14)
      let claras = try await store.comments(of: "tea", viewer: "clara", cursor: nil, limit: 100).items
      #expect(claras.count == 15 && claras.contains { $0.id == "c1" && $0.hidden })
      #expect(try await store.poll("tea", viewer: nil)?.comments == 14)
      // Delete own only.
      #expect(try await !store.deleteComment("c0", on: "tea", by: "clara"))
      #expect(try await !store.deleteComment("c0", on: "coffee", by: "boris"))
      #expect(try await store.deleteComment("c0", on: "tea", by: "boris"))
      #expect(try await store.comments(of: "tea", viewer: "boris", cursor: nil, limit: 100).items.count == 13)
      // A deleted poll takes no comments.
      #expect(try await store.deletePoll("tea") == [])
      await #expect(throws: PollStoreError.pollNotFound("tea")) {
        try await store.addComment(
          try PollComment(id: "late", pollID: "tea", authorID: "boris", text: "hi", createdAt: 200))
      }
      await #expect(throws: PollStoreError.pollNotFound("tea")) {
        try await store.comments(of: "tea", viewer: nil, cursor: nil, limit: 10)
      }
      #expect(try await store.deletePoll("tea") == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func ledgerIsTheBalanceAndGrantsNeverOverdraw(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna"])
      #expect(try await store.points(of: "anna", limit: 10) == PointsStatement(balance: 0, entries: []))
      _ = try await store.grantPoints(50, to: "anna", note: "welcome", now: 10)
      _ = try await store.grantPoints(-20, to: "anna", note: "correction", now: 11)
      await #expect(throws: PointsError.notEnoughPoints(balance: 30, required: 31)) {
        try await store.grantPoints(-31, to: "anna", note: "too much", now: 12)
      }
      await #expect(throws: PointsError.invalidAmount(0)) {
        try await store.grantPoints(0, to: "anna", note: "nothing", now: 12)
      }
      await #expect(throws: PollStoreError.userNotFound("nobody")) {
        try await store.grantPoints(5, to: "nobody", note: "", now: 12)
      }
      let statement = try await store.points(of: "anna", limit: 10)
      #expect(statement.balance == 30)
      #expect(statement.entries.map(\.amount) == [-20, 50])
      #expect(statement.entries.allSatisfy { $0.reason == .adjustment && $0.userID == "anna" })
      #expect(statement.entries.map(\.amount).reduce(0, +) == statement.balance)
    }
  }

  @Test(arguments: StoreEngine.all)
  func purchasesAreWholeIdempotentAndRefusedClearly(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris"])
      let offer = CouponOffer(
        id: "coffee", shopName: "Lviv Coffee", title: "−20 % on coffee", discountPercent: 20, price: 30,
        validUntil: 10_000)
      let listing = try await store.upsertCouponOffer(offer, description: "Any coffee", stock: 2, now: 1)
      #expect(listing == CouponListing(offer: offer, description: "Any coffee", stock: 2, sold: 0))
      // Not enough points: a clear error, nothing changes.
      _ = try await store.grantPoints(40, to: "anna", note: "", now: 2)
      _ = try await store.grantPoints(100, to: "boris", note: "", now: 2)
      await #expect(throws: PointsError.notEnoughPoints(balance: 0, required: 30)) {
        try await store.purchaseCoupon("coffee", user: "nobody", couponID: "x", code: "X", requestKey: nil, now: 3)
      }
      let bought = try await store.purchaseCoupon(
        "coffee", user: "anna", couponID: "k1", code: "CODE-1", requestKey: "key-1", now: 3)
      #expect(
        bought
          == CouponPurchase(
            coupon: Coupon(id: "k1", offerID: "coffee", userID: "anna", code: "CODE-1", purchasedAt: 3), balance: 10))
      // The same request again: the same coupon, nothing spent.
      let replay = try await store.purchaseCoupon(
        "coffee", user: "anna", couponID: "k9", code: "CODE-9", requestKey: "key-1", now: 4)
      #expect(replay == bought)
      await #expect(throws: PointsError.notEnoughPoints(balance: 10, required: 30)) {
        try await store.purchaseCoupon(
          "coffee", user: "anna", couponID: "k2", code: "CODE-2", requestKey: "key-2", now: 4)
      }
      #expect(try await store.points(of: "anna", limit: 10).balance == 10)
      #expect(try await store.coupons(of: "anna") == [bought.coupon])
      // A taken code is refused whole: boris keeps his points and the stock stays.
      await #expect(throws: PollStoreError.codeTaken) {
        try await store.purchaseCoupon("coffee", user: "boris", couponID: "k3", code: "CODE-1", requestKey: nil, now: 5)
      }
      #expect(try await store.points(of: "boris", limit: 10).balance == 100)
      #expect(try await store.couponOffers(validAt: 5).first?.sold == 1)
      _ = try await store.purchaseCoupon(
        "coffee", user: "boris", couponID: "k3", code: "CODE-3", requestKey: nil, now: 5)
      await #expect(throws: PollStoreError.outOfStock("coffee")) {
        try await store.purchaseCoupon("coffee", user: "boris", couponID: "k4", code: "CODE-4", requestKey: nil, now: 6)
      }
      #expect(try await store.points(of: "boris", limit: 10).balance == 70)
      // Expired and unknown offers.
      _ = try await store.upsertCouponOffer(offer, description: "Any coffee", stock: 10, now: 7)
      await #expect(throws: PointsError.offerExpired) {
        try await store.purchaseCoupon(
          "coffee", user: "boris", couponID: "k5", code: "CODE-5", requestKey: nil, now: 10_000)
      }
      await #expect(throws: PollStoreError.offerNotFound("tea")) {
        try await store.purchaseCoupon("tea", user: "boris", couponID: "k5", code: "CODE-5", requestKey: nil, now: 8)
      }
      #expect(try await store.couponOffers(validAt: 10_000).isEmpty)
      #expect(try await store.couponOffers(validAt: nil).map(\.stock) == [10])
      // Stock never below what was sold.
      #expect(try await store.upsertCouponOffer(offer, description: "", stock: 0, now: 9).stock == 2)
      #expect(try await store.couponStats() == [CouponStats(offerId: "coffee", stock: 2, bought: 2, redeemed: 0)])
      let ledger = try await store.points(of: "boris", limit: 10)
      #expect(ledger.entries.map(\.amount) == [-30, 100])
      #expect(ledger.entries.first?.reason == .couponPurchase && ledger.entries.first?.reference == "k3")
    }
  }

  @Test(arguments: StoreEngine.all)
  func simultaneousPurchasesWithPointsForOneBuyOne(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let buyers = (0..<6).map { "b\($0)" }
      try await makeUsers(store, ["anna"] + buyers)
      _ = try await store.upsertCouponOffer(
        CouponOffer(id: "cake", shopName: "Bakery", title: "Cake", price: 25), description: "", stock: 100, now: 1)
      _ = try await store.grantPoints(40, to: "anna", note: "", now: 2)
      let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
        for index in 0..<12 {
          group.addTask {
            do {
              _ = try await store.purchaseCoupon(
                "cake", user: "anna", couponID: CouponID("a\(index)"), code: "A-\(index)", requestKey: "r\(index)",
                now: 3)
              return true
            } catch PointsError.notEnoughPoints(let balance, let required) {
              #expect(balance == 15 && required == 25)
              return false
            }
          }
        }
        return try await group.reduce(into: [Bool]()) { $0.append($1) }
      }
      #expect(outcomes.count(where: { $0 }) == 1)
      let anna = try await store.points(of: "anna", limit: 100)
      #expect(anna.balance == 15 && anna.entries.map(\.amount).reduce(0, +) == 15)
      #expect(try await store.coupons(of: "anna").count == 1)

      // Six buyers at once for the last three coupons: three get one, three hear "sold out".
      _ = try await store.upsertCouponOffer(
        CouponOffer(id: "last", shopName: "Bakery", title: "Last", price: 10), description: "", stock: 3, now: 4)
      for buyer in buyers { _ = try await store.grantPoints(10, to: UserID(buyer), note: "", now: 4) }
      let sold = try await withThrowingTaskGroup(of: Bool.self) { group in
        for buyer in buyers {
          group.addTask {
            do {
              _ = try await store.purchaseCoupon(
                "last", user: UserID(buyer), couponID: CouponID("c-\(buyer)"), code: "L-\(buyer)", requestKey: nil,
                now: 5)
              return true
            } catch PollStoreError.outOfStock {
              return false
            }
          }
        }
        return try await group.reduce(into: [Bool]()) { $0.append($1) }
      }
      #expect(sold.count(where: { $0 }) == 3)
      var balances = 0
      for buyer in buyers { balances += try await store.points(of: UserID(buyer), limit: 1).balance }
      #expect(balances == 30)  // 6 × 10 granted, 3 × 10 spent
      #expect(try await store.couponStats().first { $0.offerId == "last" }?.bought == 3)
    }
  }

  @Test(arguments: StoreEngine.all)
  func deletingAPollFreesItsImagesAndDeletingAUserKeepsCounts(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris", "clara"])
      let (a, b, c) = (
        String(repeating: "a", count: 64), String(repeating: "b", count: 64), String(repeating: "c", count: 64)
      )
      _ = try await store.createPoll(
        try makePoll("one", author: "anna", at: 1, images: ("/v1/blobs/\(a)", "/v1/blobs/\(b)")), closesAt: nil,
        reward: 0, now: 1)
      _ = try await store.createPoll(
        try makePoll("two", author: "anna", at: 2, images: ("/v1/blobs/\(b)", nil)), closesAt: nil, reward: 0, now: 2)
      var clara = try #require(try await store.profile("clara"))
      clara.avatar = "/v1/blobs/\(c)"
      try await store.saveProfile(clara)
      _ = try await store.createPoll(
        try makePoll("three", author: "anna", at: 3, images: ("/v1/blobs/\(c)", nil)), closesAt: nil, reward: 0, now: 3)
      #expect(try await store.deletePoll("one") == [a])  // b is still used by "two"
      #expect(try await store.deletePoll("three") == [])  // c is clara's avatar

      _ = try await store.vote("two", user: "boris", choice: .first, reward: 1, now: 5)
      _ = try await store.vote("two", user: "clara", choice: .second, reward: 1, now: 5)
      _ = try await store.addComment(
        try PollComment(id: "c1", pollID: "two", authorID: "boris", text: "Tea!", createdAt: 6))
      _ = try await store.deleteUser("boris", dryRun: false, batchSize: 100)
      let two = try #require(try await store.poll("two", viewer: nil))
      #expect(two.results.counts == [1, 1])  // boris's vote stays counted
      #expect(two.comments == 0)
      #expect(try await store.points(of: "boris", limit: 10).balance == 0)
      // A deleted author's polls go with them.
      _ = try await store.deleteUser("anna", dryRun: false, batchSize: 100)
      #expect(try await store.poll("two", viewer: nil) == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func closingAPollKeepsAnEarlierCloseAndRefusesVotes(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris"])
      _ = try await store.createPoll(try makePoll("open", author: "anna", at: 10), closesAt: nil, reward: 0, now: 10)
      _ = try await store.createPoll(try makePoll("soon", author: "anna", at: 10), closesAt: 50, reward: 0, now: 10)
      _ = try await store.vote("open", user: "boris", choice: .first, reward: 1, now: 20)
      #expect(try await store.closePoll("open", now: 100))
      #expect(try await store.closePoll("open", now: 200))  // closing again keeps the first close
      #expect(try await store.poll("open", viewer: nil)?.closesAt == 100)
      await #expect(throws: PollStoreError.pollClosed("open")) {
        try await store.vote("open", user: "boris", choice: .second, reward: 1, now: 100)
      }
      #expect(try await store.poll("open", viewer: "boris")?.results.counts == [1, 0])
      #expect(try await store.closePoll("soon", now: 100))
      #expect(try await store.poll("soon", viewer: nil)?.closesAt == 50)
      #expect(try await !store.closePoll("nope", now: 100))
    }
  }

  @Test(arguments: StoreEngine.all)
  func blobReferencesAreAvatarsAndPollImages(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await makeUsers(store, ["anna", "boris"])
      let (a, b, c, d) = (
        String(repeating: "a", count: 64), String(repeating: "b", count: 64), String(repeating: "c", count: 64),
        String(repeating: "d", count: 64)
      )
      var anna = try #require(try await store.profile("anna"))
      anna.avatar = "/v1/blobs/\(a)"
      try await store.saveProfile(anna)
      _ = try await store.createPoll(
        try makePoll("one", author: "anna", at: 1, images: ("/v1/blobs/\(b)", "/v1/blobs/\(c)")), closesAt: nil,
        reward: 0, now: 1)
      _ = try await store.createPoll(
        try makePoll("two", author: "boris", at: 2, images: ("/v1/blobs/\(c)", "https://example.com/x.png")),
        closesAt: nil, reward: 0, now: 2)
      #expect(try await store.blobReferences(of: "anna") == [a, b, c])
      #expect(try await store.blobReferences(of: "boris") == [c])
      #expect(try await store.unreferencedBlobs([d, c, b, a, "not-a-hash"]) == [d])
      // The avatar replaced is no longer referred to.
      anna.avatar = "/v1/blobs/\(d)"
      try await store.saveProfile(anna)
      #expect(try await store.unreferencedBlobs([a, d]) == [a])
      // After the account goes, only what others use stays referred to.
      let referenced = try await store.blobReferences(of: "anna")
      _ = try await store.deleteUser("anna", dryRun: false, batchSize: 100)
      #expect(try await store.unreferencedBlobs(referenced) == [b, d])
    }
  }

  @Test(arguments: StoreEngine.all)
  func blobsAreContentAddressed(_ engine: StoreEngine) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    try await engine.with { store in
      let blobs = store.databaseBlobs ?? FileBlobStore(directory: directory)
      let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 100))
      #expect(BlobKind(sniffing: png) == .png)
      let hash = try await blobs.putBlob(png, kind: .png, now: 1)
      // SHA-256 of the bytes, as `sha256sum` prints it.
      #expect(hash == SecretHash.sha256(png) && BlobKind.isHash(hash))
      #expect(try await blobs.putBlob(png, kind: .png, now: 2) == hash)
      #expect(try await blobs.hasBlob(hash))
      #expect(try await blobs.blob(hash) == StoredBlob(hash: hash, kind: .png, data: png))
      #expect(try await blobs.blob(String(repeating: "0", count: 64)) == nil)
      #expect(try await blobs.blob("../etc/passwd") == nil)
      #expect(try await blobs.deleteBlob(hash))
      #expect(try await !blobs.deleteBlob(hash))
      #expect(try await blobs.blob(hash) == nil)
      #expect(try await !blobs.hasBlob(hash))
    }
  }
}

import DomainKitTesting
import Foundation
import GeoKit
import Testing

@testable import DomainKit

@Suite struct PollTests {
  @Test func percentagesNeverNaNAndSumTo100() {
    #expect(PollResults(counts: [0, 0]).percentages == [0, 0])
    #expect(PollResults(counts: [1, 2]).percentages == [33, 67])
    #expect(PollResults(counts: [2, 1]).percentages == [67, 33])
    #expect(PollResults(counts: [1, 1]).percentages == [50, 50])
    #expect(PollResults(counts: [0, 7]).percentages == [0, 100])
    #expect(PollResults.largestRemainder([1, 1, 1]) == [34, 33, 33])
    var rng = SplitMix64(seed: 42)
    for _ in 0..<1000 {
      let counts = (0..<Int.random(in: 2...6, using: &rng)).map { _ in Int.random(in: 0...1000, using: &rng) }
      let percentages = PollResults.largestRemainder(counts)
      let total = counts.reduce(0, +)
      #expect(percentages.reduce(0, +) == (total == 0 ? 0 : 100))
      for (count, percent) in zip(counts, percentages) where total > 0 {
        #expect(abs(Double(percent) - Double(count) * 100 / Double(total)) < 1)
      }
    }
  }

  @Test func oneVotePerUser() throws {
    var ballot = Ballot(pollID: "p")
    try ballot.cast(Vote(pollID: "p", userID: "a", choice: .first, createdAt: 1))
    try ballot.cast(Vote(pollID: "p", userID: "b", choice: .second, createdAt: 2))
    #expect(throws: PollError.alreadyVoted("a")) {
      try ballot.cast(Vote(pollID: "p", userID: "a", choice: .second, createdAt: 3))
    }
    #expect(ballot.results == PollResults(counts: [1, 1]))
  }

  @Test func pollValidation() throws {
    let a = PollOption(text: "Tea")
    let b = PollOption(text: "Coffee", imageURL: "https://x/c.png")
    _ = try Poll(id: "p", authorID: "u", title: String(repeating: "t", count: 255), first: a, second: b, createdAt: 0)
    #expect(throws: PollError.invalidText(field: "title", .tooLong(maximum: 255))) {
      try Poll(id: "p", authorID: "u", title: String(repeating: "t", count: 256), first: a, second: b, createdAt: 0)
    }
    #expect(throws: PollError.invalidText(field: "title", .empty)) {
      try Poll(id: "p", authorID: "u", title: "  ", first: a, second: b, createdAt: 0)
    }
    #expect(throws: PollError.invalidText(field: "description", .tooLong(maximum: 500))) {
      try Poll(
        id: "p", authorID: "u", title: "t", description: String(repeating: "d", count: 501), first: a, second: b,
        createdAt: 0)
    }
    #expect(throws: PollError.invalidText(field: "options[1].text", .empty)) {
      try Poll(id: "p", authorID: "u", title: "t", first: a, second: PollOption(text: ""), createdAt: 0)
    }
    #expect(throws: PollError.invalidText(field: "text", .empty)) {
      try PollComment(id: "c", pollID: "p", authorID: "u", text: " ", createdAt: 0)
    }
  }
}

@Suite struct PointsTests {
  @Test func balanceAndPurchase() throws {
    var ledger = PointsLedger(userID: "u")
    let rewards = PointsRewards()
    try ledger.earn(rewards.pollPosted, reason: .pollPosted, id: "e1", at: 1)
    try ledger.earn(rewards.voted, reason: .voted, id: "e2", at: 2)
    #expect(ledger.balance == 11)
    let offer = CouponOffer(id: "o", shopName: "Shop", title: "-10%", discountPercent: 10, price: 12)
    #expect(throws: PointsError.notEnoughPoints(balance: 11, required: 12)) {
      try ledger.purchase(offer, couponID: "c", code: "X", entryID: "e3", at: 3)
    }
    #expect(ledger.balance == 11 && ledger.entries.count == 2)
    #expect(PointsError.notEnoughPoints(balance: 11, required: 12).description.contains("Not enough points"))
    try ledger.earn(1, reason: .voted, id: "e4", at: 4)
    let coupon = try ledger.purchase(offer, couponID: "c", code: "X", entryID: "e5", at: 5)
    #expect(coupon.offerID == "o" && ledger.balance == 0)
    #expect(ledger.entries.last?.amount == -12)
    #expect(throws: PointsError.invalidAmount(0)) { try ledger.earn(0, reason: .voted, id: "e6", at: 6) }
    let expired = CouponOffer(id: "o2", shopName: "S", title: "t", price: 0, validUntil: 10)
    #expect(throws: PointsError.offerExpired) {
      try ledger.purchase(expired, couponID: "c2", code: "Y", entryID: "e7", at: 10)
    }
  }
}

@Suite struct PlaceDirectoryTests {
  static func place(_ id: PlaceID, parent: PlaceID? = nil, lat: Double = 50, name: String? = nil) -> Place {
    try! Place(
      id: id, parentID: parent, kind: .faculty, name: LocalizedText(["en": name ?? id.rawValue]),
      location: Coordinate(uncheckedLatitude: lat, longitude: 30), city: "Kyiv")
  }

  static func review(_ place: PlaceID, _ grade: Int, _ n: Int) throws -> Review {
    try Review(id: ReviewID("\(place)-\(n)"), placeID: place, authorID: "u", grade: grade, createdAt: 0)
  }

  @Test func aggregatesSumAndCountNotAverageOfAverages() throws {
    let places = [
      Self.place("uni"), Self.place("fac1", parent: "uni"), Self.place("fac2", parent: "uni"),
      Self.place("prog", parent: "fac1"),
    ]
    // fac1 subtree: 5, 5, 5 (avg 5); fac2: 1 (avg 1). Average of averages would be 3; correct is 16/4 = 4.
    let reviews = try [
      Self.review("fac1", 5, 1), Self.review("prog", 5, 2), Self.review("prog", 5, 3), Self.review("fac2", 1, 4),
    ]
    let ratings = PlaceDirectory.aggregateRatings(places: places, reviews: reviews)
    #expect(ratings["uni"] == RatingAggregate(sum: 16, count: 4))
    #expect(ratings["uni"]?.average == 4)
    #expect(ratings["fac1"] == RatingAggregate(sum: 15, count: 3))
    #expect(ratings["prog"] == RatingAggregate(sum: 10, count: 2))
    #expect(RatingAggregate().average == nil)
  }

  @Test func cyclesDoNotLoop() throws {
    let places = [Self.place("a", parent: "b"), Self.place("b", parent: "a")]
    let ratings = PlaceDirectory.aggregateRatings(places: places, reviews: [try Self.review("a", 4, 1)])
    #expect(ratings["a"]?.count == 1 && ratings["b"]?.count == 1)
  }

  @Test func paging() throws {
    let items = Array(0..<25)
    let page1 = Page(items, request: PageRequest())
    #expect(page1.items == Array(0..<10) && page1.pageSize == 10 && page1.total == 25 && page1.hasMore)
    let page3 = Page(items, request: PageRequest(page: 3))
    #expect(page3.items.count == 5 && !page3.hasMore)
    #expect(Page(items, request: PageRequest(page: 9)).items.isEmpty)
    #expect(PageRequest(page: -2, pageSize: 1000) == PageRequest(page: 1, pageSize: 100))
  }

  @Test func localizedNamesKeepEarlierTranslationsAndSearch() throws {
    var name = LocalizedText(["en": "Kyiv Polytechnic"])
    name.set("КПІ", for: "uk")
    name.set("КПИ", for: "ru")
    #expect(name.values.count == 3)
    #expect(name.resolved(for: ["uk-UA"]) == "КПІ")
    #expect(name.resolved(for: ["de"]) == "Kyiv Polytechnic")
    let place = try Place(id: "p", kind: .university, name: name, keywords: ["engineering"])
    #expect(place.matches(query: "polytech") && place.matches(query: "кпі") && place.matches(query: "ENGINEER"))
    #expect(!place.matches(query: "medicine"))
    let data = try JSONEncoder().encode(place)
    #expect(try JSONDecoder().decode(Place.self, from: data) == place)
  }

  @Test func newsFeed() {
    let items = [
      NewsItem(id: "1", placeID: "a", title: .init(), body: .init(), publishedAt: 1),
      NewsItem(id: "2", placeID: "b", title: .init(), body: .init(), publishedAt: 3),
      NewsItem(id: "3", placeID: nil, title: .init(), body: .init(), publishedAt: 2),
    ]
    #expect(NewsItem.feed(items, selected: nil).map(\.id) == ["2", "3", "1"])
    #expect(NewsItem.feed(items, selected: ["a"]).map(\.id) == ["3", "1"])
  }
}

@Suite struct PromotionTests {
  let kyiv = TimeZone(identifier: "Europe/Kyiv")!
  let venue = try! Place(
    id: "cafe", kind: .venue, name: LocalizedText(["en": "Café"]),
    location: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52), venueType: "cafe", timeZone: "Europe/Kyiv")

  func ms(_ text: String) -> Int64 { Timestamp.parseISO8601(text)! }

  func pass(_ time: String, metres: Double = 50) -> LocationFix {
    try! LocationFix(timestamp: ms(time), latitude: 50.45 + metres / 111_195, longitude: 30.52)
  }

  @Test func windowsIncludingMidnightCrossing() throws {
    let morning = try TimeOfDayWindow(from: (7, 0), to: (11, 0))
    #expect(morning.contains(minuteOfDay: 7 * 60) && !morning.contains(minuteOfDay: 11 * 60))
    let night = try TimeOfDayWindow(from: (22, 0), to: (2, 0))
    #expect(
      night.contains(minuteOfDay: 23 * 60) && night.contains(minuteOfDay: 60) && !night.contains(minuteOfDay: 2 * 60))
    #expect(!night.contains(minuteOfDay: 12 * 60))
    // 05:30 UTC in summer is 08:30 in Kyiv.
    #expect(morning.contains(ms("2026-07-01T05:30:00Z"), in: kyiv))
    #expect(!morning.contains(ms("2026-07-01T08:30:00Z"), in: kyiv))
    #expect(night.contains(ms("2026-07-01T21:30:00Z"), in: kyiv))  // 00:30 local
    #expect(throws: FixValidationError.self) { try TimeOfDayWindow(start: 1440, end: 0) }
    let promo = Promotion(
      id: "p", venueID: "cafe", name: "Coffee", promoCode: "AM", oldPrice: Money(amount: 6000, currency: "UAH"),
      newPrice: Money(amount: 4500, currency: "UAH"), audience: .special, validUntil: ms("2026-08-01T00:00:00Z"),
      window: morning)
    #expect(promo.isActive(at: ms("2026-07-01T05:30:00Z"), timeZone: kyiv))
    #expect(!promo.isActive(at: ms("2026-08-02T05:30:00Z"), timeZone: kyiv))
  }

  @Test func eligibilityCountsDistinctLocalDaysWithoutVisits() {
    let rule = PromotionEligibility(radius: 150, minimumDays: 3, lookbackDays: 7)
    let now = ms("2026-07-10T12:00:00Z")
    // 22:30Z on the 6th is 01:30 on the 7th in Kyiv: the first two passes fall on the same local day.
    let fixes = [
      pass("2026-07-06T22:30:00Z"), pass("2026-07-07T10:00:00Z"), pass("2026-07-08T08:00:00Z"),
      pass("2026-07-09T09:00:00Z", metres: 500), pass("2026-07-09T20:30:00Z"),
    ]
    #expect(rule.passDays(fixes: fixes, venue: venue.location!, timeZone: kyiv, now: now).count == 3)
    #expect(rule.isEligible(fixes: fixes, visits: [], venue: venue, now: now))
    // Counted in UTC days the same passes would be 4 days: the venue's time zone matters.
    #expect(
      rule.passDays(fixes: fixes, venue: venue.location!, timeZone: TimeZone(identifier: "UTC")!, now: now).count == 4)
    #expect(
      !PromotionEligibility(radius: 150, minimumDays: 4, lookbackDays: 7).isEligible(
        fixes: fixes, visits: [], venue: venue, now: now))
    // Too few days.
    #expect(!rule.isEligible(fixes: Array(fixes.prefix(2)), visits: [], venue: venue, now: now))
    // A visit in the period makes them ineligible.
    let visit = Visit(
      placeID: "cafe", location: venue.location!, arrival: ms("2026-07-09T10:00:00Z"),
      departure: ms("2026-07-09T10:30:00Z"), fixCount: 5)
    #expect(!rule.isEligible(fixes: fixes, visits: [visit], venue: venue, now: now))
    // Passes older than the lookback do not count.
    let old = PromotionEligibility(radius: 150, minimumDays: 3, lookbackDays: 3)
    #expect(!old.isEligible(fixes: fixes, visits: [], venue: venue, now: now))
  }

  @Test func reloadThreshold() {
    let a = Coordinate(uncheckedLatitude: 50, longitude: 30)
    #expect(shouldReloadVenues(from: nil, to: a))
    #expect(!shouldReloadVenues(from: a, to: Coordinate(uncheckedLatitude: 50 + 99 / 111_195.0, longitude: 30)))
    #expect(shouldReloadVenues(from: a, to: Coordinate(uncheckedLatitude: 50 + 101 / 111_195.0, longitude: 30)))
  }
}

@Suite struct CredentialTests {
  @Test(arguments: ["anna@example.com", " Anna.K+tag@Mail.Example.UA ", "x@sub-domain.example.co.uk"])
  func validEmails(_ email: String) throws {
    _ = try EmailAddress.validate(email)
  }

  @Test func normalizesDomainCase() throws {
    #expect(try EmailAddress.validate(" Anna@Example.COM ") == "Anna@example.com")
  }

  @Test(arguments: [
    ("", CredentialError.emailEmpty), ("anna.example.com", .emailMissingAt), ("a@b@c.com", .emailMissingAt),
    ("@example.com", .emailMissingLocalPart), ("anna@localhost", .emailInvalidDomain),
    ("anna@exa mple.com", .emailInvalidCharacters), ("anna@-x.com", .emailInvalidDomain),
    ("an..na@example.com", .emailInvalidCharacters), ("anna@example.c", .emailInvalidDomain),
  ])
  func invalidEmails(_ email: String, _ expected: CredentialError) {
    #expect(throws: expected) { try EmailAddress.validate(email) }
  }

  @Test func passwords() throws {
    try PasswordRules.validate("correct horse")
    try PasswordRules.validate("пароль12")  // 8 characters, 14 bytes
    try PasswordRules.validate(String(repeating: "a", count: 71) + "b")  // 72 bytes: all that bcrypt reads
    #expect(throws: CredentialError.passwordTooLong(maximumBytes: 72)) {
      try PasswordRules.validate(String(repeating: "a", count: 72) + "b")
    }
    // 37 Cyrillic letters are 74 bytes: the limit is bcrypt's bytes, not characters.
    #expect(throws: CredentialError.passwordTooLong(maximumBytes: 72)) {
      try PasswordRules.validate(String(repeating: "ж", count: 37))
    }
    #expect(throws: CredentialError.passwordTooCommon) { try PasswordRules.validate("12345678") }
    #expect(throws: CredentialError.passwordTooCommon) { try PasswordRules.validate("Password1") }
    #expect(throws: CredentialError.passwordTooCommon) { try PasswordRules.validate(" qwertyuiop ") }
    #expect(throws: CredentialError.passwordControlCharacters) {
      try PasswordRules.validate("\u{01}\u{02}\u{03}\u{04}\u{05}\u{06}\u{07}\u{08}")
    }
    #expect(throws: CredentialError.passwordControlCharacters) { try PasswordRules.validate("secret\0horse") }
    #expect(PasswordRules.commonPasswords.allSatisfy { $0.count >= PasswordRules.minimumLength })
    #expect(throws: CredentialError.passwordTooShort(minimum: 8)) { try PasswordRules.validate("1234567") }
    #expect(throws: CredentialError.passwordBlank) { try PasswordRules.validate("         ") }
    #expect(CredentialError.passwordTooShort(minimum: 8).description == "Your password needs at least 8 characters.")
  }

  @Test func phones() throws {
    #expect(try PhoneNumber.normalize("+380 (67) 123-45-67") == "+380671234567")
    #expect(try PhoneNumber.normalize("00380671234567") == "+380671234567")
    #expect(throws: CredentialError.phoneInvalid) { try PhoneNumber.normalize("0671234567") }
    #expect(throws: CredentialError.phoneInvalid) { try PhoneNumber.normalize("+12ab") }
  }
}

@Suite struct VisitTests {
  @Test func visitCountsByAdministrativeLevel() {
    func place(_ id: PlaceID, _ kind: PlaceKind, _ parent: PlaceID?) -> Place {
      try! Place(id: id, parentID: parent, kind: kind, name: LocalizedText(["en": id.rawValue]))
    }
    let places = [
      place("UA", .country, nil), place("PL", .country, nil), place("kyiv-obl", .region, "UA"),
      place("kyiv", .locality, "kyiv-obl"), place("lviv", .locality, "UA"), place("krakow", .locality, "PL"),
      place("cafe", .venue, "kyiv"),
    ]
    let here = Coordinate(uncheckedLatitude: 0, longitude: 0)
    let visits = ["cafe", "kyiv", "lviv", "krakow", "cafe", nil].map {
      Visit(placeID: $0.map { PlaceID($0) }, location: here, arrival: 0, departure: 1, fixCount: 1)
    }
    let countries = PlaceDirectory.visitCounts(places: places, visits: visits, kind: .country)
    #expect(countries.map(\.place.id) == ["UA", "PL"] && countries.map(\.visits) == [4, 1])
    let localities = PlaceDirectory.visitCounts(places: places, visits: visits, kind: .locality)
    #expect(localities.map(\.place.id) == ["kyiv", "krakow", "lviv"] && localities.map(\.visits) == [3, 1, 1])
  }

  @Test func detectsStays() throws {
    var fixes: [LocationFix] = []
    // 10 minutes at home (jitter 20 m), a 2-minute walk away, 6 minutes at work.
    for i in 0..<11 {
      fixes.append(try LocationFix(timestamp: Int64(i) * 60_000, latitude: 50 + Double(i % 2) * 0.0002, longitude: 30))
    }
    for i in 1...2 {
      fixes.append(try LocationFix(timestamp: Int64(10 + i) * 60_000, latitude: 50 + Double(i) * 0.005, longitude: 30))
    }
    for i in 0..<7 {
      fixes.append(try LocationFix(timestamp: Int64(13 + i) * 60_000, latitude: 50.02, longitude: 30))
    }
    let visits = VisitDetector().visits(in: fixes)
    #expect(visits.count == 2)
    #expect(visits[0].arrival == 0 && visits[0].departure == 600_000 && visits[0].fixCount == 11)
    #expect(visits[1].arrival == 13 * 60_000 && visits[1].duration == 6 * 60_000)
  }
}

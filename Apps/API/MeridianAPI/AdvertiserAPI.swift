import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: Advertisers (people with the advertiser role for venues)

  /// `GET /v1/advertiser/venues`: the venues the caller advertises for.
  public static let advertiserVenues = Endpoint<Void, NoBody, AdvertiserVenues>(.get, "/v1/advertiser/venues")
  /// `GET /v1/advertiser/venues/{id}/promotions`: every promotion of one of the caller's venues, any state.
  public static let advertiserPromotions = Endpoint<VenueRef, NoBody, AdvertisedPromotions>(
    .get, "/v1/advertiser/venues/\(\.id, "id")/promotions")
  /// `POST /v1/advertiser/venues/{id}/promotions`: a new promotion of one of the caller's venues, running.
  public static let createAdvertisedPromotion = Endpoint<VenueRef, PromotionDraft, AdvertisedPromotion>(
    .post, "/v1/advertiser/venues/\(\.id, "id")/promotions")
  /// `PUT /v1/advertiser/promotions/{id}`: replaces a promotion's fields (its state stays; an ended one can't change).
  public static let updateAdvertisedPromotion = Endpoint<PromotionRef, PromotionDraft, AdvertisedPromotion>(
    .put, "/v1/advertiser/promotions/\(\.id, "id")")
  /// `PUT /v1/advertiser/promotions/{id}/state {state}`: pauses, resumes or ends a promotion (ending is final).
  public static let setAdvertisedPromotionState = Endpoint<PromotionRef, PromotionStateChange, AdvertisedPromotion>(
    .put, "/v1/advertiser/promotions/\(\.id, "id")/state")
  /// `GET /v1/advertiser/promotions/{id}/audience`: how many people qualify for a special promotion now (a count,
  /// "< 5" below five people).
  public static let advertisedPromotionAudience = Endpoint<PromotionRef, NoBody, PromotionAudienceSize>(
    .get, "/v1/advertiser/promotions/\(\.id, "id")/audience")
}

/// Where a promotion is in its life: only running ones are shown and redeemed.
public enum PromotionState: String, Sendable, Hashable, Codable, CaseIterable {
  /// Shown (within its validity and daily window) and redeemable.
  case running
  /// Held back by the advertiser; can run again.
  case paused
  /// Over for good.
  case ended
}

/// What an advertiser sets on a promotion beside its DomainKit fields: its state and who its special audience is.
public struct PromotionSettings: Sendable, Hashable, Codable {
  /// The state.
  public var state: PromotionState
  /// Who qualifies for it when it is special: passing distance, passes on how many days within how many days, and
  /// no visit within those days.
  public var eligibility: PromotionEligibility

  /// Settings; running with DomainKit's default rule (150 m, 3 of 14 days) unless given.
  public init(state: PromotionState = .running, eligibility: PromotionEligibility = PromotionEligibility()) {
    self.state = state
    self.eligibility = eligibility
  }
}

/// `GET /v1/advertiser/venues`.
public struct AdvertiserVenues: Sendable, Hashable, Codable {
  /// The venues, by id.
  public var venues: [Venue]
  /// A list.
  public init(venues: [Venue]) { self.venues = venues }
}

/// A promotion as its advertiser sees it. Wire names: `promotion`, `state`, `eligibility`.
public struct AdvertisedPromotion: Sendable, Hashable, Codable {
  /// The promotion.
  public var promotion: Promotion
  /// Its state.
  public var state: PromotionState
  /// Its special-audience rule.
  public var eligibility: PromotionEligibility

  /// A promotion with its settings.
  public init(promotion: Promotion, settings: PromotionSettings) {
    self.promotion = promotion
    self.state = settings.state
    self.eligibility = settings.eligibility
  }

  /// The settings part.
  public var settings: PromotionSettings { PromotionSettings(state: state, eligibility: eligibility) }
}

/// `GET /v1/advertiser/venues/{id}/promotions`.
public struct AdvertisedPromotions: Sendable, Hashable, Codable {
  /// The venue.
  public var venueId: PlaceID
  /// Its promotions, by id.
  public var promotions: [AdvertisedPromotion]
  /// A list.
  public init(venueId: PlaceID, promotions: [AdvertisedPromotion]) {
    self.venueId = venueId
    self.promotions = promotions
  }
}

/// `PUT /v1/advertiser/promotions/{id}/state`.
public struct PromotionStateChange: Sendable, Hashable, Codable {
  /// The new state.
  public var state: PromotionState
  /// A change.
  public init(state: PromotionState) { self.state = state }
}

/// `GET /v1/advertiser/promotions/{id}/audience`: a count, never people. Wire names: `promotionId`, `eligible`
/// (a number, or the string `"< 5"`), `at`.
public struct PromotionAudienceSize: Sendable, Hashable, Codable {
  /// The promotion.
  public var promotionId: PromotionID
  /// How many qualify.
  public var eligible: AggregateCount
  /// When they were counted, UTC ms.
  public var at: Int64
  /// A count.
  public init(promotionId: PromotionID, eligible: AggregateCount, at: Int64) {
    self.promotionId = promotionId
    self.eligible = eligible
    self.at = at
  }
}

/// A count of people shown to an advertiser: exact from ``minimum`` people on, else only "fewer than that" — so a
/// figure can't single out one person — or withheld where it would tell, with other figures, what a hidden one
/// holds (``FigureDisclosure``). On the wire a number, or the string `"< 5"` or `"withheld"`.
public enum AggregateCount: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The fewest people a count shows exactly.
  public static let minimum = 5
  /// At least ``minimum``.
  case exactly(Int)
  /// 0 to ``minimum`` − 1.
  case fewerThanMinimum
  /// Not shown though it is large enough: with other figures it would tell what one that is hidden holds.
  case withheld

  /// `count` as shown.
  public init(_ count: Int) { self = count >= Self.minimum ? .exactly(count) : .fewerThanMinimum }

  /// The number, `< 5` or `withheld`.
  public var description: String {
    switch self {
    case .exactly(let count): String(count)
    case .fewerThanMinimum: "< \(Self.minimum)"
    case .withheld: "withheld"
    }
  }

  /// Reads a number (at least ``minimum``), `"< 5"` or `"withheld"`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if let count = try? container.decode(Int.self), count >= Self.minimum {
      self = .exactly(count)
    } else if let text = try? container.decode(String.self),
      let named = [Self.fewerThanMinimum, .withheld].first(where: { $0.description == text })
    {
      self = named
    } else {
      throw DecodingError.dataCorruptedError(
        in: container,
        debugDescription: "A count is a number of at least \(Self.minimum), \"< \(Self.minimum)\" or \"withheld\".")
    }
  }

  /// Writes a number, `"< 5"` or `"withheld"`.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .exactly(let count): try container.encode(count)
    case .fewerThanMinimum, .withheld: try container.encode(description)
    }
  }
}

/// A promotion as an advertiser writes it (`POST …/promotions`, `PUT /v1/advertiser/promotions/{id}`). Wire names:
/// `name`, `promoCode`, `imageUrl`, `oldPrice`, `newPrice` (`{amount, currency}`, minor units), `audience`
/// (`general`|`special`), `validFrom`, `validUntil` (UTC ms), `window` (`{start, end}`, minutes of the venue's day),
/// `eligibility` (`{radius, minimumDays, lookbackDays}`, for special ones; DomainKit's defaults when absent).
public struct PromotionDraft: Sendable, Hashable, Codable {
  /// Name, 1…255 characters.
  public var name: String
  /// The code, 1…64 characters without spaces or control characters.
  public var promoCode: String
  /// The image: a blob's `url` from `POST /v1/blobs` (`/v1/blobs/<hash>`); the server refuses any other.
  public var imageURL: String?
  /// Price before.
  public var oldPrice: Money?
  /// Price with the promotion.
  public var newPrice: Money?
  /// General or special.
  public var audience: PromotionAudience
  /// Start of validity.
  public var validFrom: Int64?
  /// End of validity (exclusive).
  public var validUntil: Int64?
  /// Daily window in the venue's time zone.
  public var window: TimeOfDayWindow?
  /// The special audience's rule.
  public var eligibility: PromotionEligibility?

  /// A draft.
  public init(
    name: String, promoCode: String, imageURL: String? = nil, oldPrice: Money? = nil, newPrice: Money? = nil,
    audience: PromotionAudience = .general, validFrom: Int64? = nil, validUntil: Int64? = nil,
    window: TimeOfDayWindow? = nil, eligibility: PromotionEligibility? = nil
  ) {
    self.name = name
    self.promoCode = promoCode
    self.imageURL = imageURL
    self.oldPrice = oldPrice
    self.newPrice = newPrice
    self.audience = audience
    self.validFrom = validFrom
    self.validUntil = validUntil
    self.window = window
    self.eligibility = eligibility
  }

  /// The rule of a promotion's name.
  public static let nameRule = UserText.singleLine(maximumLength: 255)

  /// The bounds of a special audience's rule.
  public static let radii = 10.0...5_000.0
  /// Days of a rule's lookback.
  public static let lookbacks = 1...90

  /// The promotion `id` of `venue` this draft describes.
  /// - Throws: ``APIError`` `invalid_request` naming the field that is out of range.
  public func promotion(id: PromotionID, venue: PlaceID) throws(APIError) -> Promotion {
    let trimmedName = try Self.nameRule.checked(name, field: "name")
    guard (1...64).contains(promoCode.count),
      promoCode.unicodeScalars.allSatisfy({ !$0.properties.isWhitespace && $0.properties.generalCategory != .control })
    else { throw .invalidRequest("'promoCode' must have 1 to 64 characters, without spaces.") }
    if let imageURL, imageURL.count > 2_048 || Identifier.hasControlCharacters(imageURL) {
      throw .invalidRequest("'imageUrl' must be a URL of at most 2048 characters.")
    }
    for (field, price) in [("oldPrice", oldPrice), ("newPrice", newPrice)] {
      guard let price else { continue }
      guard price.amount >= 0, price.currency.count == 3, price.currency.allSatisfy({ $0.isASCII && $0.isUppercase })
      else {
        throw .invalidRequest("'\(field)' needs an amount of 0 or more (minor units) and an ISO 4217 currency (UAH).")
      }
    }
    if let oldPrice, let newPrice, oldPrice.currency != newPrice.currency {
      throw .invalidRequest("'oldPrice' and 'newPrice' must be in the same currency.")
    }
    if let validFrom, let validUntil, validUntil <= validFrom {
      throw .invalidRequest("'validUntil' must come after 'validFrom'.")
    }
    return Promotion(
      id: id, venueID: venue, name: trimmedName, promoCode: promoCode, imageURL: imageURL, oldPrice: oldPrice,
      newPrice: newPrice, audience: audience, validFrom: validFrom, validUntil: validUntil, window: window)
  }

  /// The rule for the special audience (DomainKit's defaults when absent).
  /// - Throws: ``APIError`` `invalid_request` naming the field that is out of range.
  public func checkedEligibility() throws(APIError) -> PromotionEligibility {
    let rule = eligibility ?? PromotionEligibility()
    guard rule.radius.isFinite, Self.radii.contains(rule.radius) else {
      throw .invalidRequest("'eligibility.radius' must be between 10 and 5000 metres.")
    }
    guard Self.lookbacks.contains(rule.lookbackDays) else {
      throw .invalidRequest("'eligibility.lookbackDays' must be between 1 and 90.")
    }
    guard (1...rule.lookbackDays).contains(rule.minimumDays) else {
      throw .invalidRequest("'eligibility.minimumDays' must be between 1 and 'lookbackDays'.")
    }
    return rule
  }

  private enum CodingKeys: String, CodingKey {
    case name, promoCode
    case imageURL = "imageUrl"
    case oldPrice, newPrice, audience, validFrom, validUntil, window, eligibility
  }
}

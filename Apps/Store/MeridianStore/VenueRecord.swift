import DomainKit
import GeoKit

/// A venue as it is imported into the store: the DomainKit place (which must have a location) and its rating.
///
/// Venues are places of kind `venue` in the one table of places (found by `/v1/places?kind=venue` and by search
/// like every place); the store keeps what is a venue's alone — the rating imported with it — beside it, under the
/// same id that promotions and advertiser grants refer to.
public struct VenueRecord: Sendable, Hashable {
  /// The place; `name` and `description` are stored per language in the localized columns.
  public let place: Place
  /// Where it is (the place's location).
  public let location: Coordinate
  /// The aggregated review grades (e.g. from `PlaceDirectory.aggregateRatings`); `count` is the number of reviews.
  public var rating: RatingAggregate

  /// A record.
  /// - Throws: ``VenueRecordError`` when the place has no location.
  public init(place: Place, rating: RatingAggregate = RatingAggregate()) throws(VenueRecordError) {
    guard let location = place.location else { throw .missingLocation(place.id) }
    self.place = place
    self.location = location
    self.rating = rating
  }

  /// The venue as the directory stores it: a place of kind `venue` (whatever kind the record's place had).
  public var placeRecord: PlaceRecord {
    var venue = place
    venue.kind = .venue
    return PlaceRecord(place: venue)
  }
}

/// Why a venue or promotion can't be stored.
public enum VenueRecordError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Venues are found by position, so each needs a location.
  case missingLocation(PlaceID)
  /// A promotion names a venue that is not stored; import the venue first.
  case unknownVenue(PlaceID)

  /// What was wrong and what to do.
  public var description: String {
    switch self {
    case .missingLocation(let id): "Venue \(QuotedValue.quote("\(id)")) has no location; give it one to import it."
    case .unknownVenue(let id):
      "There is no venue \(QuotedValue.quote("\(id)")); import the venue before its promotions."
    }
  }
}

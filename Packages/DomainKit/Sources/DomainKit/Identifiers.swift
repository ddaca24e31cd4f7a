/// A typed string identifier; `Tag` only distinguishes kinds of ids at compile time.
///
/// Encodes as a bare JSON string.
public struct Identifier<Tag>: Sendable, Hashable, Codable, Comparable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  /// The identifier's text.
  public var rawValue: String

  /// Wraps `rawValue`.
  public init(_ rawValue: String) { self.rawValue = rawValue }

  /// Wraps a string literal.
  public init(stringLiteral value: String) { self.rawValue = value }

  /// Decodes a bare JSON string.
  public init(from decoder: any Decoder) throws {
    rawValue = try decoder.singleValueContainer().decode(String.self)
  }

  /// Encodes a bare JSON string.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(rawValue)
  }

  /// Orders by ``rawValue``.
  public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

  /// The ``rawValue``.
  public var description: String { rawValue }
}

/// Tag types for ``Identifier``.
public enum IdentifierTags {
  /// Accounts (users).
  public enum User {}
  /// Devices of a user.
  public enum Device {}
  /// Groups.
  public enum Group {}
  /// Places (directory entries and venues).
  public enum Place {}
  /// Reviews.
  public enum Review {}
  /// Polls.
  public enum Poll {}
  /// Comments.
  public enum Comment {}
  /// Coupon offers and coupons.
  public enum Coupon {}
  /// Promotions.
  public enum Promotion {}
  /// News items.
  public enum News {}
  /// Visits.
  public enum Visit {}
  /// Points ledger entries.
  public enum LedgerEntry {}
}

/// The id of an account.
public typealias UserID = Identifier<IdentifierTags.User>
/// The id of a device (the OwnTracks/OsmAnd device id, or one the server assigns).
public typealias DeviceID = Identifier<IdentifierTags.Device>
/// The id of a group.
public typealias GroupID = Identifier<IdentifierTags.Group>
/// The id of a place or venue.
public typealias PlaceID = Identifier<IdentifierTags.Place>
/// The id of a review.
public typealias ReviewID = Identifier<IdentifierTags.Review>
/// The id of a poll.
public typealias PollID = Identifier<IdentifierTags.Poll>
/// The id of a poll comment.
public typealias CommentID = Identifier<IdentifierTags.Comment>
/// The id of a coupon offer or purchased coupon.
public typealias CouponID = Identifier<IdentifierTags.Coupon>
/// The id of a promotion.
public typealias PromotionID = Identifier<IdentifierTags.Promotion>
/// The id of a news item.
public typealias NewsID = Identifier<IdentifierTags.News>
/// The id of a visit.
public typealias VisitID = Identifier<IdentifierTags.Visit>
/// The id of a points ledger entry.
public typealias LedgerEntryID = Identifier<IdentifierTags.LedgerEntry>

extension Identifier: CodingKeyRepresentable {
  /// The id as a dictionary key, so `[UserID: …]` encodes as a JSON object.
  public var codingKey: any CodingKey { _IdentifierKey(stringValue: rawValue) }

  /// Reads an id from a dictionary key.
  public init?<T: CodingKey>(codingKey: T) { self.init(codingKey.stringValue) }
}

private struct _IdentifierKey: CodingKey {
  var stringValue: String
  var intValue: Int? { nil }
  init(stringValue: String) { self.stringValue = stringValue }
  init?(intValue: Int) { nil }
}

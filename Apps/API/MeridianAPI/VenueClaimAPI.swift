import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: Claiming a venue (becoming its advertiser without an operator's grant first)

  /// `POST /v1/advertiser/claims {venueId, note}`: asks to become an advertiser of a venue; an operator approves or
  /// rejects it (`meridian-admin advertisers claims|approve|reject`). Asking again while a claim waits answers it.
  public static let claimVenue = Endpoint<Void, VenueClaimRequest, VenueClaim>(.post, "/v1/advertiser/claims")
  /// `GET /v1/advertiser/claims`: the caller's claims, newest first, with their answers.
  public static let venueClaims = Endpoint<Void, NoBody, VenueClaims>(.get, "/v1/advertiser/claims")
}

/// `POST /v1/advertiser/claims`. Wire names: `venueId`, `note`.
public struct VenueClaimRequest: Sendable, Hashable, Codable {
  /// The venue.
  public var venueID: PlaceID
  /// What the operator should know (who the person is to the venue), at most ``maximumNote`` characters.
  public var note: String?

  /// The longest note.
  public static let maximumNote = 500
  /// The rule of a note (several lines).
  public static let noteRule = UserText.multiLine(maximumLength: maximumNote)

  /// A request.
  public init(venueID: PlaceID, note: String? = nil) {
    self.venueID = venueID
    self.note = note
  }

  /// The note trimmed, nil when empty.
  /// - Throws: ``APIError`` `invalid_request` when it breaks ``noteRule``.
  public func checkedNote() throws(APIError) -> String? {
    guard let note else { return nil }
    let checked = try Self.noteRule.checked(note, field: "note")
    return checked.isEmpty ? nil : checked
  }

  private enum CodingKeys: String, CodingKey {
    case venueID = "venueId"
    case note
  }
}

/// Where a claim is: waiting for an operator, or answered.
public enum VenueClaimState: String, Sendable, Hashable, Codable, CaseIterable {
  /// Waiting.
  case pending
  /// Approved: the person advertises for the venue.
  case approved
  /// Rejected.
  case rejected
}

/// A person's request to advertise for a venue. Wire names: `id`, `userId`, `venueId`, `note`, `state`,
/// `claimedAt`, `decidedAt` (UTC ms), `reason` (the operator's, on a rejection).
public struct VenueClaim: Sendable, Hashable, Codable, Identifiable {
  /// The claim's id.
  public var id: String
  /// Who asks.
  public var user: UserID
  /// The venue.
  public var venue: PlaceID
  /// What they said.
  public var note: String?
  /// Its state.
  public var state: VenueClaimState
  /// When it was made.
  public var claimedAt: Int64
  /// When an operator answered.
  public var decidedAt: Int64?
  /// The operator's reason.
  public var reason: String?

  /// A claim.
  public init(
    id: String, user: UserID, venue: PlaceID, note: String? = nil, state: VenueClaimState = .pending,
    claimedAt: Int64, decidedAt: Int64? = nil, reason: String? = nil
  ) {
    self.id = id
    self.user = user
    self.venue = venue
    self.note = note
    self.state = state
    self.claimedAt = claimedAt
    self.decidedAt = decidedAt
    self.reason = reason
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case user = "userId"
    case venue = "venueId"
    case note, state, claimedAt, decidedAt, reason
  }
}

/// `GET /v1/advertiser/claims`.
public struct VenueClaims: Sendable, Hashable, Codable {
  /// The claims, newest first.
  public var claims: [VenueClaim]
  /// A list.
  public init(claims: [VenueClaim]) { self.claims = claims }
}

import DomainKit
import Foundation
import GeoKit
import NetworkingKit

extension API {
  // MARK: Home, work and corrections of stays

  /// `GET /v1/me/home-work`: the home and work the caller set (each absent when they set none; `GET
  /// /v1/history/visits` then proposes one from the nights and weekdays).
  public static let homeWork = Endpoint<Void, NoBody, HomeWorkChoice>(.get, "/v1/me/home-work")
  /// `PUT /v1/me/home-work {home?: {lat, lon}, work?: {lat, lon}}` → the choice stored; an absent or null place is
  /// left to the proposal. `400 bad_request` for a position off the globe.
  public static let setHomeWork = Endpoint<Void, HomeWorkChoice, HomeWorkChoice>(.put, "/v1/me/home-work")
  /// `GET /v1/history/visits/corrections`: the caller's corrections of their stays, in the order made.
  public static let stayCorrections = Endpoint<Void, NoBody, StayCorrectionList>(
    .get, "/v1/history/visits/corrections")
  /// `POST /v1/history/visits/corrections {kind: merge, from, to} | {kind: split, at} | {kind: rename, location,
  /// name}` → 201 with the stored correction, applied from now on each time stays are detected. `422
  /// invalid_stay_correction` for a merge whose `to` is before `from` or a name of 0 or over 100 characters; `409
  /// quota_exceeded` past ``StayCorrectionList/maximumCount``.
  public static let addStayCorrection = Endpoint<Void, StayCorrection, StoredStayCorrection>(
    .post, "/v1/history/visits/corrections")
  /// `DELETE /v1/history/visits/corrections/{id}` → 204. `404 not_found` for a correction that isn't the caller's.
  public static let deleteStayCorrection = Endpoint<StayCorrectionRef, NoBody, NoContent>(
    .delete, "/v1/history/visits/corrections/\(\.id, "id")", body: .none, response: .empty)

  /// The stay endpoints, for ``all``.
  static let stayEndpoints: [EndpointDescriptor] = [
    homeWork.descriptor, setHomeWork.descriptor, stayCorrections.descriptor, addStayCorrection.descriptor,
    deleteStayCorrection.descriptor,
  ]
}

/// A stay correction's id in a path.
public struct StayCorrectionRef: RouteParameters, Hashable {
  /// The correction's id.
  public var id: String
  /// A reference.
  public init(id: String) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = try path.required("id")
  }
}

/// `GET /v1/history/visits/corrections`.
public struct StayCorrectionList: Sendable, Hashable, Codable {
  /// The most corrections one person keeps.
  public static let maximumCount = 1_000
  /// The corrections, in the order made.
  public var items: [StoredStayCorrection]
  /// A list.
  public init(items: [StoredStayCorrection]) { self.items = items }
}

/// A stored correction: its id, when it was made, and what it does. Wire names: `id`, `createdAt`, `correction`.
public struct StoredStayCorrection: Sendable, Hashable, Codable {
  /// The id.
  public var id: String
  /// When it was made, UTC ms (corrections apply in this order).
  public var createdAt: Int64
  /// The correction.
  public var correction: StayCorrection

  /// A stored correction.
  public init(id: String, createdAt: Int64, correction: StayCorrection) {
    self.id = id
    self.createdAt = createdAt
    self.correction = correction
  }

  /// The correction as an engine stores it: its JSON text.
  public var json: String {
    (try? JSONEncoder().encode(correction)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }

  /// A stored correction from an engine's row; nil when its JSON is not a correction.
  public init?(id: String, createdAt: Int64, json: String) {
    guard let correction = try? JSONDecoder().decode(StayCorrection.self, from: Data(json.utf8)) else { return nil }
    self.init(id: id, createdAt: createdAt, correction: correction)
  }
}

/// Home or work in `GET /v1/history/visits`: the place the caller set, else the one their stays suggest. Wire names:
/// `location`, `source` (`set` or `proposed`), and for a proposal `days` (nights or weekdays) and `timeSpent` (ms).
public struct HomeWorkPlace: Sendable, Hashable, Codable {
  /// Where.
  public var location: Coordinate
  /// `set` by the caller or `proposed` from their stays.
  public var source: String
  /// Nights (home) or weekdays (work) behind a proposal.
  public var days: Int?
  /// Time spent there in those nights or weekdays, ms.
  public var timeSpent: Int64?

  /// A place.
  public init(location: Coordinate, source: String, days: Int? = nil, timeSpent: Int64? = nil) {
    self.location = location
    self.source = source
    self.days = days
    self.timeSpent = timeSpent
  }

  /// The place `set` wins over `proposed`.
  public static func resolve(set: Coordinate?, proposed: ProposedPlace?) -> HomeWorkPlace? {
    if let set { return HomeWorkPlace(location: set, source: "set") }
    return proposed.map {
      HomeWorkPlace(location: $0.location, source: "proposed", days: $0.days, timeSpent: $0.timeSpent)
    }
  }
}

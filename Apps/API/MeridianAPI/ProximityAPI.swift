import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: Proximity rules

  /// `GET /v1/proximity-rules`: the caller's proximity rules, oldest first.
  public static let proximityRules = Endpoint<Void, NoBody, ProximityRuleList>(.get, "/v1/proximity-rules")
  /// `POST /v1/proximity-rules {userId, radius}` → 201 with the rule: "tell me when `userId` and I are within `radius`
  /// metres". `400 invalid_proximity_rule` for a radius outside 25 m – 50 km, an unknown person, oneself, or a person
  /// who doesn't share their location with the caller.
  public static let createProximityRule = Endpoint<Void, NewProximityRule, ProximityRuleItem>(
    .post, "/v1/proximity-rules")
  /// `DELETE /v1/proximity-rules/{id}` → 204, with its state and events (the owner's only).
  public static let deleteProximityRule = Endpoint<ProximityRuleRef, NoBody, NoContent>(
    .delete, "/v1/proximity-rules/\(\.id, "id")", body: .none, response: .empty)

  /// The proximity rule endpoints, for ``all``.
  static let proximityEndpoints: [EndpointDescriptor] = [
    proximityRules.descriptor, createProximityRule.descriptor, deleteProximityRule.descriptor,
  ]
}

/// A proximity rule's id in a path.
public struct ProximityRuleRef: RouteParameters, Hashable {
  /// The rule.
  public var id: ProximityRuleID
  /// A reference.
  public init(id: ProximityRuleID) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = ProximityRuleID(try path.required("id"))
  }
}

/// `POST /v1/proximity-rules` body.
public struct NewProximityRule: Sendable, Hashable, Codable {
  /// The other person: someone who shares their location with the caller.
  public var userId: UserID
  /// The distance, metres (25…50,000).
  public var radius: Double
  /// A body.
  public init(userId: UserID, radius: Double) {
    self.userId = userId
    self.radius = radius
  }
}

/// A proximity rule: its owner hears when the owner and `userId` come within `radius` metres of each other
/// (`near`), move apart (`apart`) or stay near for the dwell time (`dwell`). Wire names: `id`, `ownerId`, `userId`,
/// `radius`, `createdAt` (UTC ms).
public struct ProximityRuleItem: Sendable, Hashable, Codable {
  /// The id.
  public var id: ProximityRuleID
  /// Who made it and hears its events.
  public var ownerId: UserID
  /// The other person (shares their location with the owner).
  public var userId: UserID
  /// The distance, metres.
  public var radius: Double
  /// UTC ms.
  public var createdAt: Int64

  /// A rule.
  public init(id: ProximityRuleID, ownerId: UserID, userId: UserID, radius: Double, createdAt: Int64) {
    self.id = id
    self.ownerId = ownerId
    self.userId = userId
    self.radius = radius
    self.createdAt = createdAt
  }

  /// The person of the pair who is not `person` (nil when `person` is in neither place).
  public func partner(of person: UserID) -> UserID? {
    person == ownerId ? userId : person == userId ? ownerId : nil
  }
}

/// `GET /v1/proximity-rules` answer.
public struct ProximityRuleList: Sendable, Hashable, Codable {
  /// The rules, oldest first.
  public var items: [ProximityRuleItem]
  /// A list.
  public init(items: [ProximityRuleItem]) { self.items = items }
}

/// What a proximity event adds to a ``GeofenceEventItem`` (its `proximity` member): the rule, the proximity kind
/// (`near`, `apart`, `dwell`) and the rule's distance. In such an event `geofenceId` is the rule's id, `geofenceName`
/// is empty, `userId` is the rule's other person, `lat`/`lon`/`accuracy` are that person's position, and `kind` reads
/// `enter`/`exit`/`dwell` for clients that know only geofences.
public struct ProximityEventDetail: Sendable, Hashable, Codable {
  /// The rule.
  public var ruleId: ProximityRuleID
  /// What happened.
  public var kind: ProximityEventKind
  /// The rule's distance, metres.
  public var radius: Double

  /// A detail.
  public init(ruleId: ProximityRuleID, kind: ProximityEventKind, radius: Double) {
    self.ruleId = ruleId
    self.kind = kind
    self.radius = radius
  }
}

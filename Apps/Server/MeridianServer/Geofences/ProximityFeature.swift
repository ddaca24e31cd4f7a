import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// `/v1/proximity-rules`: "tell me when this person and I are within R metres", for two people who share their
/// location with each other. The events are evaluated by the ``ProximityMonitor`` and listed with the geofence
/// events (`GET /v1/geofences/events`).
struct ProximityFeature: Sendable {
  let environment: ServerEnvironment
  let monitor: ProximityMonitor
  var store: any MeridianStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.proximityRules) { call in
      ProximityRuleList(items: try await store.proximityRules(owner: call.authenticated()))
    }
    routes.on(API.createProximityRule, status: .created) { call in try await create(call.authenticated(), call.body) }
    routes.on(API.deleteProximityRule, status: .noContent) { call in
      let owner = try call.authenticated()
      let id = call.parameters.id
      guard let rule = try await store.proximityRule(id), rule.ownerId == owner else {
        throw APIError.notFound("You have no proximity rule '\(echo(id.rawValue))'.")
      }
      _ = try await store.deleteProximityRule(rule.id)
      monitor.rulesChanged([rule.ownerId, rule.userId])
      return NoContent()
    }
  }

  /// The most rules one person may make.
  static let maximumPerPerson = 100

  /// Stores a rule of `owner` about `body.userId`, once valid: a distance within the fences' radii, another person
  /// who exists and who shares their location with `owner` as `owner` does with them (``Sharing/canSee(_:_:of:at:)``
  /// both ways, now).
  /// - Throws: `400 invalid_proximity_rule` naming what is wrong; `409 geofence_limit_reached` past
  ///   ``maximumPerPerson`` rules.
  func create(_ owner: UserID, _ body: NewProximityRule) async throws -> ProximityRuleItem {
    let range = monitor.rules.radiusRange
    guard body.radius.isFinite, range.contains(body.radius) else {
      throw Self.invalid(
        "'radius' must be between \(Int(range.lowerBound)) and \(Int(range.upperBound)) metres.")
    }
    try Identifier.check(body.userId.rawValue, name: "userId")
    guard body.userId != owner else { throw Self.invalid("A proximity rule names another person, not yourself.") }
    let time = environment.now()
    guard let mine = try await store.privacySettings(owner: owner),
      let theirs = try await store.privacySettings(owner: body.userId)
    else {
      throw Self.invalid("There is no person '\(echo(body.userId.rawValue))'.")
    }
    guard Sharing.canSee(owner, .location, of: theirs, at: time),
      Sharing.canSee(body.userId, .location, of: mine, at: time)
    else {
      throw Self.invalid(
        "You and '\(echo(body.userId.rawValue))' must share your locations with each other to make a proximity rule.")
    }
    guard try await store.proximityRules(owner: owner).count < Self.maximumPerPerson else {
      throw APIError(
        status: 409, code: .geofenceLimitReached,
        message: "You have \(Self.maximumPerPerson) proximity rules, as many as this server allows; delete one first.")
    }
    let rule = ProximityRuleItem(
      id: ProximityRuleID(Secrets.userID()), ownerId: owner, userId: body.userId, radius: body.radius, createdAt: time)
    try await store.createProximityRule(rule)
    monitor.rulesChanged([owner, body.userId])
    return rule
  }

  static func invalid(_ message: String) -> APIError {
    APIError(status: 400, code: .invalidProximityRule, message: message)
  }
}

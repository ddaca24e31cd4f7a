import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// `/v1/me/privacy-zones`: the circles where others never see the caller. Each change reaches the ingest path (a
/// zone that stores nothing) and the live sockets (who may still take the raw channel) at once, on every node.
struct PrivacyZoneFeature: Sendable {
  let environment: ServerEnvironment
  let live: LiveUpdates
  var store: any MeridianStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.privacyZones) { call in
      PrivacyZoneList(items: try await store.privacyZones(owner: call.authenticated()))
    }
    routes.on(API.createPrivacyZone, status: .created) { call in
      try await save(call.body.zone(id: Secrets.userID()), owner: call.authenticated(), isNew: true)
    }
    routes.on(API.updatePrivacyZone) { call in
      let owner = try call.authenticated()
      guard try await store.privacyZones(owner: owner).contains(where: { $0.id == call.parameters.id }) else {
        throw APIError.notFound("You have no privacy zone with this id.")
      }
      return try await save(call.body.zone(id: call.parameters.id), owner: owner, isNew: false)
    }
    routes.on(API.deletePrivacyZone, status: .noContent) { call in
      let owner = try call.authenticated()
      guard try await store.deletePrivacyZone(id: call.parameters.id, owner: owner) else {
        throw APIError.notFound("You have no privacy zone with this id.")
      }
      try await changed(owner)
      return NoContent()
    }
  }

  func save(_ zone: PrivacyZone, owner: UserID, isNew: Bool) async throws -> PrivacyZone {
    if let problem = zone.problem() {
      throw APIError(status: 422, code: .invalidPrivacyZone, message: problem)
    }
    guard
      try await store.savePrivacyZone(
        zone, owner: owner, now: environment.now(), maximumCount: PrivacyZone.maximumCount)
    else {
      throw APIError(
        status: 409, code: .quotaExceeded,
        message: "You have \(PrivacyZone.maximumCount) privacy zones, the most allowed; delete one first.")
    }
    try await changed(owner)
    return zone
  }

  /// Drops what every node remembers of the owner's zones and settings (the ingest path's too,
  /// ``LiveUpdates/enforce(owner:)``), and revokes the live subscribers who may no longer take the owner's raw channel
  /// (a first zone closes `user:<owner>` to everyone but the owner).
  private func changed(_ owner: UserID) async throws {
    try await live.enforce(owner: owner)
  }
}

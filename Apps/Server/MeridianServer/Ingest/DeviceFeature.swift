import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// `POST /v1/fixes`, and the caller's devices with their OsmAnd access.
struct DeviceFeature: Sendable {
  let environment: ServerEnvironment
  let ingest: FixIngest
  var store: any FixStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.postFixes) { call in
      try await ingest.submit(call.authenticated(), call.body, idempotency: call.idempotency)
    }
    routes.on(API.devices) { call in DeviceList(devices: try await store.devices(owner: call.authenticated())) }
    routes.on(API.enableOsmAnd, status: .created) { call in
      try await enableOsmAnd(call.authenticated(), call.parameters.id)
    }
    routes.on(API.disableOsmAnd, status: .noContent) { call in
      try await disableOsmAnd(call.authenticated(), call.parameters.id)
    }
  }

  func enableOsmAnd(_ owner: UserID, _ device: DeviceID) async throws -> OsmAndAccess {
    let id = try FixIngest.checkedDeviceID(device.rawValue)
    let identifier = Secrets.token()
    let claim = try await store.enableOsmAnd(
      device: id, owner: owner, identifierHash: SecretHash.sha256(identifier), now: environment.now(),
      maxDevices: ServerLimits.active(environment.limits.devicesPerAccount))
    try FixIngest.check(claim, device: id)
    return OsmAndAccess(deviceId: id, identifier: identifier)
  }

  func disableOsmAnd(_ owner: UserID, _ device: DeviceID) async throws -> NoContent {
    guard try await store.disableOsmAnd(device: device, owner: owner) else {
      throw APIError.notFound("None of your devices called '\(echo(device.rawValue))' takes OsmAnd reports.")
    }
    return NoContent()
  }
}

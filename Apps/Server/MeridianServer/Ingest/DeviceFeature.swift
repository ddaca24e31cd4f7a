import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// `POST /v1/fixes`, and the caller's devices with their OsmAnd access and MQTT credentials.
struct DeviceFeature: Sendable {
  let environment: ServerEnvironment
  let ingest: FixIngest
  /// The devices' broker accounts, when the server writes the broker's files (``MQTTSettings``).
  var mqttAccounts: MQTTBrokerAccounts? = nil
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
    routes.on(API.issueMQTTCredentials, status: .created) { call in
      try await issueMQTTCredentials(call.authenticated(), call.parameters.id)
    }
    routes.on(API.revokeMQTTCredentials, status: .noContent) { call in
      try await revokeMQTTCredentials(call.authenticated(), call.parameters.id)
    }
  }

  /// The broker accounts, or 404 when the server keeps none.
  private func brokerAccounts() throws(APIError) -> MQTTBrokerAccounts {
    guard let mqttAccounts else {
      throw APIError.notFound(
        "This server gives out no MQTT credentials (its operator has not set MERIDIAN_MQTT_PASSWORD_FILE).")
    }
    return mqttAccounts
  }

  func issueMQTTCredentials(_ owner: UserID, _ device: DeviceID) async throws -> MQTTCredentials {
    let accounts = try brokerAccounts()
    let id = try FixIngest.checkedDeviceID(device.rawValue)
    guard MQTTBrokerAccounts.isAccountName(id.rawValue) else {
      throw APIError.invalidRequest(
        "A device that reports over MQTT needs an id of 1 to 64 letters, digits, '.', '_' or '-' (it is the broker "
          + "user name and a topic level).")
    }
    guard await !accounts.isReserved(id) else {
      throw APIError.invalidRequest(
        "'\(echo(id.rawValue))' is the server's own broker account; name the device otherwise.")
    }
    let claim = try await store.claimDevice(
      id, owner: owner, now: environment.now(), maxDevices: ServerLimits.active(environment.limits.devicesPerAccount))
    try FixIngest.check(claim, device: id)
    let password = try await accounts.issue(device: id)
    return MQTTCredentials(
      deviceId: id, username: id.rawValue, password: password, topic: MQTTBrokerAccounts.topic(of: id),
      friendsTopic: "owntracks/\(id.rawValue)/+")
  }

  func revokeMQTTCredentials(_ owner: UserID, _ device: DeviceID) async throws -> NoContent {
    let accounts = try brokerAccounts()
    guard try await store.deviceOwner(device) == owner, try await accounts.revoke(device: device) else {
      throw APIError.notFound("None of your devices called '\(echo(device.rawValue))' has MQTT credentials.")
    }
    return NoContent()
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

import DomainKit
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeridianAPI
import MeridianServer
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import RealtimeKit
import Synchronization
import Testing

/// Home Assistant's REST API as the recipe uses it: `POST /api/services/device_tracker/see` with `Authorization:
/// Bearer <long-lived token>` and `Content-Type: application/json` (developers.home-assistant.io, "REST API"; the
/// service's fields from `device_tracker/services.yaml`: `dev_id`, `host_name`, `gps`, `gps_accuracy`, `battery`).
/// Records every call and answers as Home Assistant does, `200` with the states that changed.
final class HomeAssistantReceiver: Sendable {
  struct Call: Sendable {
    var method: HTTPRequest.Method
    var path: String
    var authorization: String?
    var contentType: String?
    var data: JSONValue
  }

  let calls = Mutex<[Call]>([])
  private let running = Mutex<LocalApp?>(nil)
  var url: String { "http://127.0.0.1:\(running.withLock { $0?.port ?? 0 })" }

  static func start() async throws -> HomeAssistantReceiver {
    let receiver = HomeAssistantReceiver()
    let router = Router()
    router.post("/api/services/{domain}/{service}") { request, _ -> Response in
      let body = Data(try await request.body.collect(upTo: 1 << 16).readableBytesView)
      receiver.calls.withLock {
        $0.append(
          Call(
            method: request.method, path: request.uri.path, authorization: request.headers[.authorization],
            contentType: request.headers[.contentType], data: (try? JSONValue.parse(body)) ?? .null))
      }
      return Response(
        status: .ok, headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: "[]")))
    }
    var logger = Logger(label: "home-assistant")
    logger.logLevel = .warning
    let app = try await LocalApp.start(router: router, logger: logger)
    receiver.running.withLock { $0 = app }
    return receiver
  }

  func stop() async { await running.withLock { $0 }?.stop() }
}

@Suite("Home Assistant: device_tracker.see")
struct HomeAssistantTests {
  @Test(arguments: ["sqlite", "postgres"])
  func positionsTheOwnerMaySeeReachHomeAssistantAsDeviceTrackerSee(_ engine: String) async throws {
    let homeAssistant = try await HomeAssistantReceiver.start()
    defer { Task { await homeAssistant.stop() } }
    try await PollTests.withServer(engine, { WebhookTests.fastDelivery(&$0) }) { server in
      let (anna, annaClient) = try await server.signUp("anna")
      let (boris, borisClient) = try await server.signUp("boris")
      let (_, claraClient) = try await server.signUp("clara")
      let friends = try #require(try await borisClient.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await borisClient.send(
        API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: anna.userId))
      // A token is required; the base URL is enough.
      await expectAPIError(.invalidRequest, status: 422) {
        try await annaClient.send(API.createWebhook, body: NewWebhook(url: homeAssistant.url, channel: .homeAssistant))
      }
      let created = try await annaClient.send(
        API.createWebhook,
        body: NewWebhook(url: homeAssistant.url, events: ["geofence.enter"], channel: .homeAssistant, token: "llat.abc")
      )
      #expect(created.webhook.url == homeAssistant.url + "/api/services/device_tracker/see")
      #expect(created.webhook.events == ["location"] && created.secret.isEmpty)

      // Clara shares nothing with Anna; Boris's fix comes after hers, so hers would be queued first.
      var clara = try makeFixes(count: 1, start: 1_700_000_000_000)[0]
      clara.horizontalAccuracy = 12
      _ = try await claraClient.send(API.postFixes, body: FixBatch(deviceId: "clara-phone", fixes: [clara]))
      var fix = try makeFixes(count: 2, start: 1_700_000_000_000)[1]
      fix.horizontalAccuracy = 7.6
      fix.batteryLevel = 83
      _ = try await borisClient.send(API.postFixes, body: FixBatch(deviceId: "boris-phone", fixes: [fix]))

      let log = try await AlertChannelTests.log(annaClient, created.webhook.id) { items in
        items.contains { $0.state == .delivered }
      }
      #expect(log.count == 1 && log.first?.kind == "location")
      let call = try #require(homeAssistant.calls.withLock { $0 }.first)
      #expect(homeAssistant.calls.withLock { $0.count } == 1)
      #expect(call.method == .post && call.path == "/api/services/device_tracker/see")
      #expect(call.authorization == "Bearer llat.abc")
      #expect(call.contentType == "application/json")
      let devID = "meridian_" + boris.userId.rawValue.lowercased().replacingOccurrences(of: "-", with: "_")
      #expect(
        call.data
          == [
            "dev_id": .string(devID), "host_name": "Boris", "gps": [.double(fix.latitude), .double(fix.longitude)],
            "gps_accuracy": 8, "battery": 83,
          ])
      // Once Boris pauses sharing, his positions stop; Anna's own still go.
      _ = try await borisClient.send(API.pauseSharing)
      _ = try await borisClient.send(
        API.postFixes, body: FixBatch(deviceId: "boris-phone", fixes: try makeFixes(count: 1, start: 1_700_000_100_000))
      )
      _ = try await annaClient.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1, start: 1_700_000_200_000)))
      let after = try await AlertChannelTests.log(annaClient, created.webhook.id) { items in
        items.filter { $0.state == .delivered }.count == 2
      }
      #expect(after.count == 2)
      let own = "meridian_" + anna.userId.rawValue.lowercased().replacingOccurrences(of: "-", with: "_")
      #expect(homeAssistant.calls.withLock { $0.map { $0.data["dev_id"] } } == [.string(devID), .string(own)])
    }
  }
}

import DomainKit
import Foundation
import MeridianAPI
import MeridianServer
import MeridianStoreTesting
import NetworkingKit
import Testing

/// Issue 40 §1: OwnTracks in MQTT mode, through Debian's real `mosquitto` started by the test, with `paho-mqtt`
/// playing the phones, on both engines.
@Suite("OwnTracks over MQTT", .enabled(if: MosquittoBroker.isInstalled, "needs /usr/sbin/mosquitto"))
struct OwnTracksMQTTTests {
  /// A broker, and the configuration of a server on `engine` subscribed to it (the same for a restart).
  static func withBroker(
    _ engine: String,
    _ body: (MosquittoBroker, @escaping @Sendable (inout ServerConfiguration) -> Void) async throws -> Void
  ) async throws {
    let broker = try await MosquittoBroker.start()
    let database = engine == "postgres" ? try await PostgresTestDatabase.create() : nil
    let settings = broker.settings()
    let configure: @Sendable (inout ServerConfiguration) -> Void = {
      $0.mqtt = settings
      if let database { $0.database = .postgres(url: database.url) }
    }
    do {
      try await body(broker, configure)
    } catch {
      await broker.remove()
      await database?.drop()
      throw error
    }
    await broker.remove()
    await database?.drop()
  }

  /// A broker and a server subscribed to it (its link up), on `engine`.
  static func withBrokerAndServer(
    _ engine: String, _ body: (MosquittoBroker, TestServer) async throws -> Void
  ) async throws {
    try await withBroker(engine) { broker, configure in
      try await TestServer.with(configure) { server in
        try await Self.waitForLink(server)
        try await body(broker, server)
      }
    }
  }

  /// Waits until `GET /health` reports the broker link up.
  static func waitForLink(_ server: TestServer) async throws {
    try await GeofenceQueueTests.waitFor("the MQTT link", timeout: .seconds(60)) {
      try await server.client().send(API.health).mqtt == "ok"
    }
  }

  /// Signs `name` up and gives the device `<name>-phone` MQTT credentials.
  static func phoneUser(_ server: TestServer, _ name: String) async throws
    -> (session: AuthSession, client: NetworkClient, credentials: MQTTCredentials)
  {
    let (session, client) = try await server.signUp(name)
    let credentials = try await client.send(
      API.issueMQTTCredentials, parameters: DeviceRef(id: DeviceID("\(name)-phone")))
    return (session, client, credentials)
  }

  /// A phone of `credentials` on `broker`.
  static func phone(_ broker: MosquittoBroker, _ credentials: MQTTCredentials, password: String? = nil)
    -> OwnTracksPhone
  {
    OwnTracksPhone(
      port: broker.port, username: credentials.username, password: password ?? credentials.password,
      clientID: "owntracks-\(credentials.username)")
  }

  /// Runs `phone` until the broker accepts it, and returns that run's outcome: the broker reads new accounts on
  /// SIGHUP, a moment after the server wrote them, and tells no one; its CONNACK is the acknowledgement. A refused
  /// run publishes nothing.
  static func connectedOutcome(_ phone: OwnTracksPhone) async throws -> OwnTracksPhone.Outcome {
    var accepted: OwnTracksPhone.Outcome?
    try await GeofenceQueueTests.waitFor("the broker to accept \(phone.username)", timeout: .seconds(30)) {
      let outcome = try await phone.run()
      if outcome.connack == 0 { accepted = outcome }
      return accepted != nil
    }
    return try #require(accepted)
  }

  /// paho's reason code for an MQTT 3.1.1 CONNACK of return code 5 (not authorized).
  static let notAuthorized = 135

  static var now: Int64 { Int64(Date().timeIntervalSince1970) }

  static func timestamps(_ client: NetworkClient) async throws -> [Int64] {
    try await client.send(API.history, parameters: HistoryQuery()).fixes.map(\.timestamp)
  }

  @Test(.timeLimit(.minutes(5)), arguments: ["sqlite", "postgres"])
  func aPhoneIsStoredAndAnsweredAsOnPubAndWrongCredentialsAreRefused(_ engine: String) async throws {
    try await Self.withBrokerAndServer(engine) { broker, server in
      let anna = try await Self.phoneUser(server, "anna")
      let bob = try await Self.phoneUser(server, "bob")
      #expect(anna.credentials.username == "anna-phone" && anna.credentials.topic == "owntracks/anna-phone/anna-phone")
      // Bob is Anna's friend: he sees her.
      let friends = try #require(try await anna.client.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.client.send(
        API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bob.session.userId))
      // The server wrote the broker's files: each device writes only its own topic and reads its own tree.
      let acl = try String(contentsOfFile: broker.aclFile, encoding: .utf8)
      #expect(
        acl.contains(
          "user anna-phone\ntopic write owntracks/anna-phone/anna-phone/#\ntopic read owntracks/anna-phone/#"))
      #expect(try String(contentsOfFile: broker.passwordFile, encoding: .utf8).contains("anna-phone:$6$"))

      let start = Self.now - 100  // in the past: a fix dated ahead of the clock is no one's last location
      let topic = anna.credentials.topic
      var phone = Self.phone(broker, anna.credentials)
      phone.publish = [
        [topic, "{not json"],
        [topic, ownTracksLocation(lat: 50.45, lon: 30.52, tst: start)],
        [topic, #"{"_type":"location","lat":"north","lon":30.5,"tst":\#(start + 1)}"#],
        [
          topic + "/waypoints",
          #"{"_type":"waypoints","waypoints":[{"_type":"waypoint","tst":\#(start - 100),"lat":50.4,"lon":30.5,"rad":80,"desc":"Home"}]}"#,
        ],
        [
          topic + "/event",
          #"{"_type":"transition","wtst":\#(start - 100),"lat":50.4,"lon":30.5,"tst":\#(start + 2),"acc":10,"event":"enter","desc":"Home"}"#,
        ],
        [topic, ownTracksLocation(lat: 50.46, lon: 30.53, tst: start + 3)],
      ]
      let published = try await Self.connectedOutcome(phone)
      #expect(published.connack == 0 && published.acked == Array(0..<6))
      // Stored as /pub stores (the malformed payloads dropped, the subscription going on past them), in the
      // history and as the location friends see.
      try await GeofenceQueueTests.waitFor("Anna's MQTT fixes", timeout: .seconds(30)) {
        try await Self.timestamps(anna.client).count == 2
      }
      let history = try await anna.client.send(API.history, parameters: HistoryQuery()).fixes
      #expect(history.map(\.timestamp) == [(start + 3) * 1000, start * 1000])
      #expect(history.allSatisfy { $0.deviceID == "anna-phone" } && history.last?.speed == 10)
      let seen = try #require(
        try await bob.client.send(API.userLocation, parameters: UserRef(id: anna.session.userId)).fix)
      #expect(seen.timestamp == (start + 3) * 1000 && abs(seen.latitude - 50.46) < 0.01, "\(seen)")
      // `/waypoints` became Anna's geofence, `/event` its device-reported transition.
      let fences = try await anna.client.send(API.geofences).items
      #expect(fences.map(\.name) == ["Home"] && fences.first?.source == .device)
      // (The server's own evaluation of the later fix, far from Home, may add an exit.)
      try await GeofenceQueueTests.waitFor("the reported transition", timeout: .seconds(30)) {
        try await anna.client.send(API.geofenceEvents, parameters: GeofenceEventParameters()).items.contains {
          $0.kind == .enter && $0.reportedBy == .device && $0.timestamp == (start + 2) * 1000
        }
      }

      // Bob's phone publishes; the server publishes Anna's location and card back under his tree, retained.
      var bobPhone = Self.phone(broker, bob.credentials)
      bobPhone.subscribe = ["owntracks/+/+", "owntracks/+/+/info"]
      bobPhone.publish = [[bob.credentials.topic, ownTracksLocation(lat: 48.0, lon: 11.0, tst: start)]]
      let annaHandle = try #require(seen.deviceID)
      let annaTopic = "owntracks/bob-phone/\(anna.session.userId.rawValue)@\(annaHandle.rawValue)"
      bobPhone.awaitTopics = [annaTopic, annaTopic + "/info"]
      let bobOutcome = try await Self.connectedOutcome(bobPhone)
      let received = Dictionary(bobOutcome.received.map { ($0[0], $0[1]) }, uniquingKeysWith: { $1 })
      let location = try OwnTracks.decode(Data(try #require(received[annaTopic]).utf8))
      guard case .location(let annaLocation)? = location.first else {
        Issue.record("no location on \(annaTopic): \(received)")
        return
      }
      #expect(annaLocation.lat == seen.latitude && annaLocation.tst == start + 3 && annaLocation.topic == annaTopic)
      let card = try OwnTracks.decode(Data(try #require(received[annaTopic + "/info"]).utf8))
      #expect(card == [.card(OwnTracks.Card(name: "Anna", tid: annaLocation.tid))])
      // Nothing of Bob's or anyone else's tree reached him but his own and Anna's.
      #expect(Set(received.keys).subtracting([bob.credentials.topic]) == [annaTopic, annaTopic + "/info"])

      // Wrong credentials: the broker refuses them (CONNACK 5, not authorized, which paho reports as its reason
      // code 135); so it does a revoked password.
      let wrong = try await Self.phone(broker, anna.credentials, password: "not-the-password").run()
      #expect(wrong.connack == Self.notAuthorized)
      _ = try await anna.client.send(API.revokeMQTTCredentials, parameters: DeviceRef(id: "anna-phone"))
      try await GeofenceQueueTests.waitFor("the broker to refuse the revoked password", timeout: .seconds(30)) {
        try await Self.phone(broker, anna.credentials).run().connack == Self.notAuthorized
      }
      await expectAPIError(.notFound, status: 404) {
        try await bob.client.send(API.revokeMQTTCredentials, parameters: DeviceRef(id: "anna-phone"))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await bob.client.send(API.issueMQTTCredentials, parameters: DeviceRef(id: "bob phone/1"))
      }
      // The server's own account name is no device's: it reads and writes all of owntracks/.
      await expectAPIError(.invalidRequest, status: 400) {
        try await bob.client.send(API.issueMQTTCredentials, parameters: DeviceRef(id: "meridian"))
      }
      #expect(!(try String(contentsOfFile: broker.aclFile, encoding: .utf8)).contains("user meridian\ntopic write"))
      await expectAPIError(.deviceNotOwned, status: 403) {
        try await bob.client.send(API.issueMQTTCredentials, parameters: DeviceRef(id: "anna-phone"))
      }
    }
  }

  /// The broker stops and starts again (same port, same persistence) while the phone keeps publishing at QoS 1:
  /// every message the broker acknowledged to the phone is stored, once.
  @Test(.timeLimit(.minutes(5)), arguments: ["sqlite", "postgres"])
  func aBrokerRestartLosesNothingAcknowledged(_ engine: String) async throws {
    try await Self.withBrokerAndServer(engine) { broker, server in
      let anna = try await Self.phoneUser(server, "anna")
      let start = Self.now - 1000
      var phone = Self.phone(broker, anna.credentials)
      phone.publish = (0..<40).map { [anna.credentials.topic, ownTracksLocation(tst: start + Int64($0))] }
      phone.interval = 0.05
      // The first connection is accepted once the broker read Anna's account.
      _ = try await Self.connectedOutcome(Self.phone(broker, anna.credentials))
      let running = try phone.start()
      try await GeofenceQueueTests.waitFor("the first fixes", timeout: .seconds(30)) {
        try await Self.timestamps(anna.client).count >= 5
      }
      await broker.stop()
      // `/health` tells the truth about the link: degraded (still 200) while the broker is away.
      try await GeofenceQueueTests.waitFor("the health to report the link down", timeout: .seconds(30)) {
        let health = try await server.client().send(API.health)
        return health.status == "degraded" && health.database == "ok" && health.mqtt?.hasPrefix("down: ") == true
      }
      let again = try await broker.restarted()
      let outcome = try await running.outcome()
      #expect(outcome.acked.count == 40, "the phone's queue is sent again after it reconnects")
      let acknowledged = Set(outcome.acked.map { (start + Int64($0)) * 1000 })
      try await GeofenceQueueTests.waitFor("every acknowledged fix", timeout: .seconds(60)) {
        acknowledged.isSubset(of: Set(try await Self.timestamps(anna.client)))
      }
      let stored = try await Self.timestamps(anna.client)
      #expect(stored.count == Set(stored).count)
      try await Self.waitForLink(server)
      await again.stop()
    }
  }

  /// The server stops; the phone publishes meanwhile (the broker keeps the messages for the server's persistent
  /// session); the server comes back on the same database and stores every one.
  @Test(.timeLimit(.minutes(5)), arguments: ["sqlite", "postgres"])
  func aServerRestartLosesNothingQueuedByTheBroker(_ engine: String) async throws {
    try await Self.withBroker(engine) { broker, configure in
      let server = try await TestServer.start(configure)
      let anna: (session: AuthSession, client: NetworkClient, credentials: MQTTCredentials)
      let start = Self.now - 1000
      var phone: OwnTracksPhone
      do {
        try await Self.waitForLink(server)
        anna = try await Self.phoneUser(server, "anna")
        phone = Self.phone(broker, anna.credentials)
        phone.publish = [[anna.credentials.topic, ownTracksLocation(tst: start)]]
        #expect(try await Self.connectedOutcome(phone).acked == [0])
        try await GeofenceQueueTests.waitFor("the first fix", timeout: .seconds(30)) {
          try await Self.timestamps(anna.client).count == 1
        }
      } catch {
        try await server.stop()
        throw error
      }
      try await server.stop(keepingFiles: true)
      phone.publish = (1...20).map { [anna.credentials.topic, ownTracksLocation(tst: start + Int64($0))] }
      let whileAway = try await phone.run()
      #expect(whileAway.acked == Array(0..<20))
      let again = try await TestServer.start(directory: server.directory, port: server.port, configure)
      do {
        let client = try again.client(token: anna.session.token)
        try await GeofenceQueueTests.waitFor("the fixes queued while the server was away", timeout: .seconds(60)) {
          try await Self.timestamps(client).count == 21
        }
        #expect(Set(try await Self.timestamps(client)) == Set((0...20).map { (start + Int64($0)) * 1000 }))
      } catch {
        try await again.stop()
        throw error
      }
      try await again.stop()
    }
  }
}

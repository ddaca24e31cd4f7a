import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianStoreTesting
import NetworkingKit
import RealtimeKit
import Testing

extension TestServer {
  /// Sends one request as a phone app would, without NetworkClient's conventions, and returns the whole response
  /// (within 60 s: in the server stage, two hundred tests on two cores, a small import once took more than 20).
  func phoneAppRequest(
    _ method: HTTPRequest.Method, _ pathAndQuery: String, headers: HTTPFields = [:], body: Data? = nil
  ) async throws -> TransportResponse {
    let request = HTTPRequest(
      method: method, scheme: "http", authority: "127.0.0.1:\(port)", path: pathAndQuery, headerFields: headers)
    return try await transport.send(
      request, body: body, options: TransportOptions(timeout: .seconds(60), maxResponseBytes: 1 << 20))
  }

  /// `POST /pub` with OwnTracks' headers: HTTP Basic `username:password` and `X-Limit-D: device`.
  func ownTracks(_ json: String, username: String, password: String, device: String? = "phone") async throws
    -> TransportResponse
  {
    var headers: HTTPFields = [.contentType: "application/json"]
    headers[.authorization] = OwnTracksAuth.basic(username: username, password: password)
    headers[try #require(HTTPField.Name(OwnTracksAuth.userHeader))] = username
    if let device { headers[try #require(HTTPField.Name(OwnTracksAuth.deviceHeader))] = device }
    return try await phoneAppRequest(.post, "/pub", headers: headers, body: Data(json.utf8))
  }
}

extension TransportResponse {
  /// The body as OwnTracks messages.
  func ownTracksMessages() throws -> [OwnTracks.Message] { try OwnTracks.decode(body) }

  /// The error envelope's code.
  var errorCode: String? {
    (try? JSONDecoder().decode(StandardErrorEnvelope.self, from: body))?.code
  }
}

/// An OwnTracks `location` message as the apps send it (`tst` in seconds, `vel` in km/h).
func ownTracksLocation(lat: Double = 50.45, lon: Double = 30.52, tst: Int64, extra: String = "") -> String {
  #"{"_type":"location","lat":\#(lat),"lon":\#(lon),"tst":\#(tst),"acc":12,"vel":36,"batt":80,"tid":"an"\#(extra)}"#
}

@Suite("OwnTracks and OsmAnd ingest over HTTP", .inProcess)
struct PhoneAppIngestTests {
  static let password = "correct horse"

  @Test func ownTracksPublishWithPasswordOrTokenIsStored() async throws {
    try await TestServer.with { server in
      let (session, anna) = try await server.signUp("anna")
      // Email and password (the email in any case).
      let first = try await server.ownTracks(
        ownTracksLocation(tst: 1_700_000_000), username: "Anna@Example.com", password: Self.password,
        device: "anna-owntracks")
      #expect(first.head.status == .ok)
      #expect(first.head.headerFields[.contentType] == "application/json")
      #expect(try first.ownTracksMessages() == [])
      // A token as the password, through the shared endpoint definition; the user name is free-form then.
      var headers = HTTPFields()
      headers[.authorization] = OwnTracksAuth.basic(username: "anna", password: session.token)
      headers[try #require(HTTPField.Name(OwnTracksAuth.deviceHeader))] = "anna-owntracks"
      let location = OwnTracks.Location(lat: 50.46, lon: 30.53, tst: 1_700_000_060, acc: 5, t: "u")
      let reply = try await server.client().send(API.ownTracksPublish, body: .location(location), headerFields: headers)
      #expect(reply == [])
      // The token with its own account's email works too.
      let third = try await server.ownTracks(
        ownTracksLocation(tst: 1_700_000_120), username: "anna@example.com", password: session.token,
        device: "anna-owntracks")
      #expect(third.head.status == .ok)

      let history = try await anna.send(API.history, parameters: HistoryQuery()).fixes
      #expect(history.map(\.timestamp) == [1_700_000_120_000, 1_700_000_060_000, 1_700_000_000_000])
      #expect(history.allSatisfy { $0.deviceID == "anna-owntracks" })
      let oldest = try #require(history.last)
      #expect(oldest.latitude == 50.45 && oldest.longitude == 30.52)
      #expect(oldest.horizontalAccuracy == 12)
      #expect(oldest.speed == 10)  // 36 km/h
      #expect(oldest.batteryLevel == 80)
      #expect(history[1].trigger == .manual)
    }
  }

  @Test func ownTracksDeviceIsTheHeaderOrTheTopicNeverTheTrackerID() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let email = "anna@example.com"
      _ = try await server.ownTracks(
        ownTracksLocation(tst: 1_700_000_000, extra: #","topic":"owntracks/anna/pixel""#), username: email,
        password: Self.password, device: nil)
      // The two-character tid names a marker, not a device: without X-Limit-D or a topic the message is refused.
      let unnamed = try await server.ownTracks(
        ownTracksLocation(tst: 1_700_000_001), username: email, password: Self.password, device: nil)
      #expect(unnamed.head.status == .badRequest)
      #expect(unnamed.errorCode == APIErrorCode.invalidRequest.rawValue)
      let devices = try await anna.send(API.history, parameters: HistoryQuery()).fixes.compactMap(\.deviceID)
      #expect(devices == ["pixel"])
      // Device ids are global, as for POST /v1/fixes: Bob can't report as Anna's device.
      _ = try await server.signUp("bob")
      let taken = try await server.ownTracks(
        ownTracksLocation(tst: 1_700_000_002), username: "bob@example.com", password: Self.password, device: "pixel")
      #expect(taken.head.status == .forbidden)
      #expect(taken.errorCode == APIErrorCode.deviceNotOwned.rawValue)
    }
  }

  @Test func otherMessageTypesAndEmptyBodiesAreAcceptedAndIgnored() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let email = "anna@example.com"
      for body in [
        #"{"_type":"transition","wtst":1700000000,"lat":50.4,"lon":30.5,"tst":1700000100,"event":"enter","desc":"Home"}"#,
        #"{"_type":"waypoint","tst":1700000000,"lat":50.4,"lon":30.5,"rad":100,"desc":"Home"}"#,
        #"{"_type":"lwt","tst":1700000000}"#,
        #"{"_type":"status","android":{}}"#,
        "",
      ] {
        let response = try await server.ownTracks(body, username: email, password: Self.password)
        #expect(response.head.status == .ok, "\(body)")
        #expect(try response.ownTracksMessages() == [], "\(body)")
      }
      #expect(try await anna.send(API.history, parameters: HistoryQuery()).fixes.isEmpty)
    }
  }

  @Test func wrongCredentialsAre401WithABasicChallenge() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      _ = try await server.signUp("bob")
      let location = ownTracksLocation(tst: 1_700_000_000)
      let cases: [(username: String, password: String, code: APIErrorCode)] = [
        ("anna@example.com", "wrong horse", .invalidCredentials),
        ("nobody@example.com", Self.password, .invalidCredentials),
        ("anna", "not-a-token", .tokenInvalid),
        // Anna's token does not sign Bob in.
        ("bob@example.com", annaSession.token, .invalidCredentials),
      ]
      for (username, password, code) in cases {
        let response = try await server.ownTracks(location, username: username, password: password)
        #expect(response.head.status == .unauthorized, "\(username)")
        #expect(response.errorCode == code.rawValue, "\(username)")
        #expect(response.head.headerFields[.wwwAuthenticate]?.hasPrefix("Basic") == true)
      }
      // No Authorization at all.
      let anonymous = try await server.phoneAppRequest(
        .post, "/pub", headers: [.contentType: "application/json"], body: Data(location.utf8))
      #expect(anonymous.head.status == .unauthorized)
      #expect(anonymous.errorCode == APIErrorCode.invalidCredentials.rawValue)
      #expect(anonymous.head.headerFields[.wwwAuthenticate]?.hasPrefix("Basic") == true)
      #expect(try await anna.send(API.history, parameters: HistoryQuery()).fixes.isEmpty)
      // A revoked token no longer works.
      _ = try await anna.send(API.logout)
      let revoked = try await server.ownTracks(location, username: "anna", password: annaSession.token)
      #expect(revoked.head.status == .unauthorized)
      #expect(revoked.errorCode == APIErrorCode.tokenInvalid.rawValue)
    }
  }

  @Test func replyHoldsFriendsLocationsAndCardsOnlyWhenAllowed() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, _) = try await server.signUp("bob")
      _ = try await server.signUp("carol")
      let annaID = annaSession.userId
      // The face is the avatar's PNG (the 8 bytes of a PNG signature are enough for the blob store).
      let face = try await anna.send(API.uploadBlob, body: Data(base64Encoded: "iVBORw0KGgo=")!)
      _ = try await anna.send(
        API.updateProfile, body: ProfileUpdate(avatar: face.url, fullName: "Anna Karenina", status: "hi"))
      let groups = try await anna.send(API.groups).groups
      let friends = try #require(groups.first { $0.kind == .friends })
      let blacklist = try #require(groups.first { $0.kind == .blacklist })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      let annaFixes = try makeFixes(count: 2)
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: annaFixes))

      func reply(_ name: String, tst: Int64) async throws -> [OwnTracks.Message] {
        let response = try await server.ownTracks(
          ownTracksLocation(lat: 50.0, lon: 30.0, tst: tst), username: "\(name)@example.com", password: Self.password,
          device: "\(name)-phone")
        #expect(response.head.status == .ok)
        return try response.ownTracksMessages()
      }

      // Bob (Friends: location, avatar, name, status) gets Anna's last fix and her card. The topic names her device by
      // the handle every viewer sees, never by its id.
      let newest = try #require(annaFixes.last)
      let handle = try #require(
        try await server.client(token: bobSession.token).send(API.userLocation, parameters: UserRef(id: annaID)).fix?
          .deviceID)
      #expect(handle != "anna-phone")
      let expectedLocation = OwnTracks.Location(
        newest, tid: "AK", topic: "owntracks/\(annaID.rawValue)/\(handle.rawValue)")
      #expect(
        try await reply("bob", tst: 1_700_000_000) == [
          .location(expectedLocation), .card(OwnTracks.Card(name: "Anna Karenina", face: "iVBORw0KGgo=", tid: "AK")),
        ])
      // Carol is in none of Anna's groups; Anna, who sees nobody, gets nothing either (not even herself).
      #expect(try await reply("carol", tst: 1_700_000_000) == [])
      #expect(try await reply("anna", tst: 1_750_000_000) == [])
      // Anna's OwnTracks fix is now her newest: Bob's next reply carries it.
      let bobView = try await reply("bob", tst: 1_700_000_001)
      guard case .location(let moved)? = bobView.first else {
        Issue.record("no location in \(bobView)")
        return
      }
      #expect(moved.tst == 1_750_000_000 && moved.topic == "owntracks/\(annaID.rawValue)/\(handle.rawValue)")

      // Location without profile fields: the location stays, the card goes, the tid no longer spells her name.
      _ = try await anna.send(
        API.updateGroup, parameters: GroupRef(id: friends.id),
        body: GroupUpdate(visibility: GroupVisibility(location: true, fields: [])))
      let anonymous = try await reply("bob", tst: 1_700_000_002)
      #expect(anonymous.count == 1)
      guard case .location(let bare)? = anonymous.first else {
        Issue.record("no location in \(anonymous)")
        return
      }
      #expect(bare.tid == String(annaID.rawValue.suffix(2)).uppercased())
      _ = try await anna.send(
        API.updateGroup, parameters: GroupRef(id: friends.id), body: GroupUpdate(visibility: .everything))

      // Blacklist overrides Friends; pause hides Anna from everyone.
      _ = try await anna.send(
        API.addMember, parameters: GroupMemberRef(groupID: blacklist.id, userID: bobSession.userId))
      #expect(try await reply("bob", tst: 1_700_000_003) == [])
      _ = try await anna.send(
        API.removeMember, parameters: GroupMemberRef(groupID: blacklist.id, userID: bobSession.userId))
      #expect(try await reply("bob", tst: 1_700_000_004).count == 2)
      _ = try await anna.send(API.pauseSharing)
      #expect(try await reply("bob", tst: 1_700_000_005) == [])
    }
  }

  /// Issue 39 §5: in HTTP mode the apps file a card and a location under `owntracks/http/<tid>`, so two friends
  /// with the same initials got one contact (one card over two people); each person of a reply now has a tid of
  /// their own. A JPEG photo is a face too (OwnTracks' card format takes JPEG or PNG); a name or photo hidden from
  /// the viewer stays out of the card.
  @Test func cardsTieToTheirPeopleAndHoldOnlyWhatTheViewerSees() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (alexeiSession, alexei) = try await server.signUp("alexei")
      let (bobSession, _) = try await server.signUp("bob")
      let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01])
      let photo = try await anna.send(API.uploadBlob, body: jpeg)
      _ = try await anna.send(API.updateProfile, body: ProfileUpdate(avatar: photo.url, fullName: "Anna Karenina"))
      _ = try await alexei.send(API.updateProfile, body: ProfileUpdate(fullName: "Alexei Karenin"))
      var friendsGroups: [GroupID] = []
      for (client, start, device) in [
        (anna, Int64(1_700_000_000_000), "anna-phone"), (alexei, 1_700_000_100_000, "alexei-phone"),
      ] {
        let friends = try #require(try await client.send(API.groups).groups.first { $0.kind == .friends })
        friendsGroups.append(friends.id)
        _ = try await client.send(
          API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
        _ = try await client.send(
          API.postFixes, body: FixBatch(deviceId: DeviceID(device), fixes: try makeFixes(count: 1, start: start)))
      }
      var tst: Int64 = 1_700_000_200
      /// Bob's reply: each person's card (nil when none) and tid, by user id; every tid names one person.
      func cards() async throws -> [UserID: (tid: String, card: OwnTracks.Card?)] {
        tst += 1
        let response = try await server.ownTracks(
          ownTracksLocation(tst: tst), username: "bob@example.com", password: Self.password, device: "bob-phone")
        #expect(response.head.status == .ok)
        var people: [UserID: (tid: String, card: OwnTracks.Card?)] = [:]
        var owners: [String: UserID] = [:]
        for message in try response.ownTracksMessages() {
          if case .location(let location) = message, let topic = location.topic, let tid = location.tid {
            let owner = UserID(String(topic.split(separator: "/")[1]))
            #expect(owners[tid] == nil, "tid \(tid) names two people")
            owners[tid] = owner
            people[owner] = (tid, nil)
          } else if case .card(let card) = message {
            let owner = try #require(owners[card.tid ?? ""], "a card of no location before it: \(card)")
            people[owner]?.card = card
          }
        }
        return people
      }

      let both = try await cards()
      let annaTid = try #require(both[annaSession.userId]?.tid)
      let alexeiTid = try #require(both[alexeiSession.userId]?.tid)
      #expect(Set([annaTid, alexeiTid]) == ["AK", "A2"])
      #expect(
        both[annaSession.userId]?.card
          == OwnTracks.Card(name: "Anna Karenina", face: jpeg.base64EncodedString(), tid: annaTid))
      #expect(both[alexeiSession.userId]?.card == OwnTracks.Card(name: "Alexei Karenin", tid: alexeiTid))

      // The name only: no face. The photo only: no name, and a tid that doesn't spell the name.
      let friends = friendsGroups[0]
      _ = try await anna.send(
        API.updateGroup, parameters: GroupRef(id: friends),
        body: GroupUpdate(visibility: GroupVisibility(location: true, fields: [.fullName])))
      let named = try #require(try await cards()[annaSession.userId])
      #expect(named.card == OwnTracks.Card(name: "Anna Karenina", tid: named.tid))
      _ = try await anna.send(
        API.updateGroup, parameters: GroupRef(id: friends),
        body: GroupUpdate(visibility: GroupVisibility(location: true, fields: [.avatar])))
      let faced = try #require(try await cards()[annaSession.userId])
      #expect(faced.card == OwnTracks.Card(face: jpeg.base64EncodedString(), tid: faced.tid))
      #expect(faced.tid == String(annaSession.userId.rawValue.suffix(2)).uppercased())
    }
  }

  @Test func duplicatePublishStoresOnceAndMalformedInputLosesNothing() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let email = "anna@example.com"
      let location = ownTracksLocation(tst: 1_700_000_000)
      for _ in 0..<2 {
        let response = try await server.ownTracks(location, username: email, password: Self.password)
        #expect(response.head.status == .ok)
      }
      // An array of messages (as queued by the apps) is stored together; its repeated fix counts once.
      let batch = "[\(location),\(ownTracksLocation(tst: 1_700_000_010)),\(ownTracksLocation(tst: 1_700_000_020))]"
      #expect(try await server.ownTracks(batch, username: email, password: Self.password).head.status == .ok)

      let malformed: [(body: String, code: APIErrorCode)] = [
        (#"{"_type":"location","lat":50.4,"lon":"#, .invalidJSON),
        (#"{"_type":"location","lat":50.4,"lon":30.5}"#, .invalidJSON),  // no tst
        (#"{"lat":50.4,"lon":30.5,"tst":1700000030}"#, .invalidJSON),  // no _type
        (ownTracksLocation(lat: 95, tst: 1_700_000_030), .invalidFix),
        (ownTracksLocation(lon: -181, tst: 1_700_000_030), .invalidFix),
        ("[\(ownTracksLocation(tst: 1_700_000_040)),\(ownTracksLocation(lat: -91, tst: 1_700_000_050))]", .invalidFix),
      ]
      for (body, code) in malformed {
        let response = try await server.ownTracks(body, username: email, password: Self.password)
        #expect(response.head.status == .badRequest, "\(body)")
        #expect(response.errorCode == code.rawValue, "\(body)")
      }
      let stored = try await anna.send(API.history, parameters: HistoryQuery()).fixes.map(\.timestamp)
      #expect(stored == [1_700_000_020_000, 1_700_000_010_000, 1_700_000_000_000])
    }
  }

  @Test func osmAndGetAndPostForADeviceWhoseOwnerEnabledIt() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "827361", fixes: try makeFixes(count: 1, start: 1_600_000_000_000)))
      // The owner enables OsmAnd for the device and types the identifier she gets into the app.
      let access = try await anna.send(API.enableOsmAnd, parameters: DeviceRef(id: "827361"))
      #expect(access.deviceId == "827361" && access.path == "/osmand")
      #expect(access.identifier.count >= 22 && access.identifier != "827361")
      let id = access.identifier

      let get = try await server.phoneAppRequest(
        .get,
        "/osmand?id=\(id)&lat=50.4501&lon=30.5234&timestamp=1700000100&speed=10&bearing=90&altitude=170"
          + "&accuracy=8&batt=55.5&charge=true")
      #expect(get.head.status == .ok)
      #expect(get.body.isEmpty)
      let form = try await server.phoneAppRequest(
        .post, "/osmand", headers: [.contentType: "application/x-www-form-urlencoded"],
        body: Data("id=\(id)&lat=50.46&lon=30.53&timestamp=2023-11-14T22%3A18%3A20Z".utf8))
      #expect(form.head.status == .ok)
      // Some clients POST with the parameters in the query and no body.
      let queryPost = try await server.phoneAppRequest(
        .post, "/osmand?deviceid=\(id)&location=50.47,30.54&timestamp=1700000500000")
      #expect(queryPost.head.status == .ok)
      // Traccar Client 9+ sends JSON to the same route.
      let json = #"""
        {"device_id":"\#(id)","location":{"timestamp":"2023-11-14T22:20:00Z",
        "coords":{"latitude":50.48,"longitude":30.55,"accuracy":4,"speed":-1},"battery":{"level":0.5}}}
        """#
      let traccar = try await server.phoneAppRequest(
        .post, "/osmand", headers: [.contentType: "application/json"], body: Data(json.utf8))
      #expect(traccar.head.status == .ok)
      // The shared endpoint definitions write the same protocol.
      let fix = try LocationFix(timestamp: 1_700_000_700_000, latitude: 50.49, longitude: 30.56, kind: .movement)
      _ = try await server.client().send(
        API.osmAndReport, parameters: OsmAndFix(deviceID: DeviceID(id), fix: fix))
      let posted = try LocationFix(timestamp: 1_700_000_800_000, latitude: 50.5, longitude: 30.57, kind: .movement)
      _ = try await server.client().send(API.osmAndPost, body: OsmAndFix(deviceID: DeviceID(id), fix: posted))
      // A repeated report is stored once.
      _ = try await server.phoneAppRequest(.get, "/osmand?id=\(id)&lat=50.4501&lon=30.5234&timestamp=1700000100")

      let history = try await anna.send(API.history, parameters: HistoryQuery()).fixes
      #expect(
        history.map(\.timestamp) == [
          1_700_000_800_000, 1_700_000_700_000, 1_700_000_500_000, 1_700_000_400_000, 1_700_000_300_000,
          1_700_000_100_000, 1_600_000_000_000,
        ])
      #expect(history.allSatisfy { $0.deviceID == "827361" })
      let first = try #require(history.first { $0.timestamp == 1_700_000_100_000 })
      #expect(first.latitude == 50.4501 && first.longitude == 30.5234)
      #expect(abs((first.speed ?? 0) - 10 * 1852 / 3600) < 1e-9)
      #expect(first.course == 90 && first.altitude == 170 && first.horizontalAccuracy == 8)
      #expect(first.batteryLevel == 55.5 && first.batteryState == .charging)
      let fromJSON = try #require(history.first { $0.timestamp == 1_700_000_400_000 })
      #expect(fromJSON.speed == nil && fromJSON.batteryLevel == 50)
    }
  }

  @Test func osmAndRefusesUnknownIdentifiersDeviceIdsAndBadValues() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "827361", fixes: try makeFixes(count: 1, start: 1_600_000_000_000)))
      let id = try await anna.send(API.enableOsmAnd, parameters: DeviceRef(id: "827361")).identifier
      let cases: [(query: String, status: HTTPResponse.Status, code: APIErrorCode)] = [
        ("id=000000&lat=50.45&lon=30.52&timestamp=1700000000", .unauthorized, .invalidCredentials),
        // The device's own id is not its OsmAnd identifier.
        ("id=827361&lat=50.45&lon=30.52&timestamp=1700000000", .unauthorized, .invalidCredentials),
        ("id=\(id)&lat=91&lon=30.52&timestamp=1700000000", .badRequest, .invalidFix),
        ("id=\(id)&lat=50.45&lon=181&timestamp=1700000000", .badRequest, .invalidFix),
        ("id=\(id)&lat=north&lon=30.52&timestamp=1700000000", .badRequest, .invalidFix),
        ("id=\(id)&lat=50.45&lon=30.52&timestamp=yesterday", .badRequest, .invalidFix),
        ("id=\(id)&lat=50.45&lon=30.52&timestamp=99999999999999", .badRequest, .invalidFix),
        ("id=\(id)&lon=30.52&timestamp=1700000000", .badRequest, .invalidFix),
        ("lat=50.45&lon=30.52&timestamp=1700000000", .badRequest, .invalidRequest),
      ]
      for (query, status, code) in cases {
        for method in [HTTPRequest.Method.get, .post] {
          let response = try await server.phoneAppRequest(method, "/osmand?\(query)")
          #expect(response.head.status == status, "\(method) \(query)")
          #expect(response.errorCode == code.rawValue, "\(method) \(query)")
        }
      }
      let form = try await server.phoneAppRequest(
        .post, "/osmand", headers: [.contentType: "application/x-www-form-urlencoded"],
        body: Data("id=\(id)&lat=-90.5&lon=30&timestamp=1700000000".utf8))
      #expect(form.head.status == .badRequest)
      #expect(form.errorCode == APIErrorCode.invalidFix.rawValue)
      #expect(try await anna.send(API.history, parameters: HistoryQuery()).fixes.count == 1)
    }
  }

  @Test func fixesFromEveryRouteAreFannedOutToAllowedViewers() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let (bobSession, _) = try await server.signUp("bob")
      let (carolSession, _) = try await server.signUp("carol")
      let friends = try #require(try await anna.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await anna.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bobSession.userId))
      let channel = try ChannelName.of(user: annaSession.userId)
      let bob = await LiveWatcher(server: server, token: bobSession.token)
      let carol = await LiveWatcher(server: server, token: carolSession.token)
      #expect(try await bob.subscribe(channel))
      #expect(try await !carol.subscribe(channel))

      _ = try await server.ownTracks(
        ownTracksLocation(tst: 1_700_000_000), username: "anna@example.com", password: Self.password,
        device: "anna-owntracks")
      try await bob.wait("the OwnTracks fix") { _ in try await bob.locations(on: channel).count == 1 }
      let id = try await anna.send(API.enableOsmAnd, parameters: DeviceRef(id: "anna-owntracks")).identifier
      _ = try await server.phoneAppRequest(.get, "/osmand?id=\(id)&lat=50.5&lon=30.6&timestamp=1700000100")
      try await bob.wait("the OsmAnd fix") { _ in try await bob.locations(on: channel).count == 2 }
      let received = try await bob.locations(on: channel)
      // Viewers see the device by a handle, the same in both events, never by its id.
      let handles = Set(received.map(\.deviceId) + received.flatMap { $0.fixes.compactMap(\.deviceID) })
      #expect(handles.count == 1 && !handles.contains("anna-owntracks"))
      #expect(received.flatMap { $0.fixes.map(\.timestamp) } == [1_700_000_000_000, 1_700_000_100_000])
      #expect(try await carol.locations(on: channel).isEmpty)
      await bob.stop()
      await carol.stop()
    }
  }
}

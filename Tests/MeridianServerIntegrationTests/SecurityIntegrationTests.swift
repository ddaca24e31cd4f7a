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

/// The findings of the security probe (issue "a device id is not a password"), each as the attack it describes,
/// against a real server on loopback.
@Suite("Security: device ids, guessing, limits and headers")
struct SecurityIntegrationTests {
  static let password = "correct horse"
  static let adminToken = ServerConfiguration.developmentAdminToken

  static var now: Int64 { Timestamp.milliseconds(Date()) }

  // MARK: High: a device id is not a password

  @Test func aDeviceIDLearnedByAViewerWritesNothingThroughOsmAnd() async throws {
    try await TestServer.with { server in
      let (anna, annaClient) = try await server.signUp("anna")
      let (bob, _) = try await server.signUp("bob")
      let friends = try #require(try await annaClient.send(API.groups).groups.first { $0.kind == .friends })
      _ = try await annaClient.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bob.userId))
      _ = try await annaClient.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1, start: Self.now - 60_000)))

      // What Bob can learn of Anna's device is a handle, and neither the handle nor the id writes her location.
      let bobClient = try server.client(token: bob.token)
      let seen = try await bobClient.send(API.userLocation, parameters: UserRef(id: anna.userId))
      let handle = try #require(seen.fix?.deviceID)
      #expect(handle != "anna-phone")
      #expect(
        try await annaClient.send(API.userLocation, parameters: UserRef(id: anna.userId)).fix?.deviceID == "anna-phone")
      for id in ["anna-phone", handle.rawValue, "an", "AN"] {
        let forged = try await server.phoneAppRequest(
          .get, "/osmand?id=\(id)&lat=12.34&lon=56.78&timestamp=\(Self.now / 1000)")
        #expect(forged.head.status == .unauthorized, "\(id)")
      }
      #expect(try await bobClient.send(API.userLocation, parameters: UserRef(id: anna.userId)).fix?.latitude != 12.34)
      #expect(try await annaClient.send(API.history, parameters: HistoryQuery()).fixes.count == 1)
    }
  }

  @Test func osmAndIsEnabledPerDeviceWithAnIdentifierThatCanBeReplacedAndRevoked() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let (_, bob) = try await server.signUp("bob")
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1, start: Self.now - 60_000)))
      #expect(try await anna.send(API.devices).devices.map(\.osmAnd) == [false])

      func report(_ id: String, _ offset: Int64) async throws -> HTTPResponse.Status {
        let seconds = (Self.now - 50_000 + offset * 1000) / 1000
        return try await server.phoneAppRequest(.get, "/osmand?id=\(id)&lat=50.1&lon=30.1&timestamp=\(seconds)").head
          .status
      }
      let first = try await anna.send(API.enableOsmAnd, parameters: DeviceRef(id: "anna-phone")).identifier
      #expect(first.count >= 22)  // ≥ 128 bits of base64url
      #expect(try await report(first, 1) == .ok)
      let devices = try await anna.send(API.devices).devices
      #expect(devices.map(\.id) == ["anna-phone"] && devices.map(\.osmAnd) == [true])
      // A new identifier replaces the old one; revoking stops the new one.
      let second = try await anna.send(API.enableOsmAnd, parameters: DeviceRef(id: "anna-phone")).identifier
      #expect(second != first)
      #expect(try await report(first, 2) == .unauthorized)
      #expect(try await report(second, 3) == .ok)
      await expectAPIError(.deviceNotOwned, status: 403) {
        try await bob.send(API.enableOsmAnd, parameters: DeviceRef(id: "anna-phone"))
      }
      await expectAPIError(.notFound, status: 404) {
        try await bob.send(API.disableOsmAnd, parameters: DeviceRef(id: "anna-phone"))
      }
      _ = try await anna.send(API.disableOsmAnd, parameters: DeviceRef(id: "anna-phone"))
      #expect(try await report(second, 4) == .unauthorized)
      #expect(try await anna.send(API.history, parameters: HistoryQuery()).fixes.count == 3)
    }
  }

  @Test func fixesDatedInTheFutureAreRefusedOnEveryRoute() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let id = try await anna.send(API.enableOsmAnd, parameters: DeviceRef(id: "anna-phone")).identifier
      let hourAhead = Self.now + 3_600_000
      await expectAPIError(.invalidFix, status: 400) {
        try await anna.send(
          API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1, start: hourAhead)))
      }
      let osmAnd = try await server.phoneAppRequest(
        .get, "/osmand?id=\(id)&lat=12.34&lon=56.78&timestamp=2199-12-31T00:00:00Z")
      #expect(osmAnd.head.status == .badRequest && osmAnd.errorCode == APIErrorCode.invalidFix.rawValue)
      let ownTracks = try await server.ownTracks(
        ownTracksLocation(tst: hourAhead / 1000), username: "anna@example.com", password: Self.password)
      #expect(ownTracks.head.status == .badRequest && ownTracks.errorCode == APIErrorCode.invalidFix.rawValue)
      // Out of any range, and seconds sent as milliseconds (January 1970), with a message that says so.
      for timestamp: Int64 in [-1, Int64.max, 1_795_656_894] {
        await expectAPIError(.invalidFix, status: 400) {
          try await anna.send(
            API.postFixes,
            body: FixBatch(
              deviceId: "anna-phone", fixes: [try LocationFix(timestamp: timestamp, latitude: 50, longitude: 30)]))
        }
      }
      do {
        _ = try await anna.send(
          API.postFixes,
          body: FixBatch(
            deviceId: "anna-phone", fixes: [try LocationFix(timestamp: 1_700_000_000, latitude: 50, longitude: 30)]))
        Issue.record("a timestamp in seconds was accepted")
      } catch let error as NetworkingError {
        #expect(error.serverError?.message?.contains("seconds") == true, "\(error)")
      }
      // A few seconds of clock drift are fine.
      _ = try await anna.send(
        API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 1, start: Self.now + 5_000)))
      #expect(try await anna.send(API.history, parameters: HistoryQuery()).fixes.count == 1)
    }
  }

  @Test func aFutureFixAlreadyStoredIsNeverTheLastLocation() async throws {
    let server = try await TestServer.start()
    let (anna, annaClient) = try await server.signUp("anna")
    let (bob, _) = try await server.signUp("bob")
    let friends = try #require(try await annaClient.send(API.groups).groups.first { $0.kind == .friends })
    _ = try await annaClient.send(API.addMember, parameters: GroupMemberRef(groupID: friends.id, userID: bob.userId))
    let real = try makeFixes(count: 1, start: Self.now - 60_000)
    _ = try await annaClient.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: real))
    // A forged fix stored before the server refused them (the probe's 2199-12-31), straight into the database.
    let store = try SQLiteStore.open(at: server.directory.appendingPathComponent("meridian.sqlite").path)
    let forged = try LocationFix(timestamp: 7_258_032_000_000, latitude: 12.34, longitude: 56.78)
    _ = try await store.insertFixes(
      [FixInsertBatch(userID: anna.userId, deviceID: "anna-phone", fixes: [forged])], now: Self.now)
    let seen = try await server.client(token: bob.token).send(API.userLocation, parameters: UserRef(id: anna.userId))
    #expect(seen.fix?.timestamp == real[0].timestamp && seen.fix?.latitude == real[0].latitude)
    try await server.stop()
  }

  @Test func osmAndIsRateLimitedPerIdentifierAndPerAddress() async throws {
    try await TestServer.with({ configuration in
      configuration.limits.osmAndPerDevicePerMinute = 3
      configuration.limits.osmAndPerAddressPerMinute = 5
    }) { server in
      let (_, anna) = try await server.signUp("anna")
      let id = try await anna.send(API.enableOsmAnd, parameters: DeviceRef(id: "anna-phone")).identifier
      var statuses: [Int] = []
      for index in 0..<4 {
        let seconds = (Self.now - 60_000) / 1000 + Int64(index)
        statuses.append(
          try await server.phoneAppRequest(.get, "/osmand?id=\(id)&lat=50&lon=30&timestamp=\(seconds)").head.status.code
        )
      }
      #expect(statuses == [200, 200, 200, 429])
      // Guessing identifiers from one address runs into the address's limit.
      let guess = try await server.phoneAppRequest(.get, "/osmand?id=guess1&lat=50&lon=30&timestamp=1700000000")
      #expect(guess.head.status == .unauthorized)
      let limited = try await server.phoneAppRequest(.get, "/osmand?id=guess2&lat=50&lon=30&timestamp=1700000000")
      #expect(limited.head.status == .tooManyRequests)
      #expect(limited.head.headerFields[.retryAfter].flatMap(Int.init).map { $0 > 0 } == true)
    }
  }

  @Test func aDisabledAccountIsRefusedEverywhere() async throws {
    try await TestServer.with { server in
      let (anna, annaClient) = try await server.signUp("anna")
      let id = try await annaClient.send(API.enableOsmAnd, parameters: DeviceRef(id: "anna-phone")).identifier
      _ = try await server.client(token: Self.adminToken).send(
        API.adminDisableUser, parameters: AdminUserRef(user: anna.userId.rawValue))
      let osmAnd = try await server.phoneAppRequest(
        .get, "/osmand?id=\(id)&lat=50&lon=30&timestamp=\((Self.now - 1000) / 1000)")
      #expect(osmAnd.head.status == .unauthorized)
      await expectAPIError(.accountDisabled, status: 403) {
        try await server.client().send(
          API.login, body: EmailCredentials(email: "anna@example.com", password: Self.password))
      }
      let pub = try await server.ownTracks(
        ownTracksLocation(tst: (Self.now - 1000) / 1000), username: "anna@example.com", password: Self.password)
      #expect(pub.head.status == .forbidden && pub.errorCode == APIErrorCode.accountDisabled.rawValue)
      await expectAPIError(.tokenInvalid, status: 401) { try await annaClient.send(API.me) }
    }
  }

  // MARK: Medium: guessing passwords

  @Test func anUnknownEmailTakesAsLongAsAWrongPassword() async throws {
    try await TestServer.with({ configuration in
      configuration.bcryptCost = 10
      configuration.limits.signInFailuresPerAccount = 0
      configuration.limits.signInFailuresPerAddress = 0
    }) { server in
      _ = try await server.signUp("anna")
      let client = try server.client()
      func seconds(_ email: String) async throws -> Double {
        let start = ContinuousClock.now
        await expectAPIError(.invalidCredentials, status: 401) {
          try await client.send(API.login, body: EmailCredentials(email: email, password: "wrong horse"))
        }
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
      }
      _ = try await seconds("nobody@example.com")  // the decoy hash is made on first use
      var known: [Double] = []
      var unknown: [Double] = []
      for index in 0..<5 {
        known.append(try await seconds("anna@example.com"))
        unknown.append(try await seconds("nobody\(index)@example.com"))
      }
      let median = { (values: [Double]) in values.sorted()[values.count / 2] }
      // bcrypt at cost 10 takes tens of milliseconds; a lookup alone takes about one.
      #expect(median(unknown) > median(known) * 0.5, "unknown \(unknown), known \(known)")
    }
  }

  @Test func passwordGuessingIsSlowedPerAccountAndPerAddress() async throws {
    try await TestServer.with({ configuration in
      configuration.limits.signInFailuresPerAccount = 5
      configuration.limits.signInFailuresPerAddress = 8
      // Long enough that the refused attempts below fall inside it on a loaded machine.
      configuration.limits.signInFirstDelayMilliseconds = 30_000
    }) { server in
      _ = try await server.signUp("anna")
      _ = try await server.signUp("bob")
      let client = try server.client()
      for _ in 0..<5 {
        await expectAPIError(.invalidCredentials, status: 401) {
          try await client.send(API.login, body: EmailCredentials(email: "anna@example.com", password: "wrong horse"))
        }
      }
      // The sixth guess waits, and so does the right password: the account's delay holds whatever is tried.
      async let sixth: Void = expectAPIError(.rateLimited, status: 429) {
        try await client.send(API.login, body: EmailCredentials(email: "anna@example.com", password: "wrong horse"))
      }
      async let right: Void = expectAPIError(.rateLimited, status: 429) {
        try await client.send(API.login, body: EmailCredentials(email: "ANNA@example.com", password: Self.password))
      }
      async let published = server.ownTracks(
        ownTracksLocation(tst: 1_700_000_000), username: "anna@example.com", password: Self.password)
      let (_, _, pub) = try await (sixth, right, published)
      #expect(pub.head.status == .tooManyRequests)
      #expect(pub.head.headerFields[.retryAfter] != nil)
      // Bob's account is fine until the address has failed 8 times in all.
      _ = try await client.send(API.login, body: EmailCredentials(email: "bob@example.com", password: Self.password))
      for _ in 0..<3 {
        await expectAPIError(.invalidCredentials, status: 401) {
          try await client.send(API.login, body: EmailCredentials(email: "bob@example.com", password: "wrong horse"))
        }
      }
      await expectAPIError(.rateLimited, status: 429) {
        try await client.send(API.login, body: EmailCredentials(email: "bob@example.com", password: Self.password))
      }
    }
  }

  @Test func weakLongAndControlCharacterPasswordsAreRefused() async throws {
    try await TestServer.with { server in
      let client = try server.client()
      for password in [
        "password123", "qwertyuiop", "\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}\u{7}\u{8}", String(repeating: "x", count: 73),
      ] {
        await expectAPIError(.invalidPassword, status: 400) {
          try await client.send(API.register, body: EmailCredentials(email: "anna@example.com", password: password))
        }
      }
      // bcrypt reads 72 bytes: a longer password must not sign in with its first 72 and anything after.
      let longest = String(repeating: "horse ", count: 12)
      #expect(longest.utf8.count == 72)
      _ = try await client.send(API.register, body: EmailCredentials(email: "anna@example.com", password: longest))
      _ = try await client.send(API.login, body: EmailCredentials(email: "anna@example.com", password: longest))
      await expectAPIError(.invalidPassword, status: 400) {
        try await client.send(
          API.login, body: EmailCredentials(email: "anna@example.com", password: longest + "anything at all"))
      }
    }
  }

  // MARK: Low

  @Test func controlCharactersInIdentifiersAre400() async throws {
    try await TestServer.with { server in
      let (bob, bobClient) = try await server.signUp("bob")
      let (_, eve) = try await server.signUp("eve")
      _ = try await bobClient.send(
        API.postFixes, body: FixBatch(deviceId: "bob-phone-1", fixes: try makeFixes(count: 1, start: Self.now - 60_000))
      )
      for device in ["bob-phone-1\u{0}zz", "phone\u{0}", "a\nb", "\u{7f}"] {
        await expectAPIError(.invalidRequest, status: 400) {
          try await eve.send(
            API.postFixes,
            body: FixBatch(deviceId: DeviceID(device), fixes: try makeFixes(count: 1, start: Self.now - 1000)))
        }
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await eve.send(API.userProfile, parameters: UserRef(id: UserID(bob.userId.rawValue + "\u{0}")))
      }
      #expect(try await bobClient.send(API.history, parameters: HistoryQuery()).fixes.count == 1)
    }
  }

  @Test func userSearchIsBoundedAndPhoneLookupFollowsThePhoneFieldsAudience() async throws {
    try await TestServer.with({ configuration in configuration.limits.searchesPerAccountPerMinute = 4 }) { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let phone = "+380671234567"
      _ = try await server.client().send(API.requestOTP, body: OTPRequest(phone: phone))
      let code = try #require(await server.sms.lastCode(for: phone))
      let carol = try await server.client().send(API.verifyOTP, body: OTPVerification(phone: phone, code: code))
      let carolClient = try server.client(token: carol.token)

      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.searchUsers, parameters: UserSearchQuery(q: String(repeating: "a", count: 5_000)))
      }
      await expectAPIError(.invalidRequest, status: 400) {
        try await anna.send(API.searchUsers, parameters: UserSearchQuery(q: "\u{0}\u{0}"))
      }
      // Carol's number finds her while her phone field is seen by her groups (the default)…
      #expect(
        try await anna.send(API.searchUsers, parameters: UserSearchQuery(q: phone)).users.map(\.userID) == [
          carol.userId
        ])
      // …and not once she hides it from everybody.
      _ = try await carolClient.send(API.updateProfile, body: ProfileUpdate(audience: [.phone: .nobody]))
      #expect(try await anna.send(API.searchUsers, parameters: UserSearchQuery(q: phone)).users.isEmpty)
      for _ in 0..<2 { _ = try await anna.send(API.searchUsers, parameters: UserSearchQuery(q: "Bob")) }
      // Raw, since NetworkClient would wait out the Retry-After of a GET and ask again.
      let limited = try await server.phoneAppRequest(
        .get, "/v1/users/search?q=Bob", headers: [.authorization: "Bearer \(annaSession.token)"])
      #expect(limited.head.status == .tooManyRequests)
      #expect(limited.head.headerFields[.retryAfter].flatMap(Int.init).map { $0 > 0 } == true)
    }
  }

  @Test func perAccountQuotasHold() async throws {
    try await TestServer.with({ configuration in
      configuration.limits.groupsPerAccount = 2
      configuration.limits.devicesPerAccount = 2
      configuration.limits.tokensPerAccount = 2
      configuration.limits.fixesPerAccountPerMinute = 10
    }) { server in
      let (first, anna) = try await server.signUp("anna")
      for name in ["Climbing", "Choir"] { _ = try await anna.send(API.createGroup, body: NewGroup(name: name)) }
      await expectAPIError(.quotaExceeded, status: 409) {
        try await anna.send(API.createGroup, body: NewGroup(name: "Chess"))
      }
      for device in ["phone", "watch"] {
        _ = try await anna.send(
          API.postFixes,
          body: FixBatch(deviceId: DeviceID(device), fixes: try makeFixes(count: 1, start: Self.now - 60_000)))
      }
      await expectAPIError(.quotaExceeded, status: 409) {
        try await anna.send(
          API.postFixes, body: FixBatch(deviceId: "tablet", fixes: try makeFixes(count: 1, start: Self.now - 60_000)))
      }
      // Raw, since NetworkClient would wait out the Retry-After of an idempotent upload and send it again.
      let batch = try JSONEncoder().encode(
        FixBatch(deviceId: "phone", fixes: try makeFixes(count: 9, start: Self.now - 50_000)))
      let limited = try await server.phoneAppRequest(
        .post, "/v1/fixes", headers: [.authorization: "Bearer \(first.token)", .contentType: "application/json"],
        body: batch)
      #expect(limited.head.status == .tooManyRequests && limited.head.headerFields[.retryAfter] != nil)
      // Signing in past the token quota ends the oldest session.
      for _ in 0..<2 {
        _ = try await server.client().send(
          API.login, body: EmailCredentials(email: "anna@example.com", password: Self.password))
      }
      await expectAPIError(.tokenInvalid, status: 401) { try await server.client(token: first.token).send(API.me) }
    }
  }

  @Test func liveSocketsPerAccountAreLimited() async throws {
    try await TestServer.with({ configuration in configuration.limits.socketsPerAccount = 2 }) { server in
      let (anna, _) = try await server.signUp("anna")
      let (bob, _) = try await server.signUp("bob")
      let channel = try ChannelName.of(user: anna.userId)
      let first = await LiveWatcher(server: server, token: anna.token)
      let second = await LiveWatcher(server: server, token: anna.token)
      #expect(try await first.subscribe(channel))
      #expect(try await second.subscribe(channel))
      let third = await LiveWatcher(server: server, token: anna.token)
      try await third.wait("the third socket's refusal") { items in
        items.contains { item in
          if case .error(let error) = item { return error.code == .tooManyConnections }
          return false
        }
      }
      // Another account is not affected.
      let other = await LiveWatcher(server: server, token: bob.token)
      #expect(try await other.subscribe(try ChannelName.of(user: bob.userId)))
      for watcher in [first, second, third, other] { await watcher.stop() }
    }
  }

  @Test func errorsQuoteAtMostABitOfTheBadValue() async throws {
    try await TestServer.with { server in
      let (session, _) = try await server.signUp("anna")
      let huge = String(repeating: "9x", count: 25_000)
      let response = try await server.phoneAppRequest(
        .get, "/v1/history?limit=\(huge)", headers: [.authorization: "Bearer \(session.token)"])
      #expect(response.head.status == .badRequest)
      #expect(response.body.count < 2_000, "\(response.body.count) bytes")
    }
  }

  @Test func metricsNeedTheAdminTokenAndAnswersCarrySecurityHeaders() async throws {
    try await TestServer.with { server in
      await expectAPIError(.tokenInvalid, status: 401) { try await server.client().send(API.metrics) }
      let (session, _) = try await server.signUp("anna")
      await expectAPIError(.tokenInvalid, status: 401) {
        try await server.client(token: session.token).send(API.metrics)
      }
      let text = String(decoding: try await server.client(token: Self.adminToken).send(API.metrics), as: UTF8.self)
      #expect(text.contains("# TYPE"))

      let login = try await server.phoneAppRequest(
        .post, "/v1/auth/login", headers: [.contentType: "application/json"],
        body: Data(#"{"email":"anna@example.com","password":"correct horse"}"#.utf8))
      #expect(login.head.status == .ok)
      #expect(login.head.headerFields[.cacheControl] == "no-store")
      #expect(login.head.headerFields[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
      let me = try await server.phoneAppRequest(.get, "/v1/me", headers: [.authorization: "Bearer \(session.token)"])
      #expect(me.head.headerFields[.cacheControl] == "no-store")
      // A JSON route refuses a form or a text body, the kind a web page can send anywhere without asking.
      for type in ["text/plain", "application/x-www-form-urlencoded"] {
        let posted = try await server.phoneAppRequest(
          .post, "/v1/auth/login", headers: [.contentType: type],
          body: Data(#"{"email":"anna@example.com","password":"correct horse"}"#.utf8))
        #expect(posted.head.status == .unsupportedMediaType, "\(type)")
        #expect(posted.errorCode == APIErrorCode.unsupportedMediaType.rawValue)
      }
    }
  }

  @Test func metricsCanBePublicWhenConfigured() async throws {
    try await TestServer.with({ configuration in configuration.metricsAccess = .public }) { server in
      let text = try await server.client().send(API.metrics)
      #expect(!text.isEmpty)
    }
  }
}

/// Malformed and slow HTTP against the whole server, over raw sockets (RealtimeKit's tests cover every case of its
/// HTTP server; these check that meridian-server uses it with its configured timeouts).
@Suite("Security: malformed and slow HTTP")
struct MalformedHTTPTests {
  /// Sends `bytes` (after waiting `pause` between the two halves) and reads until the server closes or `deadline`.
  static func exchange(port: Int, _ first: String, then second: String? = nil, pause: Duration = .zero) async throws
    -> (answer: String, closed: Bool)
  {
    let socket = try RawSocket(port: port)
    defer { socket.close() }
    try socket.send(Array(first.utf8))
    if let second {
      try await Task.sleep(for: pause)
      try? socket.send(Array(second.utf8))
    }
    let (bytes, closed) = await socket.readUntilClosed(timeout: .seconds(5))
    return (String(decoding: bytes, as: UTF8.self), closed)
  }

  /// The probe's malformed requests, by name.
  static let malformed: [String: String] = [
    "two Content-Lengths":
      "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    "Content-Length and chunked":
      "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "negative Content-Length": "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    "unknown method": "FOO /health HTTP/1.1\r\nHost: x\r\n\r\n",
    "100 KB header": "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 100_000) + "\r\n\r\n",
  ]

  @Test(arguments: malformed.keys.sorted())
  func malformedRequestsAreAnswered400AndClosed(_ name: String) async throws {
    let request = try #require(Self.malformed[name])
    try await TestServer.with { server in
      let (answer, closed) = try await Self.exchange(port: server.port, request)
      #expect(answer.hasPrefix("HTTP/1.1 400") || answer.hasPrefix("HTTP/1.1 431"), "\(name): \(answer.prefix(80))")
      #expect(closed, "\(name)")
    }
  }

  @Test func aSlowHeadIsCutOffAfterTheHeaderTimeout() async throws {
    try await TestServer.with({ $0.httpTimeouts.header = .milliseconds(300) }) { server in
      let (answer, closed) = try await Self.exchange(
        port: server.port, "GET /health HTTP/1.1\r\nHost: x\r\n", then: "X-Slow: 1\r\n", pause: .milliseconds(100))
      // The client never ends its head. A 408 and the close within the read's 5 s can only come from the configured
      // 300 ms: the default header timeout is 10 s. (A 3 s bound on the whole exchange, once here, failed at 3.06 s
      // in a CI run's busy server stage without telling more.)
      #expect(closed && answer.hasPrefix("HTTP/1.1 408"), "\(answer.prefix(80))")
    }
  }
}

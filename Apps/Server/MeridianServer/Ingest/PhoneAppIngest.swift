import DomainKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NIOCore

/// The routes phone apps report to in their own formats: OwnTracks HTTP mode (`POST /pub`) and the OsmAnd /
/// Traccar client protocol (`GET|POST /osmand`). DomainKit parses the messages; every fix then takes the path of
/// `POST /v1/fixes` (``FixIngest/submit(_:_:idempotency:)``: validation, device claim, group commit, live fan-out), so it is
/// durable before the answer and reaches exactly the viewers allowed to see it.
struct PhoneAppIngest: Sendable {
  let environment: ServerEnvironment
  let ingest: FixIngest
  /// Takes OwnTracks `transition` and `waypoint(s)` messages (``OwnTracksGeofences``).
  var geofences: GeofenceMonitor? = nil
  /// Names the friends' places in `/pub` replies when the gazetteer is loaded (``GazetteerCache/ownTracksPlaces``).
  var gazetteer: GazetteerCache? = nil

  var store: any MeridianStore { environment.store }

  static let deviceField = HTTPField.Name(OwnTracksAuth.deviceHeader)!

  func register(on routes: RouteRegistrar) {
    let basic = routes.authenticating(
      with: PhoneAppBasicAuthenticator(environment: environment), everyRoute: true, basicChallenge: true)
    basic.onStream(API.ownTracksPublish) { call in
      let body = try await call.body.collect()
      let reply = try await publish(user: try call.authenticated(), headers: call.headers, body: body)
      return Response(
        status: .ok, headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: reply)))
    }
    routes.onStream(API.osmAndReport) { call in
      try await osmAnd(query: call.query, body: nil, contentType: nil, address: call.clientAddress)
    }
    routes.onStream(API.osmAndPost) { call in
      try await osmAnd(
        query: call.query, body: try await call.body.collect(), contentType: call.headers[.contentType],
        address: call.clientAddress)
    }
    routes.onStream(API.gpsLoggerReport) { call in
      try await osmAnd(
        query: call.query, body: nil, contentType: nil, address: call.clientAddress, speed: .metresPerSecond)
    }
    routes.onStream(API.gpsLoggerPost) { call in
      try await osmAnd(
        query: call.query, body: try await call.body.collect(), contentType: nil, address: call.clientAddress,
        speed: .metresPerSecond)
    }
    routes.onStream(API.overlandBatch) { call in
      try await overland(
        query: call.query, authorization: call.headers[.authorization], body: { try await call.body.collect() },
        address: call.clientAddress)
    }
  }

  // MARK: OwnTracks

  /// Stores the `location` messages of `body` (other types are ignored) and answers the caller's friends.
  func publish(user: UserID, headers: HTTPFields, body: Data) async throws -> Data {
    try await take(try Self.messages(in: body), from: user, device: headers[Self.deviceField])
    return try OwnTracks.encode(try await reply(to: user, acceptLanguage: headers[.acceptLanguage]))
  }

  /// The OwnTracks messages of a body, from HTTP (`/pub`) or MQTT; none in a blank one (the apps post an empty
  /// body when a friend is deleted).
  /// - Throws: 400 `invalid_json`.
  static func messages(in body: Data) throws(APIError) -> [OwnTracks.Message] {
    guard !body.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 10 || $0 == 13 }) else { return [] }
    do {
      return try OwnTracks.decode(body)
    } catch let error as FormatError {
      throw APIError(status: 400, code: .invalidJSON, message: "The OwnTracks message is malformed: \(error).")
    } catch {
      throw APIError(status: 400, code: .invalidJSON, message: "The OwnTracks message is malformed.")
    }
  }

  /// Takes OwnTracks messages, whether they came over HTTP (`/pub`) or MQTT: stores the `location` messages as
  /// fixes of the device `device` names (the `X-Limit-D` header, or the MQTT topic's device), else of the topic's
  /// device, through ``FixIngest``; gives `transition` and `waypoint(s)` messages to the geofences; ignores the
  /// rest. Returns whether any location was stored.
  @discardableResult
  func take(_ messages: [OwnTracks.Message], from user: UserID, device: String?) async throws -> Bool {
    let locations = messages.compactMap { message -> OwnTracks.Location? in
      if case .location(let location) = message { return location }
      return nil
    }
    if let first = locations.first {
      let device = try Self.deviceName(device, first)
      var fixes: [LocationFix] = []
      for location in locations {
        do {
          fixes.append(try location.fix())
        } catch let error as FormatError {
          throw APIError(status: 400, code: .invalidFix, message: "A fix is invalid: \(error).")
        }
      }
      _ = try await ingest.submit(user, FixBatch(deviceId: device, fixes: fixes))
    }
    if let geofences { try await OwnTracksGeofences(monitor: geofences).take(messages, from: user) }
    return !locations.isEmpty
  }

  /// What a `/pub` answer carries: the friends' last locations and cards (``friends(of:)``), their places named
  /// in the languages of `acceptLanguage` when the gazetteer is loaded.
  func reply(to user: UserID, acceptLanguage: String?) async throws -> [OwnTracks.Message] {
    var reply = try await friends(of: user)
    if let gazetteer {
      let languages = HistoryGeoFeature.languages(requested: nil, acceptLanguage: acceptLanguage)
      reply = try await gazetteer.ownTracksPlaces(reply, languages: languages)
    }
    return reply
  }

  /// `X-Limit-D`, else the device of the topic `owntracks/<user>/<device>`. Never the two-character tracker id
  /// (`tid`): it names a marker on a map, and many phones share the same one.
  static func deviceName(_ header: String?, _ location: OwnTracks.Location) throws(APIError) -> DeviceID {
    func clean(_ text: String?) -> String? {
      guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
      return text
    }
    let topicDevice = location.topic.flatMap { topic -> String? in
      let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
      return parts.count >= 3 ? String(parts[2]) : nil
    }
    guard let name = clean(header) ?? clean(topicDevice) else {
      throw .invalidRequest(
        "Name the device: set the Device ID in the app (sent as \(OwnTracksAuth.deviceHeader)), or send a topic.")
    }
    return DeviceID(name)
  }

  /// The last location and card of every user whose location `viewer` may see now (the viewer excluded), the card
  /// holding only the name and photo the viewer may see (none when neither). The location is the one the viewer may
  /// see (``FixAudience``: exact, coarsened or at the town); a person whose last fix lies in a privacy zone is left
  /// out (OwnTracks has no way to say "in a private zone"). In HTTP mode the apps file every
  /// message under `owntracks/http/<tid>` (iOS and Android alike), so the tid is what ties a card to its location:
  /// each person of one reply gets a tid of their own (``trackerIDs(_:)``).
  func friends(of viewer: UserID) async throws -> [OwnTracks.Message] {
    let now = environment.now()
    let handles = try await environment.deviceHandles.handles()
    var shown: [(owner: UserID, fix: LocationFix, profile: Profile?)] = []
    for owner in try await store.sharingCandidates(viewer: viewer) where owner != viewer {
      guard let settings = try await store.privacySettings(owner: owner),
        Sharing.canSee(viewer, .location, of: settings, at: now),
        let last = try await environment.lastFix(of: owner),
        let seen = await environment.audience.view(of: last, for: viewer, of: settings, at: now).fix
      else { continue }
      let fix = handles.redacted(seen, owner: owner)
      let profile = try await store.profile(owner)?.redacted(
        keeping: Sharing.visibleFields(to: viewer, of: settings, at: now))
      shown.append((owner, fix, profile))
    }
    var messages: [OwnTracks.Message] = []
    let tids = Self.trackerIDs(shown.map { (name: $0.profile?.fullName, user: $0.owner) })
    for (person, tid) in zip(shown, tids) {
      let device = (person.fix.deviceID?.rawValue ?? "device").map { "/+#".contains($0) ? "-" : $0 }
      let topic = "owntracks/\(person.owner.rawValue)/\(String(device))"
      messages.append(.location(OwnTracks.Location(person.fix, tid: tid, topic: topic)))
      var face: String? = nil
      if let avatar = person.profile?.avatar { face = try await self.face(avatar: avatar) }
      if person.profile?.fullName != nil || face != nil {
        messages.append(.card(OwnTracks.Card(name: person.profile?.fullName, face: face, tid: tid)))
      }
    }
    return messages
  }

  /// Two characters for the map: the initials of a visible name, else the end of the user id.
  static func trackerID(name: String?, user: UserID) -> String {
    if let name {
      let words = name.split(whereSeparator: \.isWhitespace)
      let initials = words.count >= 2 ? String(words[0].prefix(1) + words[1].prefix(1)) : String(name.prefix(2))
      if !initials.isEmpty { return initials.uppercased() }
    }
    return String(user.rawValue.suffix(2)).uppercased()
  }

  /// The tids of the people of one reply, in its order (by user id, so the same people get the same tids each
  /// time), distinct: each person's ``trackerID(name:user:)`` unless someone before has it, then its first
  /// character and the first of 2…9, A…Z not taken (the user id when all are).
  static func trackerIDs(_ people: [(name: String?, user: UserID)]) -> [String] {
    var taken: Set<String> = []
    return people.map { person in
      var tid = trackerID(name: person.name, user: person.user)
      if taken.contains(tid) {
        let first = String(tid.prefix(1))
        tid =
          "23456789ABCDEFGHIJKLMNOPQRSTUVWXYZ".lazy.map { first + String($0) }.first { !taken.contains($0) }
          ?? person.user.rawValue
      }
      taken.insert(tid)
      return tid
    }
  }

  /// The largest avatar sent as an OwnTracks face, in bytes (the app shows a 40-point icon).
  static let maximumFaceBytes = 16 * 1024

  /// The base64 image of an avatar uploaded as a PNG or JPEG of at most ``maximumFaceBytes`` (OwnTracks' card
  /// format: "encoded either as a JPEG or as a PNG", 192×192 recommended; the apps decode either; URLs are not
  /// sent, nor WebP).
  func face(avatar: String) async throws -> String? {
    guard let hash = BlobReference.hash(in: avatar), let blob = try await environment.blobs.blob(hash),
      blob.kind == .png || blob.kind == .jpeg, blob.data.count <= Self.maximumFaceBytes
    else { return nil }
    return blob.data.base64EncodedString()
  }

  // MARK: OsmAnd

  /// Stores one OsmAnd / Traccar report for the device whose OsmAnd identifier it carries as `id`. The protocol
  /// carries no credentials: the identifier, long, random and given out only to the device's owner
  /// (`POST /v1/devices/{id}/osmand`), is the proof. GPSLogger's custom URL (`/gpslogger`) sends the same parameters
  /// with `speed` in m/s.
  func osmAnd(
    query: String, body: Data?, contentType: String?, address: String, speed: OsmAnd.SpeedUnit = .knots
  ) async throws -> Response {
    try await limitAddress(address)
    let report: OsmAndReport
    let json = body != nil && contentType?.lowercased().hasPrefix("application/json") == true
    do {
      if let body, json {
        report = try OsmAnd.parse(json: body)
      } else {
        var text = query
        if let body, !body.isEmpty { text += "&" + String(decoding: body, as: UTF8.self) }
        report = try OsmAnd.parse(query: text, receivedAt: environment.now(), speed: speed)
      }
    } catch let error as FormatError {
      // Traccar Client's JSON that is no JSON at all is `invalid_json`; a missing id `invalid_request`.
      let code: APIErrorCode =
        error.field == nil
        ? (json ? .invalidJSON : .invalidRequest) : error.field == "id" ? .invalidRequest : .invalidFix
      throw APIError(status: 400, code: code, message: "The OsmAnd report is invalid: \(echo("\(error)", limit: 200))")
    }
    let (device, owner) = try await reportingDevice(identifier: report.deviceID.rawValue)
    _ = try await ingest.submit(owner, FixBatch(deviceId: device, fixes: [report.fix]))
    return Response(status: .ok)
  }

  // MARK: Overland

  /// Stores an Overland batch for the device whose OsmAnd identifier is the app's access token (`Authorization:
  /// Bearer`, else `?token=` in the receiver URL) and answers `{"result":"ok"}`, the only answer on which the app
  /// deletes the batch. The batch is checked whole before anything is stored: a bad feature is 400 and the app keeps
  /// (and later resends) the batch; points already stored are stored once.
  func overland(
    query: String, authorization: String?, body: () async throws -> Data, address: String
  ) async throws -> Response {
    try await limitAddress(address)
    let token = Self.bearerToken(authorization) ?? Self.queryValue("token", in: query)
    guard let token, !token.isEmpty else {
      throw APIError(
        status: 401, code: .invalidCredentials,
        message: "Type the device's OsmAnd identifier into Overland as its access token, or add ?token=… to the "
          + "receiver URL.")
    }
    let (device, owner) = try await reportingDevice(identifier: token)
    let fixes: [LocationFix]
    do {
      fixes = try Overland.parse(try await body())
    } catch let error as FormatError {
      throw APIError(
        status: 400, code: error.field == nil ? .invalidJSON : .invalidFix,
        message: "The Overland batch is invalid: \(echo("\(error)", limit: 300))")
    }
    if !fixes.isEmpty {
      _ = try await ingest.submit(owner, FixBatch(deviceId: device, fixes: fixes), name: { "locations[\($0)]" })
    }
    return Response(
      status: .ok, headers: [.contentType: "application/json"],
      body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"result":"ok"}"#)))
  }

  /// The token of a `Bearer` authorization value.
  static func bearerToken(_ authorization: String?) -> String? {
    guard let parts = authorization?.split(separator: " ", maxSplits: 1), parts.count == 2,
      parts[0].lowercased() == "bearer"
    else { return nil }
    return parts[1].trimmingCharacters(in: .whitespaces)
  }

  /// The first value of `name` in a query string, percent-decoded.
  static func queryValue(_ name: String, in query: String) -> String? {
    for part in query.split(separator: "&") {
      let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      guard pieces[0] == name[...] else { continue }
      let value = pieces.count > 1 ? pieces[1].replacingOccurrences(of: "+", with: " ") : ""
      return value.removingPercentEncoding ?? value
    }
    return nil
  }

  // MARK: Per-device identifiers

  /// Reports without an account's credentials (OsmAnd, GPSLogger, Overland) are limited per client address.
  /// - Throws: 429 `rate_limited`.
  func limitAddress(_ address: String) async throws {
    if let wait = await environment.osmAndAddressLimiter.take(address, cost: 1, now: environment.now()) {
      throw APIError.rateLimited("Too many reports from this address.", retryAfterMilliseconds: wait)
    }
  }

  /// The device, and its owner, whose OsmAnd identifier is `identifier`: the one credential of the phone apps that
  /// report without an account (long, random, given out only to the owner by `POST /v1/devices/{id}/osmand`, kept
  /// as a hash). Reports are limited per identifier.
  /// - Throws: 400 for control characters, 429 past the identifier's rate, 401 `invalid_credentials` for an
  ///   identifier of no device.
  func reportingDevice(identifier text: String) async throws -> (DeviceID, UserID) {
    let identifier = text.trimmedOfWhitespace
    guard !Identifier.hasControlCharacters(identifier) else {
      throw APIError.invalidRequest("The device identifier can't contain control characters.")
    }
    let hash = SecretHash.sha256(identifier)
    if let wait = await environment.osmAndDeviceLimiter.take(hash, cost: 1, now: environment.now()) {
      throw APIError.rateLimited("Too many reports for this device identifier.", retryAfterMilliseconds: wait)
    }
    guard let (device, owner) = try await store.osmAndDevice(identifierHash: hash) else {
      throw APIError(
        status: 401, code: .invalidCredentials,
        message: "This is not the OsmAnd identifier of any device. Enable OsmAnd for your device in Meridian "
          + "(POST /v1/devices/{id}/osmand) and type the identifier it gives into the app.")
    }
    return (device, owner)
  }
}

/// The phone apps' HTTP Basic authentication (OwnTracks): a bearer token of the account as the password (with any
/// user name, or the account's email), else the account's email and password (throttled like
/// `POST /v1/auth/login`). Wrong or missing credentials are 401 `invalid_credentials` (`token_invalid` for a
/// password that is no current token under a user name that is no email), with the Basic challenge of the route's
/// group.
struct PhoneAppBasicAuthenticator: AuthenticatorMiddleware {
  typealias Context = MeridianRequestContext

  let environment: ServerEnvironment
  var store: any MeridianStore { environment.store }

  /// The caller of an HTTP Basic `Authorization`.
  func authenticate(request: Request, context: MeridianRequestContext) async throws -> Caller? {
    let headers = request.headers
    guard let value = headers[.authorization],
      let (username, password) = OwnTracksAuth.credentials(fromAuthorization: value),
      !password.isEmpty
    else {
      throw APIError(
        status: 401, code: .invalidCredentials,
        message: "Sign in with HTTP Basic: your email and password, or an access token as the password.")
    }
    let wrong = APIError(status: 401, code: .invalidCredentials, message: "The email or password is wrong.")
    let namesEmail = username.contains("@")
    // A token is checked first: a hash lookup, where a password costs a bcrypt verification.
    if let user = try await store.user(forTokenHash: SecretHash.sha256(password), now: environment.now()) {
      if namesEmail {
        guard let account = try await store.account(user),
          account.credentials.contains(.email(username.lowercased()))
        else { throw wrong }
      }
      return .user(user, tokenHash: nil)
    }
    guard namesEmail else {
      throw APIError(
        status: 401, code: .tokenInvalid,
        message: "The password is not a current access token. To sign in with your password, use your email as "
          + "the user name.")
    }
    let user = try await environment.signIn(email: username, password: password, address: context.clientAddress)
    return .user(user, tokenHash: nil)
  }
}

import DomainKit
import Foundation
import NetworkingKit

/// The routes that third-party phone apps report to, in their own wire formats rather than Meridian's JSON
/// (DomainKit's `OwnTracks` and `OsmAnd` read and write them). Fixes arriving here take the same path as
/// `POST /v1/fixes`: validation, device claim, group commit, live fan-out.
extension API {
  // MARK: OwnTracks (HTTP mode)

  /// `POST /pub`: the OwnTracks apps in HTTP mode post one message (or an array of them); `location` messages
  /// are stored, other types (`transition`, `waypoint`, `lwt`, `card`, …) and empty bodies are accepted and
  /// ignored.
  ///
  /// Credentials are HTTP Basic (``OwnTracksAuth/basic(username:password:)``): the account's email and password,
  /// or a bearer token of the account as the password. The device is named by `X-Limit-D` (else the `topic`
  /// `owntracks/<user>/<device>`; never `tid`). The answer is a JSON array: for every user whose location the
  /// caller may see, their last fix as a `location` message (with `tid` and `topic` `owntracks/<userId>/<handle>`,
  /// an opaque handle of the device) and their `card` (only the profile fields the caller may see).
  public static let ownTracksPublish = Endpoint<Void, OwnTracks.Message, [OwnTracks.Message]>(
    .post, "/pub", body: .json(), authentication: .none)

  // MARK: OsmAnd / Traccar client

  /// `GET /osmand?id=&lat=&lon=&timestamp=&…` → 200 with an empty body: one fix in the OsmAnd / Traccar client
  /// protocol (DomainKit `OsmAnd`).
  ///
  /// The protocol has no credentials, so `id` is not the device's id but its OsmAnd identifier: a long random secret
  /// that only the device's owner gets, from ``enableOsmAnd``. Anything else is 401.
  public static let osmAndReport = Endpoint<OsmAndFix, NoBody, NoContent>(
    .get, "/osmand", query: { OsmAndParameters.queryItems(for: $0) }, body: .none, response: .empty,
    authentication: .none)

  /// `POST /osmand` → 200 with an empty body: the same report as ``osmAndReport`` as an
  /// `application/x-www-form-urlencoded` body (query parameters are read too), or the JSON body of Traccar
  /// Client 9+ (`Content-Type: application/json`).
  public static let osmAndPost = Endpoint<Void, OsmAndFix, NoContent>(
    .post, "/osmand",
    body: RequestBodyCoding(contentType: "application/x-www-form-urlencoded") { report in
      Data(OsmAnd.query(deviceID: report.deviceID, fix: report.fix).utf8)
    }, response: .empty, authentication: .none)

  // MARK: Overland (iOS)

  /// `POST /overland` → 200 `{"result":"ok"}`: a batch of the Overland GPS tracker (DomainKit `Overland`):
  /// `{"locations": [GeoJSON Point Feature with properties.timestamp, …]}`.
  ///
  /// The credential is the device's OsmAnd identifier (``enableOsmAnd``), as the app's access token (sent as
  /// `Authorization: Bearer …`) or as `?token=` in the receiver URL; it names the device, so the features'
  /// `device_id` is ignored. The batch is stored whole or not at all: a malformed feature is 400 naming it
  /// (`locations[3].properties.timestamp`) and nothing of the batch is stored, so the app, which keeps a batch until
  /// it is answered `{"result":"ok"}`, loses none of it. Points already stored are stored once when sent again.
  public static let overlandBatch = Endpoint<Void, Data, OverlandReply>(
    .post, "/overland", body: RequestBodyCoding(contentType: "application/json") { $0 }, authentication: .none)

  // MARK: GPSLogger (Android)

  /// `GET /gpslogger?id=&lat=&lon=&timestamp=&…` → 200 with an empty body: one fix from GPSLogger's "Log to custom
  /// URL". The parameters are those of ``osmAndReport`` (the same identifier as `id`), except `speed`, which is in
  /// metres per second (GPSLogger's `%SPD`).
  public static let gpsLoggerReport = Endpoint<Void, NoBody, NoContent>(
    .get, "/gpslogger", body: .none, response: .empty, authentication: .none)

  /// `POST /gpslogger` → 200 with an empty body: the parameters of ``gpsLoggerReport`` as an
  /// `application/x-www-form-urlencoded` body (query parameters are read too).
  public static let gpsLoggerPost = Endpoint<Void, Data, NoContent>(
    .post, "/gpslogger", body: RequestBodyCoding(contentType: "application/x-www-form-urlencoded") { $0 },
    response: .empty, authentication: .none)
}

/// The answer Overland requires before it deletes a batch from its queue: `{"result":"ok"}`.
public struct OverlandReply: Sendable, Hashable, Codable {
  /// `ok`.
  public var result: String

  /// The acknowledgement.
  public init(result: String = "ok") { self.result = result }
}

/// The credentials and header fields of the OwnTracks HTTP mode.
public enum OwnTracksAuth {
  /// `X-Limit-U`: the user name configured in the app.
  public static let userHeader = "X-Limit-U"
  /// `X-Limit-D`: the device name configured in the app.
  public static let deviceHeader = "X-Limit-D"

  /// `Basic base64(username:password)`.
  public static func basic(username: String, password: String) -> String {
    "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
  }

  /// The user name and password of a `Basic` authorization value, or nil when it is not one.
  public static func credentials(fromAuthorization value: String) -> (username: String, password: String)? {
    let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
    guard parts.count == 2, parts[0].lowercased() == "basic",
      let data = Data(base64Encoded: parts[1].trimmingCharacters(in: .whitespaces)),
      let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":")
    else { return nil }
    return (String(text[..<colon]), String(text[text.index(after: colon)...]))
  }
}

/// One fix of a device, as an OsmAnd / Traccar client reports it (``API/osmAndReport``, ``API/osmAndPost``).
public struct OsmAndFix: Sendable, Hashable {
  /// The registered device.
  public var deviceID: DeviceID
  /// The fix (sent with second precision, speed in knots).
  public var fix: LocationFix

  /// A report of `fix` for `deviceID`.
  public init(deviceID: DeviceID, fix: LocationFix) {
    self.deviceID = deviceID
    self.fix = fix
  }
}

/// The query items of an OsmAnd report, as DomainKit's `OsmAnd.query(deviceID:fix:)` writes them.
enum OsmAndParameters {
  static func queryItems(for report: OsmAndFix) -> [QueryItem] {
    var components = URLComponents()
    components.percentEncodedQuery = OsmAnd.query(deviceID: report.deviceID, fix: report.fix)
    return (components.queryItems ?? []).map { QueryItem($0.name, $0.value) }
  }
}

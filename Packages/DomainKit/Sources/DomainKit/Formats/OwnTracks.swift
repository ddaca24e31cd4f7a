import Foundation
import GeoKit

/// OwnTracks JSON messages (the payloads of the OwnTracks apps in MQTT and HTTP mode).
///
/// Units as the OwnTracks booklet defines them: `tst`, `wtst`, `created_at` in epoch **seconds**; `acc`, `alt`,
/// `vac`, `rad` in metres; `vel` in **km/h**; `cog` in degrees; `batt` in percent; `bs` battery status (0 unknown,
/// 1 unplugged, 2 charging, 3 full); `t` trigger; `conn` connectivity (`w` Wi-Fi, `o` offline, `m` mobile).
/// Conversion to ``LocationFix``: `tst × 1000` → timestamp, `vel / 3.6` → speed (m/s) — exact, since km/h is
/// 1000/3600 m/s; back: `speed × 3.6` rounded to the nearest integer.
public enum OwnTracks {
  /// A `_type: location` message.
  public struct Location: Sendable, Hashable, Codable {
    /// Latitude, degrees.
    public var lat: Double
    /// Longitude, degrees.
    public var lon: Double
    /// Time of the fix, epoch seconds.
    public var tst: Int64
    /// Horizontal accuracy, metres.
    public var acc: Int?
    /// Altitude, metres.
    public var alt: Int?
    /// Vertical accuracy, metres.
    public var vac: Int?
    /// Velocity, km/h.
    public var vel: Int?
    /// Course over ground, degrees.
    public var cog: Int?
    /// Battery level, percent.
    public var batt: Int?
    /// Battery status: 0 unknown, 1 unplugged, 2 charging, 3 full.
    public var bs: Int?
    /// Tracker id (two characters shown on the map).
    public var tid: String?
    /// Trigger: `p` ping, `c` circular region, `C` (iOS) region, `b` beacon, `r` response, `u` manual, `t` timer,
    /// `v` visit monitoring.
    public var t: String?
    /// Connectivity: `w`, `o`, `m`.
    public var conn: String?
    /// The MQTT topic (HTTP mode adds it).
    public var topic: String?
    /// Regions the device is in.
    public var inregions: [String]?
    /// Barometric pressure, kPa.
    public var p: Double?
    /// Monitoring mode (1 significant, 2 move, …).
    public var m: Int?
    /// Time the message was created, epoch seconds.
    public var createdAt: Int64?
    /// The place's country code (ISO 3166-1), as the OwnTracks Recorder's reverse geocoding gives it.
    public var cc: String?
    /// A one-line address of the place (Recorder: `addr`).
    public var addr: String?
    /// The town or city (Recorder: `locality`).
    public var locality: String?

    /// A location message.
    public init(
      lat: Double, lon: Double, tst: Int64, acc: Int? = nil, alt: Int? = nil, vac: Int? = nil, vel: Int? = nil,
      cog: Int? = nil, batt: Int? = nil, bs: Int? = nil, tid: String? = nil, t: String? = nil, conn: String? = nil,
      topic: String? = nil, inregions: [String]? = nil, p: Double? = nil, m: Int? = nil, createdAt: Int64? = nil
    ) {
      self.lat = lat
      self.lon = lon
      self.tst = tst
      self.acc = acc
      self.alt = alt
      self.vac = vac
      self.vel = vel
      self.cog = cog
      self.batt = batt
      self.bs = bs
      self.tid = tid
      self.t = t
      self.conn = conn
      self.topic = topic
      self.inregions = inregions
      self.p = p
      self.m = m
      self.createdAt = createdAt
    }

    private enum CodingKeys: String, CodingKey {
      case lat, lon, tst, acc, alt, vac, vel, cog, batt, bs, tid, t, conn, topic, inregions, p, m, cc, addr, locality
      case createdAt = "created_at"
    }

    /// Decodes a `location` message; integers may be written as JSON floats (rounded), `tst` is required.
    public init(from decoder: any Decoder) throws {
      let c = try decoder.container(keyedBy: CodingKeys.self)
      lat = try c.decode(Double.self, forKey: .lat)
      lon = try c.decode(Double.self, forKey: .lon)
      guard let tst = try c.lenientInt64(.tst) else {
        throw DecodingError.keyNotFound(CodingKeys.tst, .init(codingPath: c.codingPath, debugDescription: "missing"))
      }
      self.tst = tst
      acc = try c.lenientInt(.acc)
      alt = try c.lenientInt(.alt)
      vac = try c.lenientInt(.vac)
      vel = try c.lenientInt(.vel)
      cog = try c.lenientInt(.cog)
      batt = try c.lenientInt(.batt)
      bs = try c.lenientInt(.bs)
      tid = try c.decodeIfPresent(String.self, forKey: .tid)
      t = try c.decodeIfPresent(String.self, forKey: .t)
      conn = try c.decodeIfPresent(String.self, forKey: .conn)
      topic = try c.decodeIfPresent(String.self, forKey: .topic)
      inregions = try c.decodeIfPresent([String].self, forKey: .inregions)
      p = try c.decodeIfPresent(Double.self, forKey: .p)
      m = try c.lenientInt(.m)
      createdAt = try c.lenientInt64(.createdAt)
      cc = try c.decodeIfPresent(String.self, forKey: .cc)
      addr = try c.decodeIfPresent(String.self, forKey: .addr)
      locality = try c.decodeIfPresent(String.self, forKey: .locality)
    }

    /// The fix this message describes.
    /// - Throws: ``FormatError`` naming the OwnTracks field that is out of range.
    public func fix(deviceID: DeviceID? = nil) throws -> LocationFix {
      let state: BatteryState? =
        switch bs {
        case 1: .unplugged
        case 2: .charging
        case 3: .full
        case 0: .unknown
        default: nil
        }
      guard let timestamp = Timestamp.milliseconds(epochSeconds: tst) else {
        throw FormatError(.owntracks, field: "tst", "\(tst) is not epoch seconds between 1970 and 2200")
      }
      do {
        return try LocationFix(
          deviceID: deviceID, timestamp: timestamp, latitude: lat, longitude: lon,
          horizontalAccuracy: acc.map(Double.init), verticalAccuracy: vac.map(Double.init),
          altitude: alt.map(Double.init), speed: vel.map { Double($0) / 3.6 },
          course: cog.map { Double($0 == 360 ? 0 : $0) }, batteryLevel: batt.map(Double.init), batteryState: state,
          kind: .movement, trigger: t.flatMap(OwnTracks.trigger(code:)))
      } catch {
        let names = [
          "latitude": "lat", "longitude": "lon", "horizontalAccuracy": "acc", "verticalAccuracy": "vac",
          "speed": "vel", "course": "cog", "batteryLevel": "batt",
        ]
        throw FormatError(.owntracks, field: names[error.field] ?? error.field, error.description)
      }
    }

    /// The message for `fix` (seconds truncate the milliseconds; metres and km/h are rounded).
    public init(_ fix: LocationFix, tid: String? = nil, topic: String? = nil) {
      // Values too large for an OwnTracks integer (|x| ≥ 10^15 — never a real reading) are left out.
      func round(_ value: Double?) -> Int? {
        value.flatMap { $0.isFinite && abs($0) < 1e15 ? Int($0.rounded()) : nil }
      }
      let bs: Int? =
        switch fix.batteryState {
        case .unknown: 0
        case .unplugged: 1
        case .charging: 2
        case .full: 3
        case nil: nil
        }
      self.init(
        lat: fix.latitude, lon: fix.longitude, tst: fix.timestamp.floorDivided(by: 1000),
        acc: round(fix.horizontalAccuracy), alt: round(fix.altitude), vac: round(fix.verticalAccuracy),
        vel: round(fix.speed.map { $0 * 3.6 }), cog: round(fix.course), batt: round(fix.batteryLevel), bs: bs,
        tid: tid, t: fix.trigger.flatMap(OwnTracks.code(for:)), topic: topic)
    }
  }

  /// A `_type: transition` message: entering or leaving a region.
  public struct Transition: Sendable, Hashable, Codable {
    /// Waypoint (region) creation time, epoch seconds.
    public var wtst: Int64
    /// Latitude, degrees.
    public var lat: Double
    /// Longitude, degrees.
    public var lon: Double
    /// Time of the transition, epoch seconds.
    public var tst: Int64
    /// Accuracy, metres.
    public var acc: Int?
    /// Tracker id.
    public var tid: String?
    /// `enter` or `leave`.
    public var event: String
    /// Region description.
    public var desc: String?
    /// Trigger: `c` circular region, `b` beacon, `l` location.
    public var t: String?
    /// Region id.
    public var rid: String?

    /// A transition.
    public init(
      wtst: Int64, lat: Double, lon: Double, tst: Int64, acc: Int? = nil, tid: String? = nil, event: String,
      desc: String? = nil, t: String? = nil, rid: String? = nil
    ) {
      self.wtst = wtst
      self.lat = lat
      self.lon = lon
      self.tst = tst
      self.acc = acc
      self.tid = tid
      self.event = event
      self.desc = desc
      self.t = t
      self.rid = rid
    }
  }

  /// A `_type: waypoint` message: a region (geofence) defined on the device.
  public struct Waypoint: Sendable, Hashable, Codable {
    /// Creation time, epoch seconds (identifies the waypoint).
    public var tst: Int64
    /// Centre latitude.
    public var lat: Double
    /// Centre longitude.
    public var lon: Double
    /// Radius, metres.
    public var rad: Int?
    /// Name of the region.
    public var desc: String
    /// Region id.
    public var rid: String?

    /// A waypoint.
    public init(tst: Int64, lat: Double, lon: Double, rad: Int? = nil, desc: String, rid: String? = nil) {
      self.tst = tst
      self.lat = lat
      self.lon = lon
      self.rad = rad
      self.desc = desc
      self.rid = rid
    }
  }

  /// A `_type: card` message: the name and face shown for a user.
  public struct Card: Sendable, Hashable, Codable {
    /// Display name.
    public var name: String?
    /// Base64-encoded PNG avatar.
    public var face: String?
    /// Tracker id the card belongs to.
    public var tid: String?

    /// A card.
    public init(name: String? = nil, face: String? = nil, tid: String? = nil) {
      self.name = name
      self.face = face
      self.tid = tid
    }
  }

  /// A `_type: lwt` message: the device went offline unexpectedly (MQTT last will).
  public struct LastWill: Sendable, Hashable, Codable {
    /// Time the device connected, epoch seconds.
    public var tst: Int64

    /// A last will.
    public init(tst: Int64) { self.tst = tst }
  }

  /// Any OwnTracks message, dispatched on `_type`.
  public enum Message: Sendable, Hashable, Codable {
    /// `location`.
    case location(Location)
    /// `transition`.
    case transition(Transition)
    /// `waypoint`.
    case waypoint(Waypoint)
    /// `waypoints`: the device's whole list of regions (entries that aren't valid waypoints, a position out of range
    /// included, are left out).
    case waypoints([Waypoint])
    /// `card`.
    case card(Card)
    /// `lwt`.
    case lwt(LastWill)
    /// Another `_type` (cmd, status, steps, …), kept by name and ignored.
    case other(type: String)

    private enum TypeKey: String, CodingKey { case type = "_type" }
    private enum ListKey: String, CodingKey { case waypoints }
    /// One entry of a `waypoints` list, nil when it isn't a valid waypoint.
    private struct Lenient: Decodable {
      var waypoint: Waypoint?
      init(from decoder: any Decoder) throws {
        waypoint = try? Waypoint(from: decoder)
        if let waypoint, (try? Coordinate(latitude: waypoint.lat, longitude: waypoint.lon)) == nil {
          self.waypoint = nil
        }
      }
    }

    private struct PositionKey: CodingKey {
      var stringValue: String
      var intValue: Int? { nil }
      init(stringValue: String) { self.stringValue = stringValue }
      init?(intValue: Int) { nil }
    }

    /// `value` when `lat` and `lon` are a position by GeoKit's rule (``Coordinate/validate(latitude:longitude:)``);
    /// else a `DecodingError` at the field at fault.
    private static func positioned<Value>(_ value: Value, lat: Double, lon: Double, _ decoder: any Decoder) throws
      -> Value
    {
      do {
        try Coordinate.validate(latitude: lat, longitude: lon)
      } catch {
        let key = PositionKey(stringValue: error.field == "latitude" ? "lat" : "lon")
        throw DecodingError.dataCorrupted(
          .init(codingPath: decoder.codingPath + [key], debugDescription: error.description))
      }
      return value
    }

    /// Decodes the message named by `_type`; unknown types become ``other(type:)``.
    public init(from decoder: any Decoder) throws {
      let type = try decoder.container(keyedBy: TypeKey.self).decode(String.self, forKey: .type)
      switch type {
      case "location": self = .location(try Location(from: decoder))
      case "transition":
        let transition = try Transition(from: decoder)
        self = .transition(try Self.positioned(transition, lat: transition.lat, lon: transition.lon, decoder))
      case "waypoint":
        let waypoint = try Waypoint(from: decoder)
        self = .waypoint(try Self.positioned(waypoint, lat: waypoint.lat, lon: waypoint.lon, decoder))
      case "waypoints":
        let list = try decoder.container(keyedBy: ListKey.self)
        self = .waypoints((try list.decodeIfPresent([Lenient].self, forKey: .waypoints) ?? []).compactMap(\.waypoint))
      case "card": self = .card(try Card(from: decoder))
      case "lwt": self = .lwt(try LastWill(from: decoder))
      default: self = .other(type: type)
      }
    }

    /// Encodes the message with its `_type`.
    public func encode(to encoder: any Encoder) throws {
      var c = encoder.container(keyedBy: TypeKey.self)
      switch self {
      case .location(let value):
        try c.encode("location", forKey: .type)
        try value.encode(to: encoder)
      case .transition(let value):
        try c.encode("transition", forKey: .type)
        try value.encode(to: encoder)
      case .waypoint(let value):
        try c.encode("waypoint", forKey: .type)
        try value.encode(to: encoder)
      case .waypoints(let values):
        try c.encode("waypoints", forKey: .type)
        var list = encoder.container(keyedBy: ListKey.self)
        try list.encode(values, forKey: .waypoints)
      case .card(let value):
        try c.encode("card", forKey: .type)
        try value.encode(to: encoder)
      case .lwt(let value):
        try c.encode("lwt", forKey: .type)
        try value.encode(to: encoder)
      case .other(let type):
        try c.encode(type, forKey: .type)
      }
    }
  }

  /// Decodes one message, or an array of messages (as in HTTP responses).
  /// - Throws: ``FormatError`` naming the missing or malformed field.
  public static func decode(_ data: Data) throws -> [Message] {
    let decoder = JSONDecoder()
    do {
      let trimmed = data.first(where: { $0 != 32 && $0 != 10 && $0 != 13 && $0 != 9 })
      if trimmed == UInt8(ascii: "[") { return try decoder.decode([Message].self, from: data) }
      return [try decoder.decode(Message.self, from: data)]
    } catch let error as DecodingError {
      throw FormatError(.owntracks, field: Self.field(of: error), Self.message(of: error))
    }
  }

  /// Encodes messages as a JSON array (the HTTP-mode response body), keys sorted.
  public static func encode(_ messages: [Message]) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return try encoder.encode(messages)
  }

  /// The trigger for an OwnTracks `t` code.
  public static func trigger(code: String) -> FixTrigger? {
    switch code {
    case "p": .ping
    case "c", "C": .region
    case "b": .beacon
    case "r": .request
    case "u": .manual
    case "t": .timer
    case "v": .visit
    default: nil
    }
  }

  /// The OwnTracks `t` code for a trigger (nil for triggers OwnTracks has no code for).
  public static func code(for trigger: FixTrigger) -> String? {
    switch trigger {
    case .ping: "p"
    case .region: "c"
    case .beacon: "b"
    case .request: "r"
    case .manual: "u"
    case .timer: "t"
    case .visit: "v"
    case .automatic, .significantChange: nil
    }
  }

  static func field(of error: DecodingError) -> String? {
    func path(_ codingPath: [any CodingKey], _ key: (any CodingKey)? = nil) -> String {
      (codingPath + (key.map { [$0] } ?? [])).map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
        .joined(separator: ".")
    }
    switch error {
    case .keyNotFound(let key, let context): return path(context.codingPath, key)
    case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
      return context.codingPath.isEmpty ? nil : path(context.codingPath)
    @unknown default: return nil
    }
  }

  static func message(of error: DecodingError) -> String {
    switch error {
    case .keyNotFound: "missing"
    case .typeMismatch(let type, _): "expected \(type)"
    case .valueNotFound(let type, _): "expected \(type), found null"
    case .dataCorrupted(let context): context.codingPath.isEmpty ? "not valid JSON" : context.debugDescription
    @unknown default: "malformed"
    }
  }
}

extension KeyedDecodingContainer {
  /// An integer that may be written as a JSON float (rounded), or nil when absent; magnitudes of 10^15 and more
  /// (never a real OwnTracks value, and enough to overflow unit conversions) are rejected.
  func lenientInt(_ key: Key) throws -> Int? {
    guard contains(key), try !decodeNil(forKey: key) else { return nil }
    if let value = try? decode(Int.self, forKey: key) {
      guard value.magnitude < 1_000_000_000_000_000 else {
        throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "\(value) is out of range")
      }
      return value
    }
    let value = try decode(Double.self, forKey: key)
    guard value.isFinite, abs(value) < 1e15 else {
      throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "\(value) is out of range")
    }
    return Int(value.rounded())
  }

  /// Like ``lenientInt(_:)`` for 64-bit values (epoch seconds).
  func lenientInt64(_ key: Key) throws -> Int64? { try lenientInt(key).map(Int64.init) }
}

extension Int64 {
  func floorDivided(by divisor: Int64) -> Int64 {
    let q = self / divisor
    return (self % divisor < 0) ? q - 1 : q
  }
}

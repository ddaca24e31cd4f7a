import Foundation
import GeoKit

/// How precisely an audience (a group, a direct grant, a share link) sees a person's location. Wire names: `exact`,
/// `approximate`, `town`, `hidden`.
///
/// When several settings apply to one viewer (they are in two of the owner's groups), the most precise one wins
/// (``mostPrecise(_:)``): a group is a grant, and a viewer gets the best of what they were granted.
public enum LocationPrecision: String, Sendable, Hashable, Codable, CaseIterable {
  /// The fix as recorded.
  case exact
  /// The centre of the fixed ~1 km grid cell holding the fix (geohash of 6 characters, about 1.2 × 0.6 km): every
  /// fix in one cell shows the same point, so averaging many of them recovers the cell and nothing finer.
  case approximate
  /// The town holding the fix (the gazetteer's), or, where it knows none, the centre of a ~20 km grid cell.
  case town
  /// Nothing: the audience does not see the location.
  case hidden

  /// 0 for ``exact`` … 3 for ``hidden``.
  var rank: Int {
    switch self {
    case .exact: 0
    case .approximate: 1
    case .town: 2
    case .hidden: 3
    }
  }

  /// Whether an audience seeing at this precision may see what is shown at `other` (`exact` covers everything,
  /// ``hidden`` nothing).
  public func covers(_ other: LocationPrecision) -> Bool { self != .hidden && rank <= other.rank }

  /// The most precise of `precisions` (``hidden`` for none).
  public static func mostPrecise(_ precisions: some Sequence<LocationPrecision>) -> LocationPrecision {
    precisions.min { $0.rank < $1.rank } ?? .hidden
  }
}

/// How fixes inside a ``PrivacyZone`` appear to others. Wire names: `privateZone`, `hidden`.
public enum ZoneDisplay: String, Sendable, Hashable, Codable, CaseIterable {
  /// As "in a private zone": the time, no coordinates.
  case privateZone
  /// Not at all: while the newest fix is inside, others get no position and no live event, as if the person
  /// shared nothing.
  case hidden
}

/// A circle a person draws around a place others must not see them at (home, a friend's house). Wire names: `id`,
/// `name`, `latitude`, `longitude`, `radius` (metres), `display`, `store`.
public struct PrivacyZone: Sendable, Hashable, Codable, Identifiable {
  /// The zone's id.
  public var id: String
  /// The owner's name for it, 1…64 characters.
  public var name: String
  /// Centre latitude, degrees.
  public var latitude: Double
  /// Centre longitude, degrees.
  public var longitude: Double
  /// Radius in metres, ``radiusRange``.
  public var radius: Double
  /// How fixes inside appear to others.
  public var display: ZoneDisplay
  /// Whether fixes inside are stored at all (false: they are acknowledged and dropped on arrival).
  public var store: Bool

  /// A zone.
  public init(
    id: String, name: String, latitude: Double, longitude: Double, radius: Double, display: ZoneDisplay = .privateZone,
    store: Bool = true
  ) {
    self.id = id
    self.name = name
    self.latitude = latitude
    self.longitude = longitude
    self.radius = radius
    self.display = display
    self.store = store
  }

  /// The radii a zone may have, metres: from a house to a small town.
  public static let radiusRange: ClosedRange<Double> = 50...50_000
  /// The rule of a zone's name.
  public static let nameRule = UserText.singleLine(maximumLength: 64)
  /// The most zones one person may draw.
  public static let maximumCount = 50

  /// Whether the fix at `latitude`, `longitude` lies in the zone: within ``radius`` of the centre on the WGS84
  /// ellipsoid (GeoKit's geodesic, the distance every map draws the circle with), the edge included.
  ///
  /// Every fix that arrives is tested against its owner's zones, so the sphere's distance (haversine, a fraction of
  /// the geodesic's cost) decides first wherever it can't be wrong: it differs from the ellipsoid's by less than 0.6 %,
  /// so a point farther than 1.01 radii, or nearer than 0.99, is outside or inside whatever the ellipsoid says.
  public func contains(latitude: Double, longitude: Double) -> Bool {
    let centre = Coordinate(uncheckedLatitude: self.latitude, longitude: self.longitude)
    let point = Coordinate(uncheckedLatitude: latitude, longitude: longitude)
    let spherical = centre.haversineDistance(to: point)
    if spherical > radius * 1.01 { return false }
    if spherical < radius * 0.99 { return true }
    return Geodesic.wgs84.distance(from: centre, to: point) <= radius
  }

  /// Checks the name, the centre and the radius; a sentence naming the first problem.
  public func problem() -> String? {
    do {
      _ = try Self.nameRule.validated(name)
    } catch {
      return error.message(field: "name")
    }
    do {
      try Coordinate.validate(latitude: latitude, longitude: longitude)
    } catch {
      return "\(error.field) \(error.value) is outside the allowed range"
        + (error.field == "latitude" ? " −90…90." : " −180…180.")
    }
    guard radius.isFinite, Self.radiusRange.contains(radius) else {
      return "radius must be between 50 and 50,000 metres."
    }
    return nil
  }

  /// The first of `zones` holding the fix, if any.
  public static func zone(holding fix: LocationFix, in zones: [PrivacyZone]) -> PrivacyZone? {
    zones.first { $0.contains(latitude: fix.latitude, longitude: fix.longitude) }
  }

  /// Whether a fix arriving for an owner with `zones` is stored: false inside any zone that stores nothing.
  public static func stores(_ fix: LocationFix, in zones: [PrivacyZone]) -> Bool {
    !zones.contains { !$0.store && $0.contains(latitude: fix.latitude, longitude: fix.longitude) }
  }
}

/// The town a fix lies in, as the gazetteer names it.
public struct Town: Sendable, Hashable, Codable {
  /// Its name.
  public var name: String
  /// Its centre latitude.
  public var latitude: Double
  /// Its centre longitude.
  public var longitude: Double

  /// A town.
  public init(name: String, latitude: Double, longitude: Double) {
    self.name = name
    self.latitude = latitude
    self.longitude = longitude
  }
}

/// What someone other than its owner sees of a fix: the one rule every path that shows a fix to others goes through
/// (REST, live events, OwnTracks answers, geofence events, share links).
public enum AudienceView: Sendable, Hashable {
  /// The fix, exact or coarsened to the audience's precision; `town` names the town for ``LocationPrecision/town``.
  case shown(LocationFix, town: String?)
  /// The owner is in one of their privacy zones at this time (UTC ms); where is not shown.
  case inPrivateZone(timestamp: Int64)
  /// Nothing is shown.
  case hidden

  /// The geohash length of ``LocationPrecision/approximate``'s cell (about 1.2 × 0.6 km).
  public static let approximateCellLength = 6
  /// The geohash length of the cell ``LocationPrecision/town`` falls back to where the gazetteer knows no town
  /// (about 39 × 20 km).
  public static let townFallbackCellLength = 4

  /// What an audience seeing at `precision` sees of `fix`, its owner having `zones`: nothing for ``hidden``
  /// precision or inside a zone shown as hidden; "in a private zone" inside another zone; else the fix, as is for
  /// ``LocationPrecision/exact``, moved to the centre of its fixed grid cell for ``LocationPrecision/approximate``,
  /// to `town` (or a ~20 km cell's centre without one) for ``LocationPrecision/town``. A coarsened fix keeps its
  /// time, device, kind and battery and loses altitude, speed, course and floor; its horizontal accuracy becomes
  /// the cell's half-diagonal (nil at a town).
  ///
  /// Zones come first: a zone hides a fix whatever the precision.
  public static func of(_ fix: LocationFix, precision: LocationPrecision, zones: [PrivacyZone], town: Town? = nil)
    -> AudienceView
  {
    if let zone = PrivacyZone.zone(holding: fix, in: zones) {
      return zone.display == .hidden ? .hidden : .inPrivateZone(timestamp: fix.timestamp)
    }
    switch precision {
    case .exact: return .shown(fix, town: nil)
    case .hidden: return .hidden
    case .approximate: return .shown(coarsened(fix, cellLength: approximateCellLength), town: nil)
    case .town:
      guard let town else { return .shown(coarsened(fix, cellLength: townFallbackCellLength), town: nil) }
      var shown = coarsened(fix, cellLength: townFallbackCellLength)
      shown.latitude = town.latitude
      shown.longitude = town.longitude
      shown.horizontalAccuracy = nil
      return .shown(shown, town: town.name)
    }
  }

  /// `fix` at the centre of its geohash cell of `cellLength` characters, with what would place it more finely
  /// (altitude, speed, course, floor) removed.
  static func coarsened(_ fix: LocationFix, cellLength: Int) -> LocationFix {
    var shown = fix
    shown.altitude = nil
    shown.verticalAccuracy = nil
    shown.speed = nil
    shown.speedAccuracy = nil
    shown.course = nil
    shown.floor = nil
    guard let cell = try? GeohashCell(fix.coordinate, bits: cellLength * 5) else { return shown }
    let center = cell.center
    shown.latitude = center.latitude
    shown.longitude = center.longitude
    let corner = Coordinate(
      uncheckedLatitude: min(90, center.latitude + cell.latitudeError),
      longitude: center.longitude + cell.longitudeError)
    shown.horizontalAccuracy = center.haversineDistance(to: corner).rounded()
    return shown
  }

  /// The fix shown, if any (nil in a zone or hidden).
  public var fix: LocationFix? {
    if case .shown(let fix, _) = self { return fix }
    return nil
  }
}

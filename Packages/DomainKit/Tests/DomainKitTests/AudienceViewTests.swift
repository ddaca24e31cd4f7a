import Foundation
import GeoKit
import Testing

@testable import DomainKit

@Suite struct AudienceViewTests {
  let now: Int64 = 1_700_000_000_000

  func fix(_ latitude: Double, _ longitude: Double, at offset: Int64 = 0) throws -> LocationFix {
    try LocationFix(
      deviceID: "phone", timestamp: now + offset, latitude: latitude, longitude: longitude, horizontalAccuracy: 5,
      altitude: 120, speed: 1.5, course: 90, floor: 2, batteryLevel: 80)
  }

  @Test func exactShowsTheFixAsIs() throws {
    let original = try fix(48.858_37, 2.294_48)
    #expect(AudienceView.of(original, precision: .exact, zones: []) == .shown(original, town: nil))
  }

  /// Many fixes scattered over one ~1 km cell all show the same point, so averaging them recovers the cell's
  /// centre, not the person's position; the point shown is the cell's centre, with nothing finer left on the fix.
  @Test func approximateSnapsEveryFixOfACellToOnePoint() throws {
    let cell = try GeohashCell(Coordinate(latitude: 48.858_37, longitude: 2.294_48), bits: 30)
    var shown: Set<[Double]> = []
    var generator = SystemRandomNumberGenerator()
    for index in 0..<500 {
      let latitude = Double.random(
        in: cell.box.south + 1e-9..<cell.box.north, using: &generator)
      let longitude = Double.random(in: cell.box.west + 1e-9..<cell.box.east, using: &generator)
      let view = AudienceView.of(try fix(latitude, longitude, at: Int64(index)), precision: .approximate, zones: [])
      let coarse = try #require(view.fix)
      shown.insert([coarse.latitude, coarse.longitude])
      #expect(coarse.altitude == nil && coarse.speed == nil && coarse.course == nil && coarse.floor == nil)
      #expect(coarse.timestamp == now + Int64(index) && coarse.batteryLevel == 80 && coarse.deviceID == "phone")
      #expect((500...800).contains(try #require(coarse.horizontalAccuracy)))
    }
    #expect(shown == [[cell.center.latitude, cell.center.longitude]])
    // The Eiffel Tower's cell: its centre is some hundreds of metres from the tower, never the tower.
    let tower = Coordinate(uncheckedLatitude: 48.858_37, longitude: 2.294_48)
    #expect(tower.haversineDistance(to: cell.center) > 10)
  }

  @Test func approximateMovesToTheNextCellAcrossItsEdge() throws {
    let cell = try GeohashCell(Coordinate(latitude: 51.5, longitude: -0.12), bits: 30)
    let west = try #require(
      AudienceView.of(try fix(51.5, cell.box.east - 1e-7), precision: .approximate, zones: []).fix)
    let east = try #require(
      AudienceView.of(try fix(51.5, cell.box.east + 1e-7), precision: .approximate, zones: []).fix)
    #expect(west.longitude < east.longitude)
    let step = Coordinate(uncheckedLatitude: west.latitude, longitude: west.longitude)
      .haversineDistance(to: Coordinate(uncheckedLatitude: east.latitude, longitude: east.longitude))
    #expect((600...800).contains(step))  // one cell's width at 51.5° N
  }

  @Test func townShowsTheTownAndFallsBackToACoarseCell() throws {
    let original = try fix(48.858_37, 2.294_48)
    let paris = Town(name: "Paris", latitude: 48.853_41, longitude: 2.348_8)
    let view = AudienceView.of(original, precision: .town, zones: [], town: paris)
    guard case .shown(let shown, let town) = view else {
      Issue.record("expected a town, got \(view)")
      return
    }
    #expect(town == "Paris" && shown.latitude == paris.latitude && shown.longitude == paris.longitude)
    #expect(shown.horizontalAccuracy == nil && shown.altitude == nil)
    let fallback = try #require(AudienceView.of(original, precision: .town, zones: []).fix)
    let cell = try GeohashCell(original.coordinate, bits: 20)
    #expect(fallback.latitude == cell.center.latitude && fallback.longitude == cell.center.longitude)
  }

  @Test func hiddenShowsNothing() throws {
    #expect(AudienceView.of(try fix(10, 10), precision: .hidden, zones: []) == .hidden)
  }

  @Test func zonesHideWhateverThePrecisionAndOnlyInside() throws {
    let home = PrivacyZone(id: "z1", name: "Home", latitude: 52.52, longitude: 13.405, radius: 200)
    let friend = PrivacyZone(
      id: "z2", name: "Friend", latitude: 52.50, longitude: 13.30, radius: 100, display: .hidden, store: false)
    let zones = [home, friend]
    for precision in LocationPrecision.allCases where precision != .hidden {
      #expect(
        AudienceView.of(try fix(52.5201, 13.4051), precision: precision, zones: zones) == .inPrivateZone(timestamp: now)
      )
      #expect(AudienceView.of(try fix(52.5, 13.3), precision: precision, zones: zones) == .hidden)
      #expect(AudienceView.of(try fix(52.53, 13.405), precision: precision, zones: zones).fix != nil)
    }
    #expect(PrivacyZone.stores(try fix(52.5201, 13.4051), in: zones))
    #expect(!PrivacyZone.stores(try fix(52.5, 13.3), in: zones))
    #expect(PrivacyZone.stores(try fix(52.53, 13.405), in: zones))
  }

  /// The edge belongs to the zone: a fix 199.9 m from the centre of a 200 m zone is inside, one at 200.1 m outside.
  @Test func zoneEdge() throws {
    let center = Coordinate(uncheckedLatitude: 52.52, longitude: 13.405)
    let zone = PrivacyZone(id: "z", name: "Home", latitude: 52.52, longitude: 13.405, radius: 200)
    for (distance, inside) in [(199.9, true), (200.1, false)] {
      let point = try center.destination(bearing: 37, distance: distance)
      #expect(zone.contains(latitude: point.latitude, longitude: point.longitude) == inside)
    }
  }

  /// The sphere's shortcut never disagrees with the ellipsoid: random zones and points around their edges, at every
  /// latitude.
  @Test func zoneContainmentAgreesWithTheGeodesic() throws {
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<5_000 {
      let centre = Coordinate(
        uncheckedLatitude: Double.random(in: -89...89, using: &generator),
        longitude: Double.random(in: -180...180, using: &generator))
      let radius = Double.random(in: PrivacyZone.radiusRange, using: &generator)
      let zone = PrivacyZone(id: "z", name: "Z", latitude: centre.latitude, longitude: centre.longitude, radius: radius)
      let point = try centre.destination(
        bearing: Double.random(in: 0..<360, using: &generator),
        distance: radius * Double.random(in: 0.97...1.03, using: &generator))
      let expected = Geodesic.wgs84.distance(from: centre, to: point) <= radius
      #expect(zone.contains(latitude: point.latitude, longitude: point.longitude) == expected)
    }
  }

  @Test func zoneProblems() {
    var zone = PrivacyZone(id: "z", name: "Home", latitude: 52.52, longitude: 13.405, radius: 200)
    #expect(zone.problem() == nil)
    zone.radius = 10
    #expect(zone.problem()?.contains("radius") == true)
    zone.radius = .nan
    #expect(zone.problem()?.contains("radius") == true)
    zone.radius = 200
    zone.latitude = 91
    #expect(zone.problem()?.contains("latitude") == true)
    zone.latitude = 0
    zone.name = " "
    #expect(zone.problem()?.contains("name") == true)
  }

  /// A viewer in two groups sees at the more precise one's precision; a direct grant is exact; a group set to
  /// hidden grants no location at all.
  @Test func mostPreciseSettingWins() throws {
    var groups = Group.standardGroups(for: "o")
    var town = try Group(
      id: "o.town", ownerID: "o", name: "Town",
      visibility: GroupVisibility(location: true, fields: [], precision: .town))
    try town.add("ann")
    try town.add("bob")
    var approximate = try Group(
      id: "o.km", ownerID: "o", name: "Km",
      visibility: GroupVisibility(location: true, fields: [], precision: .approximate))
    try approximate.add("bob")
    var hidden = try Group(
      id: "o.hidden", ownerID: "o", name: "Hidden",
      visibility: GroupVisibility(location: true, fields: [.fullName], precision: .hidden))
    try hidden.add("cyd")
    groups += [town, approximate, hidden]
    var settings = PrivacySettings(owner: "o", groups: groups)
    #expect(Sharing.precision(for: "ann", of: settings, at: now) == .town)
    #expect(Sharing.precision(for: "bob", of: settings, at: now) == .approximate)
    #expect(Sharing.precision(for: "cyd", of: settings, at: now) == .hidden)
    #expect(!Sharing.canSee("cyd", .location, of: settings, at: now))
    #expect(Sharing.canSee("cyd", .field(.fullName), of: settings, at: now))
    #expect(Sharing.precision(for: "o", of: settings, at: now) == .exact)
    settings.sharing.viewerGrants["ann"] = .some(nil)
    #expect(Sharing.precision(for: "ann", of: settings, at: now) == .exact)
    // A group past its deadline no longer counts.
    settings.sharing.groupUntil["o.km"] = now
    #expect(Sharing.precision(for: "bob", of: settings, at: now) == .town)
    settings.zones = [PrivacyZone(id: "z", name: "Home", latitude: 1, longitude: 1, radius: 100)]
    let inside = try fix(1, 1)
    #expect(Sharing.view(of: inside, for: "bob", of: settings, at: now) == .inPrivateZone(timestamp: now))
    #expect(Sharing.view(of: inside, for: "o", of: settings, at: now) == .shown(inside, town: nil))
  }

  /// A geofence event places its person within the fence: others see it only at exact precision and outside the
  /// person's zones; the person always.
  @Test func eventsOfOthersNeedExactPrecisionAndNoZone() throws {
    var groups = Group.standardGroups(for: "o")
    try groups[0].add("exact")
    var town = try Group(
      id: "o.town", ownerID: "o", name: "Town",
      visibility: GroupVisibility(location: true, fields: [], precision: .town))
    try town.add("coarse")
    groups.append(town)
    let settings = PrivacySettings(
      owner: "o", groups: groups,
      zones: [PrivacyZone(id: "z", name: "Home", latitude: 10, longitude: 10, radius: 500)])
    #expect(Sharing.maySeeEvent("exact", latitude: 11, longitude: 11, of: settings, at: now))
    #expect(!Sharing.maySeeEvent("exact", latitude: 10.001, longitude: 10, of: settings, at: now))
    #expect(Sharing.maySeeEvent("exact", latitude: nil, longitude: nil, of: settings, at: now))
    #expect(!Sharing.maySeeEvent("coarse", latitude: 11, longitude: 11, of: settings, at: now))
    #expect(!Sharing.maySeeEvent("stranger", latitude: 11, longitude: 11, of: settings, at: now))
    #expect(Sharing.maySeeEvent("o", latitude: 10, longitude: 10, of: settings, at: now))
    #expect(LocationPrecision.exact.covers(.town) && LocationPrecision.town.covers(.town))
    #expect(!LocationPrecision.town.covers(.approximate) && !LocationPrecision.hidden.covers(.hidden))
  }

  @Test func aVisibilityIncludesAnotherOnlyAtLeastAsPrecise() {
    let exact = GroupVisibility(location: true, fields: [.fullName])
    let town = GroupVisibility(location: true, fields: [.fullName], precision: .town)
    let hidden = GroupVisibility(location: true, fields: [.fullName], precision: .hidden)
    #expect(exact.includes(town) && !town.includes(exact) && town.includes(hidden) && !hidden.includes(town))
    #expect(hidden.includes(GroupVisibility(location: false, fields: [.fullName])))
    #expect(GroupVisibility.everything.includes(town) && !GroupVisibility.nothing.includes(town))
  }

  @Test func visibilityWithoutPrecisionDecodesAsExact() throws {
    let decoded = try JSONDecoder().decode(
      GroupVisibility.self, from: Data(#"{"location":true,"fields":["fullName"]}"#.utf8))
    #expect(decoded.precision == .exact)
    let round = try JSONDecoder().decode(
      GroupVisibility.self,
      from: JSONEncoder().encode(GroupVisibility(location: true, fields: [], precision: .town)))
    #expect(round.precision == .town)
  }
}

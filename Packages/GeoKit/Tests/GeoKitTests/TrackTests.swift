import Testing

@testable import GeoKit

@Suite struct TrackTests {
  /// Google's published example (developers.google.com/maps/documentation/utilities/polylinealgorithm).
  @Test func polylineMatchesGooglesExample() throws {
    let points = [(38.5, -120.2), (40.7, -120.95), (43.252, -126.453)].map {
      Coordinate(uncheckedLatitude: $0.0, longitude: $0.1)
    }
    #expect(Polyline.encode(points) == "_p~iF~ps|U_ulLnnqC_mqNvxq`@")
    #expect(try Polyline.decode("_p~iF~ps|U_ulLnnqC_mqNvxq`@") == points)
  }

  @Test func polylinePrecisionSixRoundTrips() throws {
    var random = SeededRandom(seed: 5)
    let points = (0..<500).map { _ in random.coordinate() }
    let decoded = try Polyline.decode(Polyline.encode(points, precision: 6), precision: 6)
    #expect(decoded.count == points.count)
    for (a, b) in zip(points, decoded) {
      #expect(abs(a.latitude - b.latitude) <= 5e-7 && abs(a.longitude - b.longitude) <= 5e-7 + 1e-12)
    }
  }

  @Test func polylineRejectsMalformedInput() throws {
    #expect(throws: PolylineError.invalidCharacter(32, offset: 2)) { try Polyline.decode("_p iF") }
    #expect(throws: PolylineError.truncated(offset: 3)) { try Polyline.decode("_p~") }
    // (0, 181): no real polyline leaves [-180, 180], so this is corrupt input, not a longitude to wrap.
    #expect(throws: PolylineError.invalidCoordinate(pointIndex: 0, latitude: 0, longitude: 181)) {
      try Polyline.decode("?_qvoa@")
    }
    #expect(throws: PolylineError.missingLongitude(pointIndex: 0)) { try Polyline.decode("_p~iF") }
    #expect(throws: PolylineError.valueTooLong(offset: 13)) { try Polyline.decode(String(repeating: "~", count: 20)) }
    let tooFarNorth = Polyline.encode([Coordinate(uncheckedLatitude: 100, longitude: 0)])
    #expect(throws: PolylineError.invalidCoordinate(pointIndex: 0, latitude: 100, longitude: 0)) {
      try Polyline.decode(tooFarNorth)
    }
    #expect(try Polyline.decode("").isEmpty)
  }

  @Test func simplifyKeepsShapeWithinTolerance() throws {
    // A straight line with 1 m jitter and one 200 m detour.
    let start = try Coordinate(latitude: 48.85, longitude: 2.35)
    var points: [Coordinate] = []
    for index in 0...100 {
      let along = try start.destination(bearing: 90, distance: Double(index) * 10)
      let offset = index == 50 ? 200.0 : (index % 2 == 0 ? 1 : -1)
      try points.append(along.destination(bearing: 0, distance: offset))
    }
    let simplified = Track.simplify(points, tolerance: 5)
    #expect(simplified.count == 5)
    #expect(simplified.first == points.first && simplified.last == points.last && simplified.contains(points[50]))
    #expect(Track.simplify(points, tolerance: 0.5).count == points.count)
    #expect(try abs(Track.length([start, start.destination(bearing: 0, distance: 1_000)]) - 1_000) < 6)
  }

  @Test func stayPointDetectorFindsVisits() throws {
    let home = try Coordinate(latitude: 50.45, longitude: 30.52)
    let shop = try home.destination(bearing: 45, distance: 2_000)
    var fixes: [TrackFix] = []
    var time = 0.0
    for index in 0..<20 {  // 19 minutes at home, jittering 20 m
      try fixes.append(TrackFix(home.destination(bearing: Double(index) * 40, distance: 20), time: time))
      time += 60
    }
    for index in 1...10 {  // walking to the shop
      try fixes.append(TrackFix(home.destination(bearing: 45, distance: Double(index) * 200), time: time))
      time += 60
    }
    for _ in 0..<3 {  // 2 minutes in the shop: too short
      fixes.append(TrackFix(shop, time: time))
      time += 60
    }
    fixes.append(TrackFix(home, time: time + 3_600))  // back home an hour later (a gap)
    fixes.append(TrackFix(home, time: time + 4_000))

    var detector = StayPointDetector()
    var stays = fixes.compactMap { detector.add($0) }
    if let last = detector.finish() { stays.append(last) }
    #expect(stays.count == 2)
    #expect(stays.first?.arrival == 0 && stays.first?.departure == 19 * 60)
    #expect((stays.first?.center.haversineDistance(to: home) ?? .infinity) < 10)
    #expect(stays.last?.arrival == time + 3_600 && stays.last?.fixCount == 2)
  }

  /// Arriving: the first fix is within 100 m of the second but not of the later ones; the stay starts at the second.
  @Test func stayStartsWhereTheDeviceArrived() throws {
    let cafe = try Coordinate(latitude: 48.8566, longitude: 2.3522)
    let approach = try cafe.destination(bearing: 180, distance: 80)
    var detector = StayPointDetector()
    var stays: [StayPoint] = []
    if let stay = detector.add(TrackFix(approach, time: 0)) { stays.append(stay) }
    for minute in 1...10 {
      let wobble = try cafe.destination(bearing: 0, distance: minute % 2 == 0 ? 30 : 0)
      if let stay = detector.add(TrackFix(wobble, time: Double(minute) * 60)) { stays.append(stay) }
    }
    if let stay = try detector.add(TrackFix(cafe.destination(bearing: 0, distance: 2_000), time: 660)) {
      stays.append(stay)
    }
    if let stay = detector.finish() { stays.append(stay) }
    #expect(stays.count == 1)
    #expect(stays.first?.arrival == 60 && stays.first?.departure == 600 && stays.first?.fixCount == 10)
  }
}

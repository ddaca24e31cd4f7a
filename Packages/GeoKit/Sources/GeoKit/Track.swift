/// Operations on tracks: time-ordered sequences of positions.
public enum Track {
  /// The length in metres of the path through `coordinates` (sum of haversine distances).
  public static func length(_ coordinates: some Sequence<Coordinate>) -> Double {
    var total = 0.0
    var previous: Coordinate?
    for coordinate in coordinates {
      if let previous { total += previous.haversineDistance(to: coordinate) }
      previous = coordinate
    }
    return total
  }

  /// The track simplified by Ramer–Douglas–Peucker: keeps the first and last points and every point needed so that
  /// no dropped point lies farther than `tolerance` metres from the simplified path.
  public static func simplify(_ coordinates: [Coordinate], tolerance: Double) -> [Coordinate] {
    guard coordinates.count > 2 else { return coordinates }
    var keep = [Bool](repeating: false, count: coordinates.count)
    keep[0] = true
    keep[coordinates.count - 1] = true
    // An explicit stack: recursion depth would be the number of points on pathological input.
    var stack = [(0, coordinates.count - 1)]
    while let (first, last) = stack.popLast() {
      guard last > first + 1 else { continue }
      var worst = -1.0
      var worstIndex = first
      let a = coordinates[first]
      let b = coordinates[last]
      let ruler = CheapRuler(latitude: (a.latitude + b.latitude) / 2)
      for index in (first + 1)..<last {
        let distance = segmentDistance(coordinates[index], a, b, ruler: ruler)
        if distance > worst {
          worst = distance
          worstIndex = index
        }
      }
      if worst > tolerance {
        keep[worstIndex] = true
        stack.append((first, worstIndex))
        stack.append((worstIndex, last))
      }
    }
    return zip(coordinates, keep).compactMap { $1 ? $0 : nil }
  }

  /// Distance from `p` to the segment a–b: planar with a local ruler for short segments, spherical otherwise.
  static func segmentDistance(_ p: Coordinate, _ a: Coordinate, _ b: Coordinate, ruler: CheapRuler) -> Double {
    guard abs(a.latitude - b.latitude) < 1, abs(a.latitude - p.latitude) < 1 else {
      return p.distance(toSegmentFrom: a, to: b)
    }
    let (bx, by) = ruler.offset(of: b, from: a)
    let (px, py) = ruler.offset(of: p, from: a)
    let lengthSquared = bx * bx + by * by
    var t = lengthSquared > 0 ? (px * bx + py * by) / lengthSquared : 0
    t = max(0, min(1, t))
    let dx = px - t * bx
    let dy = py - t * by
    return (dx * dx + dy * dy).squareRoot()
  }
}

/// One position of a track with its time (seconds since any fixed epoch, e.g. Unix time).
public struct TrackFix: Sendable, Hashable, Codable {
  /// Where.
  public var coordinate: Coordinate
  /// When, in seconds.
  public var time: Double

  /// A fix at `coordinate` and `time` (seconds).
  public init(_ coordinate: Coordinate, time: Double) {
    self.coordinate = coordinate
    self.time = time
  }
}

/// A detected stay (visit): where the device stayed and from when to when.
public struct StayPoint: Sendable, Hashable, Codable {
  /// The mean position of the fixes of the stay.
  public var center: Coordinate
  /// The time of the first fix of the stay.
  public var arrival: Double
  /// The time of the last fix of the stay.
  public var departure: Double
  /// How many fixes the stay was made of.
  public var fixCount: Int

  /// The duration in seconds.
  public var duration: Double { departure - arrival }
}

/// A streaming stay-point (visit) detector after Li et al. 2008 (Microsoft GeoLife): consecutive fixes that stay
/// within `radius` metres of the stay's first fix for at least `minimumDuration` seconds form a stay. A silence
/// longer than `maximumGap` seconds ends the current stay (the device may have moved without reporting). It gives
/// the same stays as the batch algorithm while keeping only the fixes of a candidate younger than `minimumDuration`.
///
/// Feed fixes in time order; each call returns the stay that the fix ended, if any; ``finish()`` flushes the last.
/// ```swift
/// var detector = StayPointDetector()
/// for fix in fixes { if let stay = detector.add(fix) { save(stay) } }
/// if let stay = detector.finish() { save(stay) }
/// ```
public struct StayPointDetector: Sendable {
  /// The largest distance in metres from the stay's anchor (default 100 m).
  public var radius: Double
  /// The shortest stay in seconds (default 5 min).
  public var minimumDuration: Double
  /// The longest silence in seconds inside a stay (default 15 min).
  public var maximumGap: Double

  /// The first and latest fix of the stay in progress, with running sums for its centre.
  var anchor: TrackFix?
  var latest: TrackFix?
  var count = 0
  /// The candidate's fixes while it is still shorter than `minimumDuration` (a few minutes of fixes at most), so
  /// that a failed candidate can restart at its second fix, as the batch algorithm does.
  var pending: [TrackFix] = []
  var latitudeSum = 0.0
  var longitudeSum = 0.0

  /// A detector with the given thresholds (metres, seconds).
  public init(radius: Double = 100, minimumDuration: Double = 5 * 60, maximumGap: Double = 15 * 60) {
    self.radius = radius
    self.minimumDuration = minimumDuration
    self.maximumGap = maximumGap
  }

  /// Adds the next fix (in time order; earlier fixes are ignored) and returns the stay it completed, if any.
  public mutating func add(_ fix: TrackFix) -> StayPoint? {
    guard let anchor, let latest else {
      start(fix)
      return nil
    }
    guard fix.time >= latest.time else { return nil }
    if fix.time - latest.time <= maximumGap && anchor.coordinate.haversineDistance(to: fix.coordinate) <= radius {
      self.latest = fix
      count += 1
      latitudeSum += fix.coordinate.latitude
      longitudeSum += Coordinate.normalizedLongitude(fix.coordinate.longitude - anchor.coordinate.longitude)
      if fix.time - anchor.time >= minimumDuration {
        pending = []
      } else {
        pending.append(fix)
      }
      return nil
    }
    if let stay = currentStay() {
      start(fix)
      return stay
    }
    // Too short to be a stay: try again from the candidate's second fix (the device may have been arriving).
    let replay = pending.dropFirst() + [fix]
    self.anchor = nil
    self.latest = nil
    var completed: StayPoint?
    for next in replay {
      if let stay = add(next) { completed = stay }
    }
    return completed
  }

  /// Ends the input: returns the stay in progress if it is long enough.
  public mutating func finish() -> StayPoint? {
    let stay = currentStay()
    anchor = nil
    latest = nil
    pending = []
    count = 0
    return stay
  }

  mutating func start(_ fix: TrackFix) {
    anchor = fix
    latest = fix
    pending = [fix]
    count = 1
    latitudeSum = fix.coordinate.latitude
    longitudeSum = 0
  }

  func currentStay() -> StayPoint? {
    guard let anchor, let latest, latest.time - anchor.time >= minimumDuration else { return nil }
    let n = Double(count)
    let center = Coordinate(
      uncheckedLatitude: latitudeSum / n,
      longitude: Coordinate.normalizedLongitude(anchor.coordinate.longitude + longitudeSum / n))
    return StayPoint(center: center, arrival: anchor.time, departure: latest.time, fixCount: count)
  }
}

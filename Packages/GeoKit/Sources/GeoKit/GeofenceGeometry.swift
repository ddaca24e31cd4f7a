/// Why a polygon is not a usable area.
public enum PolygonError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A ring has fewer than 3 distinct vertices.
  case tooFewVertices(ring: Int, count: Int)
  /// The polygon has more vertices than allowed.
  case tooManyVertices(count: Int, limit: Int)
  /// Two consecutive vertices of a ring are equal.
  case repeatedVertex(ring: Int, index: Int)
  /// Two edges of the polygon cross or overlap.
  case selfIntersecting(ring: Int, edge: Int, otherRing: Int, otherEdge: Int)
  /// A ring winds round a pole (or spans 360° of longitude), so its inside is ambiguous.
  case enclosesPole(ring: Int)
  /// A ring has no area (its vertices lie on one line).
  case degenerate(ring: Int)
  /// A hole's vertex lies outside the outer ring.
  case holeOutside(ring: Int)

  /// What was wrong and how to fix it. Ring 0 is the outer ring, holes count from 1.
  public var description: String {
    switch self {
    case .tooFewVertices(let ring, let count): "ring \(ring) has \(count) distinct vertices; at least 3 are needed"
    case .tooManyVertices(let count, let limit): "the polygon has \(count) vertices; at most \(limit) are allowed"
    case .repeatedVertex(let ring, let index): "ring \(ring) repeats vertex \(index); drop the duplicate"
    case .selfIntersecting(let ring, let edge, let otherRing, let otherEdge):
      "edge \(edge) of ring \(ring) crosses edge \(otherEdge) of ring \(otherRing); the polygon must be simple"
    case .enclosesPole(let ring): "ring \(ring) winds round a pole; split it or use a smaller area"
    case .degenerate(let ring): "ring \(ring) has no area; its vertices lie on one line"
    case .holeOutside(let ring): "hole \(ring) lies partly outside the outer ring"
    }
  }
}

extension Polygon {
  /// Checks that the polygon is a simple area: each ring has 3 or more vertices without consecutive repeats (a
  /// closing vertex equal to the first is allowed), at most `maximumVertices` vertices in all, no two edges cross or
  /// overlap (edges are straight in latitude/longitude and take the shorter way round the antimeridian, like
  /// ``contains(_:)``), no ring winds round a pole or lies on one line, and holes lie inside the outer ring.
  /// - Throws: ``PolygonError`` naming the first problem found.
  public func validate(maximumVertices: Int = 1_000) throws(PolygonError) {
    let rings = [vertices] + holes
    let total = rings.reduce(0) { $0 + $1.count }
    guard total <= maximumVertices else { throw .tooManyVertices(count: total, limit: maximumVertices) }
    guard let origin = vertices.first else { throw .tooFewVertices(ring: 0, count: 0) }
    var planar: [[(x: Double, y: Double)]] = []
    for (index, ring) in rings.enumerated() {
      var ring = ring
      if ring.count > 1, ring.first == ring.last { ring.removeLast() }
      guard ring.count >= 3 else { throw .tooFewVertices(ring: index, count: ring.count) }
      for i in ring.indices where ring[i] == ring[(i + 1) % ring.count] {
        throw .repeatedVertex(ring: index, index: (i + 1) % ring.count)
      }
      // Unwrap longitudes edge by edge (each edge takes the shorter way); a ring round a pole does not close.
      var points: [(x: Double, y: Double)] = []
      var x = origin.longitude + Coordinate.normalizedLongitude(ring[0].longitude - origin.longitude)
      points.append((x, ring[0].latitude))
      for i in 1..<ring.count {
        x += Coordinate.normalizedLongitude(ring[i].longitude - ring[i - 1].longitude)
        points.append((x, ring[i].latitude))
      }
      let closing = x + Coordinate.normalizedLongitude(ring[0].longitude - ring[ring.count - 1].longitude)
      guard abs(closing - points[0].x) < 1e-9 else { throw .enclosesPole(ring: index) }
      planar.append(points)
    }
    for (ringIndex, ring) in planar.enumerated() {
      for (otherIndex, other) in planar.enumerated() where otherIndex >= ringIndex {
        for i in ring.indices {
          let a = ring[i]
          let b = ring[(i + 1) % ring.count]
          for j in other.indices where otherIndex > ringIndex || j > i {
            let c = other[j]
            let d = other[(j + 1) % other.count]
            let adjacent =
              otherIndex == ringIndex && (j == i + 1 || (i == 0 && j == ring.count - 1))
            if Self.segmentsMeet(a, b, c, d, adjacent: adjacent) {
              throw .selfIntersecting(ring: ringIndex, edge: i, otherRing: otherIndex, otherEdge: j)
            }
          }
        }
      }
    }
    for (index, ring) in planar.enumerated() where abs(Self.twiceArea(ring)) <= 1e-18 {
      throw .degenerate(ring: index)
    }
    for (index, hole) in holes.enumerated() where !hole.allSatisfy({ Self.ring(vertices, contains: $0) }) {
      throw .holeOutside(ring: index + 1)
    }
  }

  /// The distance in metres from `point` to the nearest edge of any ring (edges straight in latitude/longitude,
  /// measured in a local plane at the point's latitude — accurate for fences up to tens of kilometres).
  public func distanceToBoundary(from point: Coordinate) -> Double {
    let ruler = CheapRuler(latitude: point.latitude)
    var best = Double.infinity
    for ring in [vertices] + holes where !ring.isEmpty {
      var previous = ruler.offset(of: ring[ring.count - 1], from: point)
      for vertex in ring {
        let current = ruler.offset(of: vertex, from: point)
        best = min(best, Self.distanceFromOrigin(toSegment: previous, current))
        previous = current
      }
    }
    return best
  }

  /// The area in square metres of the outer ring less its holes (local plane at the outer ring's first vertex).
  public var area: Double {
    guard let origin = vertices.first else { return 0 }
    let ruler = CheapRuler(latitude: origin.latitude)
    func ringArea(_ ring: [Coordinate]) -> Double {
      abs(Self.twiceArea(ring.map { ruler.offset(of: $0, from: origin) }.map { (x: $0.east, y: $0.north) })) / 2
    }
    return max(0, ringArea(vertices) - holes.reduce(0) { $0 + ringArea($1) })
  }

  static func twiceArea(_ points: [(x: Double, y: Double)]) -> Double {
    var sum = 0.0
    for i in points.indices {
      let p = points[i]
      let q = points[(i + 1) % points.count]
      sum += p.x * q.y - q.x * p.y
    }
    return sum
  }

  static func distanceFromOrigin(toSegment a: (east: Double, north: Double), _ b: (east: Double, north: Double))
    -> Double
  {
    let dx = b.east - a.east
    let dy = b.north - a.north
    let lengthSquared = dx * dx + dy * dy
    var t = lengthSquared > 0 ? -(a.east * dx + a.north * dy) / lengthSquared : 0
    t = min(1, max(0, t))
    let x = a.east + t * dx
    let y = a.north + t * dy
    return (x * x + y * y).squareRoot()
  }

  /// Whether segments ab and cd share a point; `adjacent` segments (b == c or d == a) may share only that vertex.
  static func segmentsMeet(
    _ a: (x: Double, y: Double), _ b: (x: Double, y: Double), _ c: (x: Double, y: Double),
    _ d: (x: Double, y: Double), adjacent: Bool
  ) -> Bool {
    func cross(_ o: (x: Double, y: Double), _ p: (x: Double, y: Double), _ q: (x: Double, y: Double)) -> Double {
      (p.x - o.x) * (q.y - o.y) - (p.y - o.y) * (q.x - o.x)
    }
    func onSegment(_ p: (x: Double, y: Double), _ q: (x: Double, y: Double), _ r: (x: Double, y: Double)) -> Bool {
      min(p.x, q.x) <= r.x && r.x <= max(p.x, q.x) && min(p.y, q.y) <= r.y && r.y <= max(p.y, q.y)
    }
    let d1 = cross(c, d, a)
    let d2 = cross(c, d, b)
    let d3 = cross(a, b, c)
    let d4 = cross(a, b, d)
    if adjacent {
      // Sharing one vertex is fine; folding back along the same line is not.
      let allCollinear = d1 == 0 && d2 == 0 && d3 == 0 && d4 == 0
      guard allCollinear else { return false }
      let shared = b == c ? b : a
      let u = b == c ? a : b
      let v = b == c ? d : c
      return (u.x - shared.x) * (v.x - shared.x) + (u.y - shared.y) * (v.y - shared.y) > 0
    }
    if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) { return true }
    if d1 == 0 && onSegment(c, d, a) { return true }
    if d2 == 0 && onSegment(c, d, b) { return true }
    if d3 == 0 && onSegment(a, b, c) { return true }
    if d4 == 0 && onSegment(a, b, d) { return true }
    return false
  }
}

extension Geofence {
  /// The signed distance in metres from `point` to the fence's edge: negative inside, positive outside (a circle by
  /// haversine, a polygon by ``Polygon/distanceToBoundary(from:)``).
  public func signedDistance(to point: Coordinate) -> Double {
    switch self {
    case .circle(let center, let radius): return center.haversineDistance(to: point) - radius
    case .polygon(let polygon):
      let distance = polygon.distanceToBoundary(from: point)
      return polygon.contains(point) ? -distance : distance
    }
  }

  /// A circle's radius, or the radius of the circle with a polygon's area: the size that margins scale with.
  public var equivalentRadius: Double {
    switch self {
    case .circle(_, let radius): radius
    case .polygon(let polygon): (polygon.area / Double.pi).squareRoot()
    }
  }
}

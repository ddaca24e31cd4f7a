/// A simple polygon (no self-intersections) given by its vertices; the closing edge is implicit. It may cross the
/// antimeridian (edges always take the shorter way round) but must not contain a pole. Holes are subtracted.
public struct Polygon: Sendable, Hashable, Codable {
  /// The outer ring.
  public var vertices: [Coordinate]
  /// Rings cut out of the polygon.
  public var holes: [[Coordinate]]

  /// A polygon from its outer ring and optional holes.
  public init(_ vertices: [Coordinate], holes: [[Coordinate]] = []) {
    self.vertices = vertices
    self.holes = holes
  }

  /// Whether `point` lies inside (even–odd rule in latitude/longitude, so edges follow rhumb lines; points
  /// exactly on an edge may go either way).
  public func contains(_ point: Coordinate) -> Bool {
    guard Self.ring(vertices, contains: point) else { return false }
    return !holes.contains { Self.ring($0, contains: point) }
  }

  static func ring(_ ring: [Coordinate], contains point: Coordinate) -> Bool {
    guard ring.count >= 3 else { return false }
    var inside = false
    var previous = ring[ring.count - 1]
    // Longitudes relative to the point, in [-180, 180), so rings across the antimeridian work.
    var previousX = Coordinate.normalizedLongitude(previous.longitude - point.longitude)
    for vertex in ring {
      let x = Coordinate.normalizedLongitude(vertex.longitude - point.longitude)
      // An edge spanning more than 180° of relative longitude goes round the back: it cannot cross x = 0.
      if (previousX > 0) != (x > 0), abs(x - previousX) <= 180 {
        let t = (0 - previousX) / (x - previousX)
        let y = previous.latitude + t * (vertex.latitude - previous.latitude)
        if y > point.latitude { inside.toggle() }
      }
      previous = vertex
      previousX = x
    }
    return inside
  }
}

/// An area that positions can be tested against: arrive/leave alerts, "keeps passing by" detection.
public enum Geofence: Sendable, Hashable, Codable {
  /// Everything within `radius` metres (haversine) of `center`.
  case circle(center: Coordinate, radius: Double)
  /// The inside of a polygon.
  case polygon(Polygon)

  /// Whether `point` lies inside the fence (a circle's boundary counts as inside).
  public func contains(_ point: Coordinate) -> Bool {
    switch self {
    case .circle(let center, let radius): center.haversineDistance(to: point) <= radius
    case .polygon(let polygon): polygon.contains(point)
    }
  }

  /// A box that contains the whole fence (for a first, cheap filter or an index query).
  public var boundingBox: BoundingBox {
    switch self {
    case .circle(let center, let radius): return BoundingBox(around: center, radius: radius)
    case .polygon(let polygon):
      guard let first = polygon.vertices.first else { return BoundingBox(south: 0, west: 0, north: 0, east: 0) }
      var south = first.latitude
      var north = first.latitude
      var minX = 0.0
      var maxX = 0.0
      for vertex in polygon.vertices {
        south = min(south, vertex.latitude)
        north = max(north, vertex.latitude)
        let x = Coordinate.normalizedLongitude(vertex.longitude - first.longitude)
        minX = min(minX, x)
        maxX = max(maxX, x)
      }
      if maxX - minX >= 360 { return BoundingBox(south: south, west: -180, north: north, east: 180) }
      return BoundingBox(
        south: south, west: Coordinate.normalizedLongitude(first.longitude + minX), north: north,
        east: Coordinate.normalizedLongitude(first.longitude + maxX))
    }
  }
}

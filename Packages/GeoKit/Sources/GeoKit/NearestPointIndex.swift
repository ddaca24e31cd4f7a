import Foundation

/// The points nearest to a coordinate by great-circle distance, in memory: a k-d tree of the points as unit vectors
/// on the sphere (x, y, z), so a query is O(log n) for a spread-out set, with no seam at the antimeridian and no
/// singularity at the poles (the chord between two unit vectors grows with their great-circle distance).
///
/// Points are identified by their position in the array the index was built from; equally distant points come in
/// that order, so sort the input by a stable key to make ties stable.
public struct NearestPointIndex: Sendable {
  /// A point found.
  public struct Neighbour: Sendable, Hashable {
    /// The point's position in the array the index was built from.
    public var index: Int
    /// Metres on the sphere of ``meanEarthRadius``.
    public var distance: Double
  }

  // The tree: point coordinates in tree order (a node's point at the middle of its range), splitting axis by depth.
  private let xs: [Double]
  private let ys: [Double]
  private let zs: [Double]
  private let order: [Int]
  private let points: [Coordinate]

  /// An index of `points`.
  public init(_ points: [Coordinate]) {
    self.points = points
    let vectors = points.map(Self.unitVector)
    var order = Array(points.indices)
    func build(_ range: Range<Int>, depth: Int) {
      guard range.count > 1 else { return }
      let axis = depth % 3
      order[range].sort { vectors[$0][axis] != vectors[$1][axis] ? vectors[$0][axis] < vectors[$1][axis] : $0 < $1 }
      let middle = range.lowerBound + range.count / 2
      build(range.lowerBound..<middle, depth: depth + 1)
      build((middle + 1)..<range.upperBound, depth: depth + 1)
    }
    build(0..<order.count, depth: 0)
    self.order = order
    xs = order.map { vectors[$0][0] }
    ys = order.map { vectors[$0][1] }
    zs = order.map { vectors[$0][2] }
  }

  /// How many points the index holds.
  public var count: Int { order.count }

  /// The `k` points nearest to `coordinate`, nearest first (equal distances by index).
  public func nearest(to coordinate: Coordinate, k: Int = 1) -> [Neighbour] {
    guard k > 0, !order.isEmpty else { return [] }
    let query = Self.unitVector(coordinate)
    var best: [(chord: Double, index: Int)] = []
    func consider(_ position: Int) {
      let dx = xs[position] - query[0]
      let dy = ys[position] - query[1]
      let dz = zs[position] - query[2]
      Self.keep((chord: dx * dx + dy * dy + dz * dz, index: order[position]), among: &best, k: k)
    }
    func search(_ range: Range<Int>, depth: Int) {
      guard !range.isEmpty else { return }
      let middle = range.lowerBound + range.count / 2
      consider(middle)
      guard range.count > 1 else { return }
      let axis = depth % 3
      let split = axis == 0 ? xs[middle] : axis == 1 ? ys[middle] : zs[middle]
      let delta = query[axis] - split
      let (near, far) =
        delta < 0
        ? (range.lowerBound..<middle, (middle + 1)..<range.upperBound)
        : ((middle + 1)..<range.upperBound, range.lowerBound..<middle)
      search(near, depth: depth + 1)
      if best.count < k || delta * delta <= (best.last?.chord ?? .infinity) { search(far, depth: depth + 1) }
    }
    search(0..<order.count, depth: 0)
    return best.map { Neighbour(index: $0.index, distance: Self.metres(chordSquared: $0.chord)) }
  }

  /// The `k` nearest points found by measuring every point with the haversine formula: the brute-force scan, by an
  /// independent formula, that the tree must agree with.
  public func scan(to coordinate: Coordinate, k: Int = 1) -> [Neighbour] {
    guard k > 0 else { return [] }
    // Keeps the k best while measuring, rather than sorting every point: a scan over thousands of points is then
    // linear (the gazetteer test scans 2,264 localities 10,000 times in a debug build).
    var best: [(chord: Double, index: Int)] = []
    for (index, point) in points.enumerated() {
      Self.keep((chord: coordinate.haversineDistance(to: point), index: index), among: &best, k: k)
    }
    return best.map { Neighbour(index: $0.index, distance: $0.chord) }
  }

  /// Puts `candidate` into `best` (at most `k`, nearest first, equal distances by index) if it is among the nearest.
  private static func keep(
    _ candidate: (chord: Double, index: Int), among best: inout [(chord: Double, index: Int)], k: Int
  ) {
    if best.count == k, let worst = best.last, !closer(candidate, worst) { return }
    var at = best.count
    while at > 0 && closer(candidate, best[at - 1]) { at -= 1 }
    best.insert(candidate, at: at)
    if best.count > k { best.removeLast() }
  }

  private static func closer(_ a: (chord: Double, index: Int), _ b: (chord: Double, index: Int)) -> Bool {
    a.chord != b.chord ? a.chord < b.chord : a.index < b.index
  }

  private static func unitVector(_ coordinate: Coordinate) -> [Double] {
    let phi = coordinate.latitude * .pi / 180
    let lambda = coordinate.longitude * .pi / 180
    return [cos(phi) * cos(lambda), cos(phi) * sin(lambda), sin(phi)]
  }

  private static func metres(chordSquared: Double) -> Double {
    2 * meanEarthRadius * asin(min(1, chordSquared.squareRoot() / 2))
  }
}

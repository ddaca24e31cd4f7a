import Foundation
import GeoKit

/// Offline reverse geocoding over the gazetteer's populated places, in memory: a k-d tree of the places as points
/// on the unit sphere (x, y, z), so the nearest place by great-circle distance is found in O(log n) and there is no
/// seam at the antimeridian and no singularity at the poles (chord length grows with great-circle distance).
///
/// A coordinate's areas are its nearest place's (the dumps have codes per place, not area outlines).
public struct GazetteerIndex: Sendable {
  /// A place found, with its great-circle distance from the query in metres.
  public struct Match: Sendable, Hashable {
    /// The place.
    public var locality: GazetteerLocality
    /// Metres on the sphere of GeoKit's `meanEarthRadius`.
    public var distance: Double
  }

  private let places: [GazetteerLocality]
  // The k-d tree: point coordinates in tree order (a node's point at the middle of its range), splitting axis by
  // depth (x, y, z).
  private let xs: [Double]
  private let ys: [Double]
  private let zs: [Double]
  private let order: [Int]

  /// An index of the towns of `localities` (``GazetteerLocality/isTown``: city districts are not towns).
  public init(_ localities: [GazetteerLocality]) {
    let localities = localities.filter(\.isTown)
    places = localities
    let points = localities.map { Self.unitVector(latitude: $0.latitude, longitude: $0.longitude) }
    var order = Array(localities.indices)
    func build(_ range: Range<Int>, depth: Int) {
      guard range.count > 1 else { return }
      let axis = depth % 3
      order[range].sort { points[$0][axis] < points[$1][axis] }
      let middle = range.lowerBound + range.count / 2
      build(range.lowerBound..<middle, depth: depth + 1)
      build((middle + 1)..<range.upperBound, depth: depth + 1)
    }
    build(0..<order.count, depth: 0)
    self.order = order
    xs = order.map { points[$0][0] }
    ys = order.map { points[$0][1] }
    zs = order.map { points[$0][2] }
  }

  /// How many places the index holds.
  public var count: Int { places.count }

  /// The `k` places nearest to the coordinate, nearest first (ties by GeoNames id).
  public func nearest(latitude: Double, longitude: Double, k: Int = 1) -> [Match] {
    guard k > 0, !places.isEmpty else { return [] }
    let query = Self.unitVector(latitude: latitude, longitude: longitude)
    var best: [(chord: Double, index: Int)] = []
    func consider(_ position: Int) {
      let dx = xs[position] - query[0]
      let dy = ys[position] - query[1]
      let dz = zs[position] - query[2]
      let chord = dx * dx + dy * dy + dz * dz
      let index = order[position]
      if best.count == k, let worst = best.last, !Self.closer((chord, index), worst, places) { return }
      let at = best.firstIndex { Self.closer((chord, index), $0, places) } ?? best.count
      best.insert((chord, index), at: at)
      if best.count > k { best.removeLast() }
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
    return best.map { Match(locality: places[$0.index], distance: Self.metres(chordSquared: $0.chord)) }
  }

  /// The `k` nearest places found by measuring every place: the brute-force scan the index must agree with
  /// (tests).
  public func scan(latitude: Double, longitude: Double, k: Int = 1) -> [Match] {
    let query = Self.unitVector(latitude: latitude, longitude: longitude)
    var best: [(Double, Int)] = []
    for (index, place) in places.enumerated() {
      // Measured from the place's own coordinates, independently of the tree's arrays.
      let phi = place.latitude * .pi / 180
      let lambda = place.longitude * .pi / 180
      let dx = cos(phi) * cos(lambda) - query[0]
      let dy = cos(phi) * sin(lambda) - query[1]
      let dz = sin(phi) - query[2]
      let candidate = (dx * dx + dy * dy + dz * dz, index)
      if best.count == k, let worst = best.last, !Self.closer(candidate, worst, places) { continue }
      best.append(candidate)
      best.sort { Self.closer($0, $1, places) }
      if best.count > k { best.removeLast() }
    }
    return best.map { Match(locality: places[$0.1], distance: Self.metres(chordSquared: $0.0)) }
  }

  private static func closer(_ a: (Double, Int), _ b: (Double, Int), _ places: [GazetteerLocality]) -> Bool {
    a.0 != b.0 ? a.0 < b.0 : places[a.1].geonameID < places[b.1].geonameID
  }

  static func unitVector(latitude: Double, longitude: Double) -> [Double] {
    let phi = latitude * .pi / 180
    let lambda = longitude * .pi / 180
    return [cos(phi) * cos(lambda), cos(phi) * sin(lambda), sin(phi)]
  }

  static func metres(chordSquared: Double) -> Double {
    2 * meanEarthRadius * asin(min(1, chordSquared.squareRoot() / 2))
  }
}

import Foundation

extension Coordinate {
  /// The weighted geographic midpoint of `points` — the centre of gravity of their positions on the sphere (each a
  /// unit vector times its weight), projected back onto the surface — or nil when there is none: no point, no
  /// positive weight, or weights that cancel out (antipodes).
  ///
  /// Unlike averaging degrees it is right across the antimeridian (the midpoint of 179° E and 179° W is 180°) and
  /// near the poles, which is what a country like Russia or Fiji needs.
  ///
  /// ```swift
  /// let centre = Coordinate.midpoint(of: [(tomsk, 3.0), (seversk, 1.0)])
  /// ```
  public static func midpoint(of points: [(coordinate: Coordinate, weight: Double)]) -> Coordinate? {
    var (x, y, z) = (0.0, 0.0, 0.0)
    for (coordinate, weight) in points where weight > 0 && weight.isFinite {
      let latitude = coordinate.latitude * .pi / 180
      let longitude = coordinate.longitude * .pi / 180
      x += weight * cos(latitude) * cos(longitude)
      y += weight * cos(latitude) * sin(longitude)
      z += weight * sin(latitude)
    }
    let length = (x * x + y * y + z * z).squareRoot()
    guard length > 1e-12 else { return nil }
    let latitude = asin(max(-1, min(1, z / length))) * 180 / .pi
    // At a pole the longitude is arbitrary: 0.
    let longitude = (x * x + y * y).squareRoot() < 1e-12 ? 0 : atan2(y, x) * 180 / .pi
    return Coordinate(uncheckedLatitude: latitude, longitude: longitude >= 180 ? longitude - 360 : longitude)
  }
}

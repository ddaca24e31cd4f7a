#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Careful angle arithmetic in degrees (exact reductions, error-free sums), after GeographicLib's Math class.
@usableFromInline enum Geo {
  @usableFromInline static let degree = Double.pi / 180

  /// `x` if it is a valid latitude, NaN otherwise.
  @inline(__always) static func latFix(_ x: Double) -> Double { abs(x) > 90 ? .nan : x }

  /// Rounds tiny angles so that values below 1/16 keep at most ~57 bits below the point (avoids underflow).
  @inline(__always) static func angRound(_ x: Double) -> Double {
    let z = 1.0 / 16
    var y = abs(x)
    let w = z - y
    y = w > 0 ? z - w : y
    return x.sign == .minus ? -y : y
  }

  /// Scales (x, y) to unit length.
  @inline(__always) static func norm(_ x: inout Double, _ y: inout Double) {
    let r = hypot(x, y)
    x /= r
    y /= r
  }

  /// √(x² + y²) without hypot's overflow protection (arguments here are at most a few units). `norm` keeps the
  /// correctly rounded `hypot`, so that results match GeographicLib's C++ bit for bit even on millimetre lines.
  @inline(__always) static func length(_ x: Double, _ y: Double) -> Double {
    (x * x + y * y).squareRoot()
  }

  /// `x` reduced to [-180, 180].
  @inline(__always) static func angNormalize(_ x: Double) -> Double {
    let y = remainder(x, 360)
    return abs(y) == 180 ? (x.sign == .minus ? -180 : 180) : y
  }

  /// u + v and the rounding error of the sum.
  @inline(__always) static func sum(_ u: Double, _ v: Double) -> (Double, Double) {
    let s = u + v
    var up = s - v
    var vpp = s - up
    up -= u
    vpp -= v
    return (s, s != 0 ? 0 - (up + vpp) : s)
  }

  /// y − x reduced to [-180, 180] exactly, as a value and its rounding error.
  @inline(__always) static func angDiff(_ x: Double, _ y: Double) -> (Double, Double) {
    var (d, t) = sum(remainder(-x, 360), remainder(y, 360))
    (d, t) = sum(remainder(d, 360), t)
    if d == 0 || abs(d) == 180 {
      let s = t == 0 ? y - x : -t
      d = s.sign == .minus ? -abs(d) : abs(d)
    }
    return (d, t)
  }

  /// Sine and cosine of `x` degrees, exact at multiples of 90°.
  @inline(__always) static func sincosd(_ x: Double) -> (sin: Double, cos: Double) {
    sincosde(x, 0, roundArgument: false)
  }

  /// Sine and cosine of `x + t` degrees where `t` is a small correction.
  @inline(__always) static func sincosde(_ x: Double, _ t: Double, roundArgument: Bool = true) -> (
    sin: Double, cos: Double
  ) {
    guard x.isFinite else { return (.nan, .nan) }
    var q = (x / 90).rounded(.toNearestOrEven)
    var r = x - q * 90
    // Keep r in [-45, 45] (x / 90 may round across a half-way point).
    if r > 45 {
      r -= 90
      q += 1
    } else if r < -45 {
      r += 90
      q -= 1
    }
    if roundArgument { r = angRound(r + t) }
    r *= degree
    let s = sin(r)
    let c = cos(r)
    var sinx: Double
    var cosx: Double
    switch Int(q) & 3 {
    case 0: (sinx, cosx) = (s, c)
    case 1: (sinx, cosx) = (c, -s)
    case 2: (sinx, cosx) = (-s, -c)
    default: (sinx, cosx) = (-c, s)
    }
    cosx += 0
    if x != 0 { sinx += 0 }
    return (sinx, cosx)
  }

  /// atan2(y, x) in degrees in (-180, 180], exact for the axes.
  @inline(__always) static func atan2d(_ y: Double, _ x: Double) -> Double {
    var x = x
    var y = y
    var q = 0
    if abs(y) > abs(x) {
      swap(&x, &y)
      q = 2
    }
    if x.sign == .minus {
      x = -x
      q += 1
    }
    var ang = atan2(y, x) / degree
    switch q {
    case 1: ang = (y.sign == .minus ? -180 : 180) - ang
    case 2: ang = 90 - ang
    case 3: ang = -90 + ang
    default: break
    }
    return ang
  }
}

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Geodesics on an ellipsoid of revolution: the inverse and direct problems solved by C. F. F. Karney's method
/// ("Algorithms for geodesics", J. Geodesy 87, 2013), with series to order 6 in the third flattening.
///
/// Results agree with GeographicLib to a few nanometres; the inverse problem converges for every pair of points,
/// nearly antipodal ones included.
///
/// ```swift
/// let jfk = try Coordinate(latitude: 40.6413, longitude: -73.7781)
/// let lhr = try Coordinate(latitude: 51.47, longitude: -0.4543)
/// let line = Geodesic.wgs84.inverse(from: jfk, to: lhr)   // line.distance ≈ 5_554_909 m (GeodSolve: 5554908.791)
/// ```
public struct Geodesic: Sendable, Hashable {
  /// The equatorial radius in metres.
  public let equatorialRadius: Double
  /// The flattening (a − b) / a.
  public let flattening: Double

  @usableFromInline let f1: Double
  @usableFromInline let ep2: Double
  @usableFromInline let n: Double
  @usableFromInline let b: Double
  @usableFromInline let etol2: Double
  @usableFromInline let a3x: SIMD8<Double>
  @usableFromInline let c3x: SIMD16<Double>

  /// The WGS84 ellipsoid (a = 6 378 137 m, f = 1/298.257223563) used by GPS.
  public static let wgs84 = Geodesic(equatorialRadius: 6_378_137, flattening: 1 / 298.257223563)

  /// An ellipsoid from its equatorial radius (metres, > 0) and flattening (|f| < 0.2, where order-6 series hold;
  /// the reference tests cover WGS84).
  public init(equatorialRadius: Double, flattening: Double) {
    let a = equatorialRadius
    let f = flattening
    self.equatorialRadius = a
    self.flattening = f
    f1 = 1 - f
    let e2 = f * (2 - f)
    ep2 = e2 / (f1 * f1)
    n = f / (2 - f)
    b = a * f1
    etol2 = 0.1 * Self.tol2 / (max(0.001, abs(f)) * min(1, 1 - f / 2) / 2).squareRoot()
    let n = self.n
    // A3 = sum of a3x[k] * eps^(5 - k), coefficients polynomials in n (Karney 2013, eq. 24).
    a3x = SIMD8(
      -3.0 / 128, (-2 * n - 3) / 64, ((-n - 3) * n - 1) / 16, ((3 * n - 1) * n - 2) / 8, (n - 1) / 2, 1, 0, 0)
    // C3[l] coefficients, highest power of eps first, l = 1...5 (eq. 25).
    c3x = SIMD16(
      3.0 / 128, (2 * n + 5) / 128, ((-n + 3) * n + 3) / 64, (-n * n + 1) / 8, (-n + 1) / 4,
      5.0 / 256, (n + 3) / 128, ((-3 * n - 2) * n + 3) / 64, ((n - 3) * n + 2) / 32,
      7.0 / 512, (-10 * n + 9) / 384, ((5 * n - 9) * n + 5) / 192,
      7.0 / 512, (-14 * n + 7) / 512,
      21.0 / 2560, 0)
  }

  // MARK: - Results

  /// The solution of the inverse problem: the shortest path between two points.
  public struct Inverse: Sendable, Hashable {
    /// The length of the geodesic in metres.
    public var distance: Double
    /// The azimuth at the first point, degrees clockwise from north in (-180, 180].
    public var initialAzimuth: Double
    /// The forward azimuth at the second point, degrees clockwise from north in (-180, 180].
    public var finalAzimuth: Double
    /// The arc length on the auxiliary sphere, in degrees.
    public var arcLength: Double
  }

  /// The solution of the direct problem: where a geodesic of a given length and azimuth ends.
  public struct Direct: Sendable, Hashable {
    /// Latitude of the end point in degrees.
    public var latitude: Double
    /// Longitude of the end point in degrees, in [-180, 180].
    public var longitude: Double
    /// The forward azimuth at the end point, degrees clockwise from north in (-180, 180].
    public var finalAzimuth: Double

    /// The end point as a ``Coordinate`` (longitude normalized to [-180, 180)).
    @inlinable public var destination: Coordinate {
      Coordinate(uncheckedLatitude: latitude, longitude: Coordinate.normalizedLongitude(longitude))
    }
  }

  // MARK: - Constants

  @usableFromInline static let tol0 = Double.ulpOfOne
  @usableFromInline static let tol1 = 200 * tol0
  @usableFromInline static let tol2 = tol0.squareRoot()
  @usableFromInline static let tolb = tol0 * tol2
  @usableFromInline static let xthresh = 1000 * tol2
  @usableFromInline static let tiny = Double.leastNormalMagnitude.squareRoot()
  @usableFromInline static let maxit1 = 20
  @usableFromInline static let maxit2 = maxit1 + Double.significandBitCount + 1 + 10
  @usableFromInline static let degree = Double.pi / 180
}

// MARK: - Direct problem

extension Geodesic {
  /// The end of the geodesic that starts at `start` with `azimuth` (degrees) and runs `distance` metres.
  public func direct(from start: Coordinate, azimuth: Double, distance: Double) -> Direct {
    direct(latitude: start.latitude, longitude: start.longitude, azimuth: azimuth, distance: distance)
  }

  /// The direct problem on raw degrees (latitude must be in [-90, 90]; returns NaNs otherwise).
  public func direct(latitude lat1: Double, longitude lon1: Double, azimuth azi1: Double, distance s12: Double)
    -> Direct
  {
    let lat1 = Geo.latFix(lat1)
    let (salp1, calp1) = Geo.sincosd(Geo.angRound(azi1))
    let (sbet1, cbet1) = reducedLatitude(Geo.angRound(lat1))
    let salp0 = salp1 * cbet1
    let calp0 = Geo.length(calp1, salp1 * sbet1)
    var ssig1 = sbet1
    let somg1 = salp0 * sbet1
    var csig1 = sbet1 != 0 || calp1 != 0 ? cbet1 * calp1 : 1
    let comg1 = csig1
    Geo.norm(&ssig1, &csig1)
    let k2 = calp0 * calp0 * ep2
    let eps = k2 / (2 * (1 + (1 + k2).squareRoot()) + k2)
    let a1m1 = Series.a1m1(eps)
    let c1a = Series.c1(eps)
    let c1pa = Series.c1p(eps)
    let b11 = Series.sinSeries(ssig1, csig1, c1a)
    let sb11 = sin(b11)
    let cb11 = cos(b11)
    let stau1 = ssig1 * cb11 + csig1 * sb11
    let ctau1 = csig1 * cb11 - ssig1 * sb11
    let a3c = -flattening * salp0 * a3f(eps)
    let c3a = c3f(eps)
    let b31 = Series.sinSeries(ssig1, csig1, c3a)

    let tau12 = s12 / (b * (1 + a1m1))
    let s = sin(tau12)
    let c = cos(tau12)
    let b12 = -Series.sinSeries(stau1 * c + ctau1 * s, ctau1 * c - stau1 * s, c1pa)
    let sig12 = tau12 - (b12 - b11)
    let ssig12 = sin(sig12)
    let csig12 = cos(sig12)
    let ssig2 = ssig1 * csig12 + csig1 * ssig12
    var csig2 = csig1 * csig12 - ssig1 * ssig12
    let sbet2 = calp0 * ssig2
    var cbet2 = Geo.length(salp0, calp0 * csig2)
    if cbet2 == 0 {
      cbet2 = Self.tiny
      csig2 = Self.tiny
    }
    let salp2 = salp0
    let calp2 = calp0 * csig2
    let somg2 = salp0 * ssig2
    let comg2 = csig2
    let omg12 = atan2(somg2 * comg1 - comg2 * somg1, comg2 * comg1 + somg2 * somg1)
    let lam12 = omg12 + a3c * (sig12 + (Series.sinSeries(ssig2, csig2, c3a) - b31))
    let lon12 = lam12 / Self.degree
    let lon2 = Geo.angNormalize(Geo.angNormalize(lon1) + Geo.angNormalize(lon12))
    let lat2 = Geo.atan2d(sbet2, f1 * cbet2)
    let azi2 = Geo.atan2d(salp2, calp2)
    return Direct(latitude: lat2, longitude: lon2, finalAzimuth: azi2)
  }
}

// MARK: - Inverse problem

extension Geodesic {
  /// The shortest geodesic between two points: its length and the azimuths at both ends.
  public func inverse(from p1: Coordinate, to p2: Coordinate) -> Inverse {
    inverse(latitude1: p1.latitude, longitude1: p1.longitude, latitude2: p2.latitude, longitude2: p2.longitude)
  }

  /// The geodesic distance in metres between two points.
  @inlinable public func distance(from p1: Coordinate, to p2: Coordinate) -> Double {
    inverse(from: p1, to: p2).distance
  }

  /// The inverse problem on raw degrees (latitudes must be in [-90, 90]; returns NaNs otherwise).
  public func inverse(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Inverse {
    var (lon12, lon12s) = Geo.angDiff(longitude1, longitude2)
    var lonsign: Double = lon12.sign == .minus ? -1 : 1
    lon12 *= lonsign
    lon12s *= lonsign
    let lam12 = lon12 * Self.degree
    let (slam12, clam12) = Geo.sincosde(lon12, lon12s)
    lon12s = (180 - lon12) - lon12s

    var lat1 = Geo.angRound(Geo.latFix(latitude1))
    var lat2 = Geo.angRound(Geo.latFix(latitude2))
    let swapp: Double = abs(lat1) < abs(lat2) || lat2.isNaN ? -1 : 1
    if swapp < 0 {
      lonsign *= -1
      swap(&lat1, &lat2)
    }
    let latsign: Double = lat1.sign == .minus ? 1 : -1
    lat1 *= latsign
    lat2 *= latsign

    let (sbet1, cbet1) = reducedLatitude(lat1)
    var (sbet2, cbet2) = reducedLatitude(lat2)

    if cbet1 < -sbet1 {
      if cbet2 == cbet1 { sbet2 = sbet2.sign == .minus ? -abs(sbet1) : abs(sbet1) }
    } else {
      if abs(sbet2) == -sbet1 { cbet2 = cbet1 }
    }

    let dn1 = (1 + ep2 * sbet1 * sbet1).squareRoot()
    let dn2 = (1 + ep2 * sbet2 * sbet2).squareRoot()

    var s12x = 0.0
    var sig12 = 0.0
    var salp1 = 0.0
    var calp1 = 0.0
    var salp2 = 0.0
    var calp2 = 0.0
    var meridian = lat1 == -90 || slam12 == 0

    if meridian {
      calp1 = clam12
      salp1 = slam12
      calp2 = 1
      salp2 = 0
      let ssig1 = sbet1
      let csig1 = calp1 * cbet1
      let ssig2 = sbet2
      let csig2 = calp2 * cbet2
      sig12 = atan2(max(0, csig1 * ssig2 - ssig1 * csig2) + 0, csig1 * csig2 + ssig1 * ssig2)
      let lengths = self.lengths(
        eps: n, sig12: sig12, ssig1: ssig1, csig1: csig1, dn1: dn1, ssig2: ssig2, csig2: csig2, dn2: dn2)
      s12x = lengths.s12b
      var m12x = lengths.m12b
      if sig12 < Self.tol2 || m12x >= 0 {
        if sig12 < 3 * Self.tiny || (sig12 < Self.tol0 && (s12x < 0 || m12x < 0)) {
          sig12 = 0
          m12x = 0
          s12x = 0
        }
        s12x *= b
      } else {
        meridian = false
      }
    }

    if !meridian && sbet1 == 0 && (flattening <= 0 || lon12s >= flattening * 180) {
      // Along the equator.
      calp1 = 0
      calp2 = 0
      salp1 = 1
      salp2 = 1
      s12x = equatorialRadius * lam12
      sig12 = lam12 / f1
    } else if !meridian {
      var dnm = 0.0
      sig12 = inverseStart(
        sbet1: sbet1, cbet1: cbet1, dn1: dn1, sbet2: sbet2, cbet2: cbet2, dn2: dn2,
        lam12: lam12, slam12: slam12, clam12: clam12,
        salp1: &salp1, calp1: &calp1, salp2: &salp2, calp2: &calp2, dnm: &dnm)
      if sig12 >= 0 {
        s12x = sig12 * b * dnm
      } else {
        var state = LambdaState()
        var numit = 0
        var salp1a = Self.tiny
        var calp1a = 1.0
        var salp1b = Self.tiny
        var calp1b = -1.0
        var tripn = false
        var tripb = false
        while true {
          let (v, dv) = lambda12(
            sbet1: sbet1, cbet1: cbet1, dn1: dn1, sbet2: sbet2, cbet2: cbet2, dn2: dn2,
            salp1: salp1, calp1: calp1, slam120: slam12, clam120: clam12,
            diffp: numit < Self.maxit1, state: &state)
          if tripb || !(abs(v) >= (tripn ? 8 : 1) * Self.tol0) || numit == Self.maxit2 { break }
          if v > 0 && (numit > Self.maxit1 || calp1 / salp1 > calp1b / salp1b) {
            salp1b = salp1
            calp1b = calp1
          } else if v < 0 && (numit > Self.maxit1 || calp1 / salp1 < calp1a / salp1a) {
            salp1a = salp1
            calp1a = calp1
          }
          numit += 1
          if numit - 1 < Self.maxit1 && dv > 0 {
            let dalp1 = -v / dv
            if abs(dalp1) < .pi {
              let sdalp1 = sin(dalp1)
              let cdalp1 = cos(dalp1)
              let nsalp1 = salp1 * cdalp1 + calp1 * sdalp1
              if nsalp1 > 0 {
                calp1 = calp1 * cdalp1 - salp1 * sdalp1
                salp1 = nsalp1
                Geo.norm(&salp1, &calp1)
                tripn = abs(v) <= 16 * Self.tol0
                continue
              }
            }
          }
          salp1 = (salp1a + salp1b) / 2
          calp1 = (calp1a + calp1b) / 2
          Geo.norm(&salp1, &calp1)
          tripn = false
          tripb =
            abs(salp1a - salp1) + (calp1a - calp1) < Self.tolb
            || abs(salp1 - salp1b) + (calp1 - calp1b) < Self.tolb
        }
        salp2 = state.salp2
        calp2 = state.calp2
        sig12 = state.sig12
        let lengths = self.lengths(
          eps: state.eps, sig12: state.sig12, ssig1: state.ssig1, csig1: state.csig1, dn1: dn1,
          ssig2: state.ssig2, csig2: state.csig2, dn2: dn2, reducedLength: false)
        s12x = lengths.s12b * b
      }
    }

    let s12 = 0 + s12x
    if swapp < 0 {
      swap(&salp1, &salp2)
      swap(&calp1, &calp2)
    }
    salp1 *= swapp * lonsign
    calp1 *= swapp * latsign
    salp2 *= swapp * lonsign
    calp2 *= swapp * latsign
    return Inverse(
      distance: s12, initialAzimuth: Geo.atan2d(salp1, calp1), finalAzimuth: Geo.atan2d(salp2, calp2),
      arcLength: sig12 / Self.degree)
  }

  /// Sine and cosine of the reduced latitude β (tan β = (1 − f) tan φ), with cos β ≥ tiny at the poles.
  @inline(__always)
  func reducedLatitude(_ latitude: Double) -> (sin: Double, cos: Double) {
    var (sbet, cbet) = Geo.sincosd(latitude)
    sbet *= f1
    Geo.norm(&sbet, &cbet)
    return (sbet, max(Self.tiny, cbet))
  }

  struct LambdaState {
    var salp2 = 0.0
    var calp2 = 0.0
    var sig12 = 0.0
    var ssig1 = 0.0
    var csig1 = 0.0
    var ssig2 = 0.0
    var csig2 = 0.0
    var eps = 0.0
  }

  /// Distance (`s12b`) and reduced length (`m12b`) over b, along the arc sig12 (Karney 2013, eqs. 7, 38).
  @inline(__always)
  func lengths(
    eps: Double, sig12: Double, ssig1: Double, csig1: Double, dn1: Double, ssig2: Double, csig2: Double,
    dn2: Double, reducedLength: Bool = true
  ) -> (s12b: Double, m12b: Double) {
    let a1 = Series.a1m1(eps)
    let c1a = Series.c1(eps)
    let b1 = Series.sinSeries(ssig2, csig2, c1a) - Series.sinSeries(ssig1, csig1, c1a)
    let s12b = (1 + a1) * (sig12 + b1)
    guard reducedLength else { return (s12b, 0) }
    let a2 = Series.a2m1(eps)
    let c2a = Series.c2(eps)
    let m0 = a1 - a2
    let b2 = Series.sinSeries(ssig2, csig2, c2a) - Series.sinSeries(ssig1, csig1, c2a)
    let j12 = m0 * sig12 + ((1 + a1) * b1 - (1 + a2) * b2)
    let m12b = dn2 * (csig1 * ssig2) - dn1 * (ssig1 * csig2) - csig1 * csig2 * j12
    return (s12b, m12b)
  }

  /// Only the reduced length's J12 term, for the Newton derivative.
  @inline(__always)
  func reducedLength(
    eps: Double, sig12: Double, ssig1: Double, csig1: Double, dn1: Double, ssig2: Double, csig2: Double,
    dn2: Double
  ) -> Double {
    let a1 = Series.a1m1(eps)
    let a2 = Series.a2m1(eps)
    let m0 = a1 - a2
    let c1a = Series.c1(eps)
    let c2a = Series.c2(eps)
    let cb = (1 + a1) * c1a - (1 + a2) * c2a
    let j12 = m0 * sig12 + (Series.sinSeries(ssig2, csig2, cb) - Series.sinSeries(ssig1, csig1, cb))
    return dn2 * (csig1 * ssig2) - dn1 * (ssig1 * csig2) - csig1 * csig2 * j12
  }

  @inline(__always)
  func a3f(_ eps: Double) -> Double {
    var y = a3x[0]
    for k in 1..<6 { y = y * eps + a3x[k] }
    return y
  }

  @inline(__always)
  func c3f(_ eps: Double) -> SIMD8<Double> {
    let x = c3x
    var c = SIMD8<Double>()
    var mult = eps
    c[1] = mult * ((((x[0] * eps + x[1]) * eps + x[2]) * eps + x[3]) * eps + x[4])
    mult *= eps
    c[2] = mult * (((x[5] * eps + x[6]) * eps + x[7]) * eps + x[8])
    mult *= eps
    c[3] = mult * ((x[9] * eps + x[10]) * eps + x[11])
    mult *= eps
    c[4] = mult * (x[12] * eps + x[13])
    mult *= eps
    c[5] = mult * x[14]
    return c
  }

  /// The solution of the astroid problem, Karney 2013 eq. 55: the positive root k of
  /// k⁴ + 2k³ − (x² + y² − 1)k² − 2y²k − y² = 0.
  static func astroid(_ x: Double, _ y: Double) -> Double {
    let p = x * x
    let q = y * y
    let r = (p + q - 1) / 6
    guard !(q == 0 && r <= 0) else { return 0 }
    let s = p * q / 4
    let r2 = r * r
    let r3 = r * r2
    let disc = s * (s + 2 * r3)
    var u = r
    if disc >= 0 {
      var t3 = s + r3
      t3 += t3 < 0 ? -disc.squareRoot() : disc.squareRoot()
      let t = cbrt(t3)
      u += t + (t != 0 ? r2 / t : 0)
    } else {
      let ang = atan2((-disc).squareRoot(), -(s + r3))
      u += 2 * r * cos(ang / 3)
    }
    let v = (u * u + q).squareRoot()
    let uv = u < 0 ? q / (v - u) : u + v
    let w = (uv - q) / (2 * v)
    return uv / ((uv + w * w).squareRoot() + w)
  }

  func inverseStart(
    sbet1: Double, cbet1: Double, dn1: Double, sbet2: Double, cbet2: Double, dn2: Double,
    lam12: Double, slam12: Double, clam12: Double,
    salp1: inout Double, calp1: inout Double, salp2: inout Double, calp2: inout Double, dnm: inout Double
  ) -> Double {
    var sig12 = -1.0
    let sbet12 = sbet2 * cbet1 - cbet2 * sbet1
    let cbet12 = cbet2 * cbet1 + sbet2 * sbet1
    let shortline = cbet12 >= 0 && sbet12 < 0.5 && cbet2 * lam12 < 0.5
    var somg12: Double
    var comg12: Double
    let sbet12a = sbet2 * cbet1 + cbet2 * sbet1
    if shortline {
      var sbetm2 = (sbet1 + sbet2) * (sbet1 + sbet2)
      sbetm2 /= sbetm2 + (cbet1 + cbet2) * (cbet1 + cbet2)
      dnm = (1 + ep2 * sbetm2).squareRoot()
      let omg12 = lam12 / (f1 * dnm)
      somg12 = sin(omg12)
      comg12 = cos(omg12)
    } else {
      somg12 = slam12
      comg12 = clam12
    }
    salp1 = cbet2 * somg12
    calp1 =
      comg12 >= 0
      ? sbet12 + cbet2 * sbet1 * somg12 * somg12 / (1 + comg12)
      : sbet12a - cbet2 * sbet1 * somg12 * somg12 / (1 - comg12)
    let ssig12 = Geo.length(salp1, calp1)
    let csig12 = sbet1 * sbet2 + cbet1 * cbet2 * comg12

    if shortline && ssig12 < etol2 {
      salp2 = cbet1 * somg12
      calp2 = sbet12 - cbet1 * sbet2 * (comg12 >= 0 ? somg12 * somg12 / (1 + comg12) : 1 - comg12)
      Geo.norm(&salp2, &calp2)
      sig12 = atan2(ssig12, csig12)
    } else if abs(n) > 0.1 || csig12 >= 0 || ssig12 >= 6 * abs(n) * .pi * cbet1 * cbet1 {
      // The zeroth-order spherical approximation is good enough.
    } else {
      // Nearly antipodal: solve the astroid problem (section 5).
      let lam12x = atan2(-slam12, -clam12)
      let x: Double
      let y: Double
      let lamscale: Double
      if flattening >= 0 {
        let k2 = sbet1 * sbet1 * ep2
        let eps = k2 / (2 * (1 + (1 + k2).squareRoot()) + k2)
        lamscale = flattening * cbet1 * a3f(eps) * .pi
        let betscale = lamscale * cbet1
        x = lam12x / lamscale
        y = sbet12a / betscale
      } else {
        let cbet12a = cbet2 * cbet1 - sbet2 * sbet1
        let bet12a = atan2(sbet12a, cbet12a)
        let lengths = self.lengths(
          eps: n, sig12: .pi + bet12a, ssig1: sbet1, csig1: -cbet1, dn1: dn1, ssig2: sbet2, csig2: cbet2,
          dn2: dn2)
        let m12b = lengths.m12b
        let m0 = Series.a1m1(n) - Series.a2m1(n)
        x = -1 + m12b / (cbet1 * cbet2 * m0 * .pi)
        let betscale = x < -0.01 ? sbet12a / x : -flattening * cbet1 * cbet1 * .pi
        lamscale = betscale / cbet1
        y = lam12x / lamscale
      }
      if y > -Self.tol1 && x > -1 - Self.xthresh {
        if flattening >= 0 {
          salp1 = min(1, -x)
          calp1 = -(1 - salp1 * salp1).squareRoot()
        } else {
          calp1 = max(x > -Self.tol1 ? 0 : -1, x)
          salp1 = (1 - calp1 * calp1).squareRoot()
        }
      } else {
        let k = Self.astroid(x, y)
        let omg12a = lamscale * (flattening >= 0 ? -x * k / (1 + k) : -y * (1 + k) / k)
        somg12 = sin(omg12a)
        comg12 = -cos(omg12a)
        salp1 = cbet2 * somg12
        calp1 = sbet12a - cbet2 * sbet1 * somg12 * somg12 / (1 - comg12)
      }
    }
    if !(salp1 <= 0) {
      Geo.norm(&salp1, &calp1)
    } else {
      salp1 = 1
      calp1 = 0
    }
    return sig12
  }

  /// λ12(α1) − λ12 and its derivative (Karney 2013, eqs. 5, 7, 46), filling `state` with the arc.
  @inline(__always)
  func lambda12(
    sbet1: Double, cbet1: Double, dn1: Double, sbet2: Double, cbet2: Double, dn2: Double,
    salp1: Double, calp1 calp1In: Double, slam120: Double, clam120: Double, diffp: Bool,
    state: inout LambdaState
  ) -> (Double, Double) {
    let calp1 = sbet1 == 0 && calp1In == 0 ? -Self.tiny : calp1In
    let salp0 = salp1 * cbet1
    let calp0 = Geo.length(calp1, salp1 * sbet1)
    var ssig1 = sbet1
    let somg1 = salp0 * sbet1
    var csig1 = calp1 * cbet1
    let comg1 = csig1
    Geo.norm(&ssig1, &csig1)
    let salp2 = cbet2 != cbet1 ? salp0 / cbet2 : salp1
    let calp2 =
      cbet2 != cbet1 || abs(sbet2) != -sbet1
      ? ((calp1 * cbet1) * (calp1 * cbet1)
        + (cbet1 < -sbet1 ? (cbet2 - cbet1) * (cbet1 + cbet2) : (sbet1 - sbet2) * (sbet1 + sbet2))).squareRoot()
        / cbet2
      : abs(calp1)
    var ssig2 = sbet2
    let somg2 = salp0 * sbet2
    var csig2 = calp2 * cbet2
    let comg2 = csig2
    Geo.norm(&ssig2, &csig2)
    let sig12 = atan2(max(0, csig1 * ssig2 - ssig1 * csig2) + 0, csig1 * csig2 + ssig1 * ssig2)
    let somg12 = max(0, comg1 * somg2 - somg1 * comg2) + 0
    let comg12 = comg1 * comg2 + somg1 * somg2
    let eta = atan2(somg12 * clam120 - comg12 * slam120, comg12 * clam120 + somg12 * slam120)
    let k2 = calp0 * calp0 * ep2
    let eps = k2 / (2 * (1 + (1 + k2).squareRoot()) + k2)
    let c3a = c3f(eps)
    let b312 = Series.sinSeries(ssig2, csig2, c3a) - Series.sinSeries(ssig1, csig1, c3a)
    let domg12 = -flattening * a3f(eps) * salp0 * (sig12 + b312)
    let lam12 = eta + domg12
    var dlam12 = 0.0
    if diffp {
      if calp2 == 0 {
        dlam12 = -2 * f1 * dn1 / sbet1
      } else {
        dlam12 =
          reducedLength(
            eps: eps, sig12: sig12, ssig1: ssig1, csig1: csig1, dn1: dn1, ssig2: ssig2, csig2: csig2, dn2: dn2)
          * f1 / (calp2 * cbet2)
      }
    }
    state = LambdaState(
      salp2: salp2, calp2: calp2, sig12: sig12, ssig1: ssig1, csig1: csig1, ssig2: ssig2, csig2: csig2, eps: eps)
    return (lam12, dlam12)
  }
}

/// The series of Karney 2013 (eqs. 15, 17, 18, 20, 42, 43), to order 6 in eps.
@usableFromInline enum Series {
  @inline(__always) static func a1m1(_ eps: Double) -> Double {
    let e2 = eps * eps
    let t = ((e2 + 4) * e2 + 64) * e2 / 256
    return (t + eps) / (1 - eps)
  }

  @inline(__always) static func a2m1(_ eps: Double) -> Double {
    let e2 = eps * eps
    let t = ((-11 * e2 - 28) * e2 - 192) * e2 / 256
    return (t - eps) / (1 + eps)
  }

  /// C1[l], l = 1...6, at index l.
  @inline(__always) static func c1(_ eps: Double) -> SIMD8<Double> {
    let e2 = eps * eps
    var d = eps
    var c = SIMD8<Double>()
    c[1] = d * ((6 - e2) * e2 - 16) / 32
    d *= eps
    c[2] = d * ((64 - 9 * e2) * e2 - 128) / 2048
    d *= eps
    c[3] = d * (9 * e2 - 16) / 768
    d *= eps
    c[4] = d * (3 * e2 - 5) / 512
    d *= eps
    c[5] = d * -7 / 1280
    d *= eps
    c[6] = d * -7 / 2048
    return c
  }

  /// C1'[l], l = 1...6: the reversion of C1.
  @inline(__always) static func c1p(_ eps: Double) -> SIMD8<Double> {
    let e2 = eps * eps
    var d = eps
    var c = SIMD8<Double>()
    c[1] = d * ((205 * e2 - 432) * e2 + 768) / 1536
    d *= eps
    c[2] = d * ((4005 * e2 - 4736) * e2 + 3840) / 12288
    d *= eps
    c[3] = d * (116 - 225 * e2) / 384
    d *= eps
    c[4] = d * (2695 - 7173 * e2) / 7680
    d *= eps
    c[5] = d * 3467 / 7680
    d *= eps
    c[6] = d * 38081 / 61440
    return c
  }

  /// C2[l], l = 1...6.
  @inline(__always) static func c2(_ eps: Double) -> SIMD8<Double> {
    let e2 = eps * eps
    var d = eps
    var c = SIMD8<Double>()
    c[1] = d * ((e2 + 2) * e2 + 16) / 32
    d *= eps
    c[2] = d * ((35 * e2 + 64) * e2 + 384) / 2048
    d *= eps
    c[3] = d * (15 * e2 + 80) / 768
    d *= eps
    c[4] = d * (7 * e2 + 35) / 512
    d *= eps
    c[5] = d * 63 / 1280
    d *= eps
    c[6] = d * 77 / 2048
    return c
  }

  /// Σ c[l] sin(2lσ) for l = 1...6 by Clenshaw summation, given sin σ and cos σ (unused terms are zero).
  @inline(__always) static func sinSeries(_ sinx: Double, _ cosx: Double, _ c: SIMD8<Double>) -> Double {
    let ar = 2 * (cosx - sinx) * (cosx + sinx)
    var y0 = 0.0
    var y1 = 0.0
    y1 = ar * y0 - y1 + c[6]
    y0 = ar * y1 - y0 + c[5]
    y1 = ar * y0 - y1 + c[4]
    y0 = ar * y1 - y0 + c[3]
    y1 = ar * y0 - y1 + c[2]
    y0 = ar * y1 - y0 + c[1]
    return 2 * sinx * cosx * y0
  }
}

// geokit-bench: prints `<name> <value> ns/op` per benchmark (best of several rounds), then a checksum that keeps
// the optimizer from discarding the work. Run with `swift run -c release --package-path Packages/GeoKit geokit-bench`.
import CGeohash
import GeoKit

/// Inputs are random (the figures don't depend on the seed); the generator is the standard library's.
func uniform(_ low: Double, _ high: Double) -> Double { Double.random(in: low..<high) }

let count = 4096
let points = (0..<count).map { _ in
  Coordinate(uncheckedLatitude: uniform(-85, 85), longitude: uniform(-180, 180))
}
let nearby = points.map { point in
  Coordinate(
    uncheckedLatitude: min(89, point.latitude + uniform(-0.1, 0.1)),
    longitude: Coordinate.normalizedLongitude(point.longitude + uniform(-0.1, 0.1)))
}
let hashes = points.map { (try? Geohash.encode($0, precision: 12)) ?? "s" }
let azimuths = (0..<count).map { _ in uniform(-180, 180) }
let distances = (0..<count).map { _ in uniform(0, 20_000_000) }
let track = (0..<1000).map { index in
  Coordinate(uncheckedLatitude: 48.85 + Double(index) * 1e-4, longitude: 2.35 + Double(index % 37) * 1e-4)
}
var checksum: UInt64 = 0

/// Times `body` over `operations` operations, `rounds` times, and prints the best per-operation time (the best of
/// many short rounds filters out the noise of a shared machine).
@discardableResult
@MainActor func measure(_ name: String, operations: Int, rounds: Int = 30, _ body: () -> UInt64) -> Double {
  var best = Double.infinity
  for _ in 0..<rounds {
    let start = ContinuousClock.now
    checksum &+= body()
    let elapsed = ContinuousClock.now - start
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    best = min(best, nanoseconds / Double(operations))
  }
  print("\(name) \(rounded(best)) ns/op")
  return best
}

func rounded(_ value: Double) -> Double { (value * 100).rounded() / 100 }

/// Sinks for encoded geohashes. Encoding is inlined into the loops, so without a call the optimizer would spell only
/// the characters a loop reads (or none, since a 12-character string's length is known).
@inline(never) func consume(_ hash: String) -> UInt64 { UInt64(hash.utf8.count) }
@inline(never) func consume(_ text: GeohashText) -> UInt64 { text.withUTF8 { UInt64($0[0] ^ $0[$0.count - 1]) } }

let repeats = 16
let int = measure("geohash.encode.int", operations: count * repeats) {
  var sum: UInt64 = 0
  for _ in 0..<repeats {
    for point in points { sum &+= (try? GeohashCell(point, bits: 64))?.value ?? 0 }
  }
  return sum
}
let string = measure("geohash.encode.string", operations: count * repeats) {
  var sum: UInt64 = 0
  for _ in 0..<repeats {
    for point in points {
      guard let hash = try? Geohash.encode(point, precision: 12) else { continue }
      sum &+= consume(hash)
    }
  }
  return sum
}
let text = measure("geohash.encode.text", operations: count * repeats) {
  var sum: UInt64 = 0
  for _ in 0..<repeats {
    for point in points {
      guard let text = try? Geohash.encodeText(point, precision: 12) else { continue }
      sum &+= consume(text)
    }
  }
  return sum
}
// The same encoders in plain C (Sources/CGeohash), measured in this run: the yardstick of the three above.
let cInt = measure("c.geohash.encode.int", operations: count * repeats) {
  var sum: UInt64 = 0
  for _ in 0..<repeats {
    for point in points { sum &+= cgeohash_encode_uint64(point.latitude, point.longitude) }
  }
  return sum
}
let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: 16)
let cString = measure("c.geohash.encode.string", operations: count * repeats) {
  var sum: UInt64 = 0
  for _ in 0..<repeats {
    for point in points {
      cgeohash_encode(point.latitude, point.longitude, 12, buffer)
      sum &+= UInt64(UInt8(bitPattern: buffer[0] ^ buffer[11]))
    }
  }
  return sum
}
buffer.deallocate()
print("geohash.encode.int_over_c \(rounded(int / cInt)) x")
print("geohash.encode.string_over_c \(rounded(string / cString)) x")
print("geohash.encode.text_over_c \(rounded(text / cString)) x")
measure("geohash.decode", operations: count * 16) {
  var sum: UInt64 = 0
  for _ in 0..<16 {
    for hash in hashes { sum &+= (try? Geohash.decode(hash))?.center.latitude.bitPattern ?? 0 }
  }
  return sum
}
measure("geohash.neighbors", operations: count * 8) {
  var sum: UInt64 = 0
  for _ in 0..<8 {
    for point in points {
      guard let cell = try? GeohashCell(point, bits: 30) else { continue }
      for direction in GeohashDirection.allCases { sum &+= cell.neighbor(direction)?.value ?? 0 }
    }
  }
  return sum
}
measure("geohash.cover.1km", operations: 512) {
  var sum: UInt64 = 0
  for point in points.prefix(512) {
    guard let covering = try? GeohashCovering(center: point, radius: 1_000, maxCells: 16) else { continue }
    sum &+= UInt64(covering.ranges(keyBits: 62).count)
  }
  return sum
}
measure("haversine", operations: count * 16) {
  var sum = 0.0
  for _ in 0..<16 {
    for index in 0..<count { sum += points[index].haversineDistance(to: nearby[count - 1 - index]) }
  }
  return sum.bitPattern
}
let preparedPoints = points.map(HaversinePoint.init)
let preparedNearby = nearby.map(HaversinePoint.init)
measure("haversine.prepared", operations: count * 16) {
  var sum = 0.0
  for _ in 0..<16 {
    for index in 0..<count { sum += preparedPoints[index].distance(to: preparedNearby[count - 1 - index]) }
  }
  return sum.bitPattern
}
// Pairs within about 15 km, as a fix and the fences near it: the arcsine's series instead of the library's `asin`.
measure("haversine.prepared.near", operations: count * 16) {
  var sum = 0.0
  for _ in 0..<16 {
    for index in 0..<count { sum += preparedPoints[index].distance(to: preparedNearby[index]) }
  }
  return sum.bitPattern
}
measure("cheapruler.distance", operations: count * 16) {
  var sum = 0.0
  let ruler = CheapRuler(latitude: 45)
  for _ in 0..<16 {
    for index in 0..<count { sum += ruler.distance(points[index], nearby[index]) }
  }
  return sum.bitPattern
}
measure("geodesic.inverse", operations: count, rounds: 60) {
  var sum = 0.0
  for _ in 0..<1 {
    for index in 0..<count {
      sum += Geodesic.wgs84.inverse(from: points[index], to: points[count - 1 - index]).distance
    }
  }
  return sum.bitPattern
}
measure("geodesic.direct", operations: count * 2, rounds: 60) {
  var sum = 0.0
  for _ in 0..<2 {
    for index in 0..<count {
      sum += Geodesic.wgs84.direct(from: points[index], azimuth: azimuths[index], distance: distances[index]).latitude
    }
  }
  return sum.bitPattern
}
measure("polyline.encode.1k", operations: 256) {
  var sum: UInt64 = 0
  for _ in 0..<256 { sum &+= UInt64(Polyline.encode(track).utf8.count) }
  return sum
}
measure("polyline.decode.1k", operations: 256) {
  let text = Polyline.encode(track)
  var sum: UInt64 = 0
  for _ in 0..<256 { sum &+= UInt64((try? Polyline.decode(text))?.count ?? 0) }
  return sum
}
measure("track.simplify.1k", operations: 16) {
  var sum: UInt64 = 0
  for _ in 0..<16 { sum &+= UInt64(Track.simplify(track, tolerance: 5).count) }
  return sum
}
print("checksum \(checksum)")

import Foundation
import MeridianStore

/// The gazetteer phase of `meridian-server-bench`, in memory (no store): `BENCH_GAZETTEER_PLACES` populated places
/// (150,000 by default, a `cities500` dump's size) at random points of the sphere in a ``GazetteerIndex``, then
/// 100,000 reverse lookups (the nearest place) at random points:
/// - `geo.reverse.index_build_ms`: building the k-d tree;
/// - `geo.reverse.ns_per_lookup`: the mean time of one lookup.
func gazetteerFigures() {
  let count = Int(ProcessInfo.processInfo.environment["BENCH_GAZETTEER_PLACES"] ?? "") ?? 150_000
  var random = SystemRandomNumberGenerator()
  func point() -> (Double, Double) {
    (asin(Double.random(in: -1...1, using: &random)) * 180 / .pi, Double.random(in: -180..<180, using: &random))
  }
  let places = (0..<count).map { index in
    let (latitude, longitude) = point()
    return GazetteerLocality(
      geonameID: Int64(index), name: "place \(index)", country: "XX", latitude: latitude, longitude: longitude)
  }
  let buildStart = ContinuousClock.now
  let index = GazetteerIndex(places)
  emit("geo.reverse.index_build_ms", seconds(ContinuousClock.now - buildStart) * 1000, "ms")
  let queries = (0..<100_000).map { _ in point() }
  var checksum: Int64 = 0
  let start = ContinuousClock.now
  for (latitude, longitude) in queries {
    checksum &+= index.nearest(latitude: latitude, longitude: longitude).first?.locality.geonameID ?? 0
  }
  emit("geo.reverse.ns_per_lookup", seconds(ContinuousClock.now - start) / Double(queries.count) * 1e9, "ns")
  if checksum == -1 { print("") }  // keeps the lookups from being optimized away
}

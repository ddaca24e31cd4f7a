import Foundation
import GeoKit

/// Offline reverse geocoding over the gazetteer's populated places, in memory: GeoKit's ``NearestPointIndex`` (a
/// k-d tree on the unit sphere) over the towns, so the nearest town by great-circle distance is found in O(log n)
/// with no seam at the antimeridian or the poles.
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

  /// The towns, by GeoNames id (so equally distant towns come by id).
  private let places: [GazetteerLocality]
  private let points: NearestPointIndex

  /// An index of the towns of `localities` (``GazetteerLocality/isTown``: city districts are not towns).
  public init(_ localities: [GazetteerLocality]) {
    places = localities.filter(\.isTown).sorted { $0.geonameID < $1.geonameID }
    points = NearestPointIndex(places.map { Coordinate(uncheckedLatitude: $0.latitude, longitude: $0.longitude) })
  }

  /// How many places the index holds.
  public var count: Int { places.count }

  /// The `k` places nearest to the coordinate, nearest first (ties by GeoNames id).
  public func nearest(latitude: Double, longitude: Double, k: Int = 1) -> [Match] {
    points.nearest(to: Coordinate(uncheckedLatitude: latitude, longitude: longitude), k: k).map {
      Match(locality: places[$0.index], distance: $0.distance)
    }
  }

  /// The `k` nearest places found by measuring every place (haversine): the brute-force scan the index must agree
  /// with (tests).
  public func scan(latitude: Double, longitude: Double, k: Int = 1) -> [Match] {
    points.scan(to: Coordinate(uncheckedLatitude: latitude, longitude: longitude), k: k).map {
      Match(locality: places[$0.index], distance: $0.distance)
    }
  }
}

import ArgumentParser
import Foundation

extension SimulatedRoute.Mode: ExpressibleByArgument {}

/// The `run` sources that are not files: a simulated trip and gpsd.
struct LiveSourceOptions: ParsableArguments {
  @Option(help: "Simulate a walk (5 km/h) or a drive (50 km/h) along --route, one fix a second.")
  var simulate: SimulatedRoute.Mode?
  @Option(help: "The simulated route, 'lat,lon;lat,lon;…' (default: a 3.6 km loop in central Kyiv).")
  var route: String?
  @Option(help: "The simulated speed in km/h (default: 5 walking, 50 driving).") var speedKmh: Double?
  @Option(help: "Read a GPS through gpsd at HOST:PORT (port 2947 when left out); reconnects when dropped.")
  var gpsd: String?

  /// How many of these sources are given (0 or 1 is valid alongside the file sources' count).
  var count: Int { [simulate != nil, gpsd != nil].filter { $0 }.count }

  func validate() throws {
    if simulate == nil, route != nil || speedKmh != nil {
      throw ValidationError("--route and --speed-kmh go with --simulate walk|drive")
    }
    do {
      _ = try gpsd.map(GPSDEndpoint.init(parsing:))
      _ = try simulatedRoute()
    } catch let error as TrackerError {
      throw ValidationError(error.description)
    }
  }

  func simulatedRoute() throws -> SimulatedRoute? {
    guard let simulate else { return nil }
    let kmh = speedKmh ?? simulate.defaultSpeedKmh
    guard kmh > 0, kmh.isFinite else { throw TrackerError.badArgument("--speed-kmh must be a positive number") }
    return try SimulatedRoute(
      waypoints: route.map(SimulatedRoute.waypoints(parsing:)) ?? SimulatedRoute.defaultWaypoints, speed: kmh / 3.6)
  }
}

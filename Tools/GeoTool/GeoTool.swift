import Foundation
import GeoKit

/// One of meridian-geo's line-oriented jobs. Each reads one job per line and prints one result per line, in the
/// formats of GeographicLib's `GeodSolve` so the two can be compared line by line.
public enum GeoCommand: String, Sendable, CaseIterable {
  /// `lat1 lon1 lat2 lon2` → `azi1 azi2 s12`, like `GeodSolve -i`.
  case inverse
  /// `lat1 lon1 azi1 s12` → `lat2 lon2 azi2`, like `GeodSolve`.
  case direct
  /// `lat1 lon1 lat2 lon2` → metres on the mean-radius sphere.
  case haversine
  /// `lat lon precision` → geohash.
  case geohashEncode = "geohash encode"
  /// `hash` → `lat lon lat_err lon_err` (the cell's centre and half-size).
  case geohashDecode = "geohash decode"
  /// `hash` → `n ne e se s sw w nw`, `-` where there is no neighbour (past a pole).
  case geohashNeighbors = "geohash neighbors"
}

/// Why an input line was rejected.
public struct GeoToolError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What was wrong with the line.
  public var message: String

  /// An error with `message`.
  public init(_ message: String) { self.message = message }

  /// The message.
  public var description: String { message }
}

/// Turns input lines into result lines for one ``GeoCommand``.
public struct GeoLineProcessor: Sendable {
  /// The job.
  public var command: GeoCommand
  /// Like GeodSolve's `-p`: decimals of metres; angles get 5 more. `nil` prints the shortest round-trip form.
  public var precision: Int?

  /// A processor for `command` with an optional output precision.
  public init(command: GeoCommand, precision: Int? = nil) {
    self.command = command
    self.precision = precision
  }

  /// The result line for one input line.
  /// - Throws: ``GeoToolError`` describing what is wrong with the line.
  public func process(_ line: some StringProtocol) throws(GeoToolError) -> String {
    let fields = String(line).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," || $0 == "\r" })
    switch command {
    case .inverse:
      let (p1, p2) = try twoPoints(fields)
      let result = Geodesic.wgs84.inverse(from: p1, to: p2)
      return [angle(result.initialAzimuth), angle(result.finalAzimuth), metres(result.distance)].joined(separator: " ")
    case .direct:
      let values = try numbers(fields, count: 4, names: "lat1 lon1 azi1 s12")
      let start = try coordinate(values[0], values[1])
      let result = Geodesic.wgs84.direct(from: start, azimuth: values[2], distance: values[3])
      return [angle(result.latitude), angle(result.longitude), angle(result.finalAzimuth)].joined(separator: " ")
    case .haversine:
      let (p1, p2) = try twoPoints(fields)
      return metres(p1.haversineDistance(to: p2))
    case .geohashEncode:
      guard fields.count == 3, let length = Int(fields[2]) else {
        throw GeoToolError("expected 'lat lon precision' (precision an integer 1...12)")
      }
      let values = try numbers(fields.prefix(2), count: 2, names: "lat lon")
      let point = try coordinate(values[0], values[1])
      do {
        return try Geohash.encode(point, precision: length)
      } catch {
        throw GeoToolError(error.description)
      }
    case .geohashDecode:
      let cell = try cell(fields)
      let center = cell.center
      return [angle(center.latitude), angle(center.longitude), angle(cell.latitudeError), angle(cell.longitudeError)]
        .joined(separator: " ")
    case .geohashNeighbors:
      let neighbors = try cell(fields).neighbors
      return neighbors.all.map { $0?.string ?? "-" }.joined(separator: " ")
    }
  }

  /// Processes every line of `input`, writing results to `output` and errors (with their 1-based line number) to
  /// `errors`. Returns the number of lines that failed.
  public func run(
    input: some Sequence<some StringProtocol>, output: (String) -> Void, errors: (String) -> Void
  ) -> Int {
    var failures = 0
    for (index, line) in input.enumerated() {
      do {
        output(try process(line))
      } catch {
        failures += 1
        errors("meridian-geo \(command.rawValue): line \(index + 1): \(error.message): \(line)")
      }
    }
    return failures
  }

  // MARK: Parsing

  func numbers(_ fields: some Collection<Substring>, count: Int, names: String) throws(GeoToolError) -> [Double] {
    guard fields.count == count else { throw GeoToolError("expected \(count) numbers '\(names)', got \(fields.count)") }
    var values: [Double] = []
    for field in fields {
      guard let value = Double(field), value.isFinite else { throw GeoToolError("'\(field)' is not a finite number") }
      values.append(value)
    }
    return values
  }

  func coordinate(_ latitude: Double, _ longitude: Double) throws(GeoToolError) -> Coordinate {
    do {
      // GeodSolve takes any longitude (its test set has up to 180 plus a step past it): wrapped here, as it does.
      return try Coordinate(latitude: latitude, longitude: Coordinate.normalizedLongitude(longitude))
    } catch {
      throw GeoToolError(error.description)
    }
  }

  func twoPoints(_ fields: [Substring]) throws(GeoToolError) -> (Coordinate, Coordinate) {
    let values = try numbers(fields, count: 4, names: "lat1 lon1 lat2 lon2")
    return (try coordinate(values[0], values[1]), try coordinate(values[2], values[3]))
  }

  func cell(_ fields: [Substring]) throws(GeoToolError) -> GeohashCell {
    guard fields.count == 1 else { throw GeoToolError("expected one geohash, got \(fields.count) fields") }
    do {
      return try GeohashCell(fields[0])
    } catch {
      throw GeoToolError(error.description)
    }
  }

  // MARK: Formatting

  func angle(_ value: Double) -> String { format(value, decimals: precision.map { $0 + 5 }) }

  func metres(_ value: Double) -> String { format(value, decimals: precision) }

  func format(_ value: Double, decimals: Int?) -> String {
    let value = value == 0 ? 0 : value  // no "-0"
    guard let decimals else { return "\(value)" }
    return String(format: "%.\(max(0, min(decimals, 20)))f", value)
  }
}

/// Writes `line` and a newline to the standard error stream.
public func writeToStandardError(_ line: String) {
  FileHandle.standardError.write(Data((line + "\n").utf8))
}

import ArgumentParser
import GeoTool

/// Options shared by every job.
struct Common: ParsableArguments {
  @Option(name: .short, help: "Output precision like GeodSolve -p: decimals of metres (angles get 5 more).")
  var p: Int?

  func run(_ command: GeoCommand) throws {
    let processor = GeoLineProcessor(command: command, precision: p)
    let lines = sequence(state: ()) { _ in readLine(strippingNewline: true) }
    let failures = processor.run(input: lines, output: { print($0) }, errors: writeToStandardError)
    if failures > 0 { throw ExitCode.failure }
  }
}

@main
struct MeridianGeo: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "meridian-geo",
    abstract: "Line-oriented geodesy and geohash jobs on stdin, in GeographicLib GeodSolve's formats.",
    subcommands: [Inverse.self, Direct.self, Haversine.self, GeohashGroup.self])
}

struct Inverse: ParsableCommand {
  static let configuration = CommandConfiguration(abstract: "lat1 lon1 lat2 lon2 → azi1 azi2 s12 (GeodSolve -i)")
  @OptionGroup var common: Common
  func run() throws { try common.run(.inverse) }
}

struct Direct: ParsableCommand {
  static let configuration = CommandConfiguration(abstract: "lat1 lon1 azi1 s12 → lat2 lon2 azi2 (GeodSolve)")
  @OptionGroup var common: Common
  func run() throws { try common.run(.direct) }
}

struct Haversine: ParsableCommand {
  static let configuration = CommandConfiguration(abstract: "lat1 lon1 lat2 lon2 → metres (mean-radius sphere)")
  @OptionGroup var common: Common
  func run() throws { try common.run(.haversine) }
}

struct GeohashGroup: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "geohash", abstract: "Geohash jobs.", subcommands: [Encode.self, Decode.self, Neighbors.self])

  struct Encode: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "lat lon precision → hash")
    @OptionGroup var common: Common
    func run() throws { try common.run(.geohashEncode) }
  }

  struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "hash → lat lon lat_err lon_err")
    @OptionGroup var common: Common
    func run() throws { try common.run(.geohashDecode) }
  }

  struct Neighbors: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "hash → n ne e se s sw w nw ('-' past a pole)")
    @OptionGroup var common: Common
    func run() throws { try common.run(.geohashNeighbors) }
  }
}

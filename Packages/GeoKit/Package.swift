// swift-tools-version: 6.1
import PackageDescription

let package = Package(
  name: "GeoKit",
  platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
  products: [
    .library(name: "GeoKit", targets: ["GeoKit"]),
    .executable(name: "geokit-bench", targets: ["geokit-bench"]),
  ],
  targets: [
    .target(name: "GeoKit"),
    // A plain C encoder that the benchmark measures GeoKit against; not part of the library.
    .target(name: "CGeohash", path: "Sources/CGeohash"),
    .executableTarget(name: "geokit-bench", dependencies: ["GeoKit", "CGeohash"]),
    .testTarget(name: "GeoKitTests", dependencies: ["GeoKit"], resources: [.copy("Fixtures")]),
  ],
  swiftLanguageModes: [.v6]
)

// swift-tools-version: 6.1
// The root package: the apps, the integration tests and the developer tools, built from the kits in Packages/.
import PackageDescription

let package = Package(
  name: "Meridian",
  platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
  products: [
    .executable(name: "meridian-geo", targets: ["meridian-geo"])
  ],
  dependencies: [
    .package(path: "Packages/GeoKit"),
    .package(path: "Packages/PersistenceKit"),
    .package(path: "Packages/NetworkingKit"),
    .package(path: "Packages/DomainKit"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
  ],
  targets: [
    // Tools
    .target(
      name: "GeoTool",
      dependencies: [.product(name: "GeoKit", package: "GeoKit")],
      path: "Tools/GeoTool"),
    .executableTarget(
      name: "meridian-geo",
      dependencies: ["GeoTool", .product(name: "ArgumentParser", package: "swift-argument-parser")],
      path: "Tools/meridian-geo"),
    .testTarget(
      name: "GeoToolTests",
      dependencies: ["GeoTool"],
      path: "Tests/GeoToolTests"),
  ],
  swiftLanguageModes: [.v6]
)

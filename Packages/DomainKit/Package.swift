// swift-tools-version: 6.1
import PackageDescription

let package = Package(
  name: "DomainKit",
  platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
  products: [
    .library(name: "DomainKit", targets: ["DomainKit"]),
    .library(name: "DomainKitTesting", targets: ["DomainKitTesting"]),
    .executable(name: "domainkit-bench", targets: ["domainkit-bench"]),
  ],
  dependencies: [
    .package(path: "../GeoKit")
  ],
  targets: [
    .systemLibrary(
      name: "CLibXML2", path: "Sources/CLibXML2", pkgConfig: "libxml-2.0",
      providers: [.apt(["libxml2-dev"]), .yum(["libxml2-devel"]), .brew(["libxml2"])]),
    .target(name: "DomainKit", dependencies: ["CLibXML2", .product(name: "GeoKit", package: "GeoKit")]),
    .target(
      name: "DomainKitTesting",
      dependencies: ["DomainKit", .product(name: "GeoKit", package: "GeoKit")]),
    .executableTarget(name: "domainkit-bench", dependencies: ["DomainKit", "DomainKitTesting"]),
    .testTarget(
      name: "DomainKitTests", dependencies: ["DomainKit", "DomainKitTesting"], resources: [.copy("Fixtures")]),
  ],
  swiftLanguageModes: [.v6]
)

// swift-tools-version: 6.1
// The libFuzzer harnesses of the decoders that read bytes from outside. Built only with `-sanitize=fuzzer` (see
// `run` and README.md); it depends on the kits by path and adds nothing to them.
import PackageDescription

let package = Package(
  name: "MeridianFuzz",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(path: "../../Packages/DomainKit"),
    .package(path: "../../Packages/GeoKit"),
    .package(path: "../../Packages/RealtimeKit"),
  ],
  targets: [
    .executableTarget(
      name: "meridian-fuzz",
      dependencies: [
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "RealtimeKit", package: "RealtimeKit"),
      ],
      swiftSettings: [.unsafeFlags(["-parse-as-library"])]
    )
  ],
  swiftLanguageModes: [.v6]
)

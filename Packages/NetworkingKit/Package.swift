// swift-tools-version: 6.1
import PackageDescription

let package = Package(
  name: "NetworkingKit",
  // Mutex (Synchronization) needs these.
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "NetworkingKit", targets: ["NetworkingKit"]),
    .library(name: "NetworkingKitAsyncHTTPClient", targets: ["NetworkingKitAsyncHTTPClient"]),
    .library(name: "NetworkingKitTesting", targets: ["NetworkingKitTesting"]),
    .executable(name: "networkingkit-bench", targets: ["networkingkit-bench"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
  ],
  targets: [
    .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"]), .yum(["zlib-devel"])]),
    .target(
      name: "NetworkingKit",
      dependencies: [
        "CZlib",
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    .target(
      name: "NetworkingKitAsyncHTTPClient",
      dependencies: [
        "NetworkingKit",
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOFoundationCompat", package: "swift-nio"),
      ]
    ),
    .target(
      name: "NetworkingKitTesting",
      dependencies: ["NetworkingKit", .product(name: "HTTPTypes", package: "swift-http-types")]
    ),
    .target(
      name: "NetworkingKitTestSupport",
      dependencies: [
        "NetworkingKit", "CZlib",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
      ]
    ),
    .executableTarget(
      name: "networkingkit-bench",
      dependencies: [
        "NetworkingKit", "NetworkingKitAsyncHTTPClient", "NetworkingKitTestSupport",
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "NIOCore", package: "swift-nio"),
      ]
    ),
    .executableTarget(name: "networkingkit-example", dependencies: ["NetworkingKit", "NetworkingKitAsyncHTTPClient"]),
    .testTarget(
      name: "NetworkingKitTests",
      dependencies: [
        "NetworkingKit", "NetworkingKitTesting", "NetworkingKitTestSupport",
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    .testTarget(
      name: "NetworkingKitIntegrationTests",
      dependencies: [
        "NetworkingKit", "NetworkingKitTesting", "NetworkingKitAsyncHTTPClient", "NetworkingKitTestSupport",
        .product(name: "HTTPTypes", package: "swift-http-types"),
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)

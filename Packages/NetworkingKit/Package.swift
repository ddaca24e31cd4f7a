// swift-tools-version: 6.1
import PackageDescription

// `MERIDIAN_KIT_CORE_ONLY=1` (set by the monorepo's Tools/test-all) leaves out every target that needs SwiftNIO: the
// AsyncHTTPClient transport, the misbehaving test server, the benchmark, the example and the integration tests. The
// monorepo's root package runs Tests/NetworkingKitIntegrationTests itself, with the NIO it builds anyway, so NIO is
// compiled once. Without the variable, `swift test --package-path Packages/NetworkingKit` builds and runs everything.
let coreOnly = Context.environment["MERIDIAN_KIT_CORE_ONLY"] == "1"

let core: [Target] = [
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
    name: "NetworkingKitTesting",
    dependencies: ["NetworkingKit", .product(name: "HTTPTypes", package: "swift-http-types")]
  ),
  .target(name: "NetworkingKitTestSupport", dependencies: ["NetworkingKit", "CZlib"]),
  .testTarget(
    name: "NetworkingKitTests",
    dependencies: [
      "NetworkingKit", "NetworkingKitTesting", "NetworkingKitTestSupport",
      .product(name: "HTTPTypes", package: "swift-http-types"),
      .product(name: "Logging", package: "swift-log"),
    ]
  ),
]

let withNIO: [Target] = [
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
    name: "NetworkingKitTestServer",
    dependencies: [
      .product(name: "NIOCore", package: "swift-nio"),
      .product(name: "NIOPosix", package: "swift-nio"),
      .product(name: "NIOHTTP1", package: "swift-nio"),
    ]
  ),
  .executableTarget(
    name: "networkingkit-bench",
    dependencies: [
      "NetworkingKit", "NetworkingKitAsyncHTTPClient", "NetworkingKitTestSupport", "NetworkingKitTestServer",
      .product(name: "AsyncHTTPClient", package: "async-http-client"),
      .product(name: "HTTPTypes", package: "swift-http-types"),
      .product(name: "NIOCore", package: "swift-nio"),
    ]
  ),
  .executableTarget(name: "networkingkit-example", dependencies: ["NetworkingKit", "NetworkingKitAsyncHTTPClient"]),
  .testTarget(
    name: "NetworkingKitIntegrationTests",
    dependencies: [
      "NetworkingKit", "NetworkingKitTesting", "NetworkingKitAsyncHTTPClient", "NetworkingKitTestSupport",
      "NetworkingKitTestServer",
      .product(name: "HTTPTypes", package: "swift-http-types"),
    ]
  ),
]

let package = Package(
  name: "NetworkingKit",
  // Mutex (Synchronization) needs these.
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "NetworkingKit", targets: ["NetworkingKit"]),
    .library(name: "NetworkingKitTesting", targets: ["NetworkingKitTesting"]),
    // The integration tests' helpers, products so that the monorepo's root package can run those tests.
    .library(name: "NetworkingKitTestSupport", targets: ["NetworkingKitTestSupport"]),
  ]
    + (coreOnly
      ? []
      : [
        .library(name: "NetworkingKitAsyncHTTPClient", targets: ["NetworkingKitAsyncHTTPClient"]),
        .library(name: "NetworkingKitTestServer", targets: ["NetworkingKitTestServer"]),
        .executable(name: "networkingkit-bench", targets: ["networkingkit-bench"]),
      ]),
  dependencies: [
    .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
  ]
    + (coreOnly
      ? []
      : [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
      ]),
  targets: core + (coreOnly ? [] : withNIO),
  swiftLanguageModes: [.v6]
)

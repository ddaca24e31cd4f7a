// swift-tools-version: 6.1
import PackageDescription

// `MERIDIAN_KIT_CORE_ONLY=1` (set by the monorepo's Tools/test-all) leaves out every target that needs SwiftNIO: the
// Hummingbird server adapter, the WebSocket client, the benchmark and the integration tests. The monorepo's root
// package runs Tests/RealtimeKitIntegrationTests itself, with the NIO it builds anyway, so NIO is compiled once.
// Without the variable, `swift test --package-path Packages/RealtimeKit` builds and runs everything.
let coreOnly = Context.environment["MERIDIAN_KIT_CORE_ONLY"] == "1"

let core: [Target] = [
  .target(name: "RealtimeKit"),
  .target(name: "RealtimeKitTesting", dependencies: ["RealtimeKit"]),
  .testTarget(name: "RealtimeKitTests", dependencies: ["RealtimeKit", "RealtimeKitTesting"]),
  .target(name: "RealtimeSocketIO", dependencies: ["RealtimeKit"]),
  .testTarget(name: "RealtimeSocketIOTests", dependencies: ["RealtimeSocketIO", "RealtimeKit", "RealtimeKitTesting"]),
]

let withNIO: [Target] = [
  .target(
    name: "RealtimeKitHummingbird",
    dependencies: [
      "RealtimeKit",
      .product(name: "Hummingbird", package: "hummingbird"),
      .product(name: "HummingbirdCore", package: "hummingbird"),
      .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
      .product(name: "HummingbirdWSCompression", package: "hummingbird-websocket"),
      .product(name: "HTTPTypes", package: "swift-http-types"),
      .product(name: "Logging", package: "swift-log"),
      .product(name: "NIOCore", package: "swift-nio"),
      .product(name: "NIOHTTP1", package: "swift-nio"),
      .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
      .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
      .product(name: "NIOWebSocket", package: "swift-nio"),
      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    ]
  ),
  .target(
    name: "RealtimeKitWebSocketClient",
    dependencies: [
      "RealtimeKit",
      .product(name: "WSClient", package: "swift-websocket"),
      .product(name: "WSCompression", package: "swift-websocket"),
      .product(name: "HTTPTypes", package: "swift-http-types"),
      .product(name: "Logging", package: "swift-log"),
      .product(name: "NIOCore", package: "swift-nio"),
      .product(name: "NIOPosix", package: "swift-nio"),
      .product(name: "NIOWebSocket", package: "swift-nio"),
    ]
  ),
  .executableTarget(
    name: "realtimekit-bench",
    dependencies: [
      "RealtimeKit", "RealtimeKitHummingbird", "RealtimeKitWebSocketClient",
      .product(name: "Hummingbird", package: "hummingbird"),
      .product(name: "Logging", package: "swift-log"),
    ]
  ),
  .testTarget(
    name: "RealtimeKitIntegrationTests",
    dependencies: [
      "RealtimeKit", "RealtimeKitHummingbird", "RealtimeKitWebSocketClient", "RealtimeKitTesting", "RealtimeSocketIO",
      .product(name: "Hummingbird", package: "hummingbird"),
      .product(name: "HTTPTypes", package: "swift-http-types"),
      .product(name: "Logging", package: "swift-log"),
      .product(name: "NIOCore", package: "swift-nio"),
      .product(name: "NIOPosix", package: "swift-nio"),
      .product(name: "NIOWebSocket", package: "swift-nio"),
      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      .product(name: "WSClient", package: "swift-websocket"),
    ]
  ),
]

let package = Package(
  name: "RealtimeKit",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "RealtimeKit", targets: ["RealtimeKit"]),
    .library(name: "RealtimeKitTesting", targets: ["RealtimeKitTesting"]),
    .library(name: "RealtimeSocketIO", targets: ["RealtimeSocketIO"]),
  ]
    + (coreOnly
      ? []
      : [
        .library(name: "RealtimeKitHummingbird", targets: ["RealtimeKitHummingbird"]),
        .library(name: "RealtimeKitWebSocketClient", targets: ["RealtimeKitWebSocketClient"]),
        .executable(name: "realtimekit-bench", targets: ["realtimekit-bench"]),
      ]),
  dependencies: coreOnly
    ? []
    : [
      .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
      .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
      .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
      .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
      .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
      .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
      .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
      .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
    ],
  targets: core + (coreOnly ? [] : withNIO),
  swiftLanguageModes: [.v6]
)

// swift-tools-version: 6.1
// The root package: the apps, the integration tests and the developer tools, built from the kits in Packages/.
import PackageDescription

let package = Package(
  name: "Meridian",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .executable(name: "meridian-geo", targets: ["meridian-geo"]),
    .executable(name: "meridian-server", targets: ["meridian-server"]),
    .executable(name: "meridian-tracker", targets: ["meridian-tracker"]),
    .executable(name: "meridian-admin", targets: ["meridian-admin"]),
  ],
  dependencies: [
    .package(path: "Packages/GeoKit"),
    .package(path: "Packages/PersistenceKit"),
    .package(path: "Packages/NetworkingKit"),
    .package(path: "Packages/RealtimeKit"),
    .package(path: "Packages/DomainKit"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.7.0"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.36.0"),
    .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    .package(url: "https://github.com/hummingbird-project/swift-websocket", from: "1.6.2"),
    .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
  ],
  targets: [
    // Apps: the HTTP API shared by the server and every client
    .target(
      name: "MeridianAPI",
      dependencies: [
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
      ],
      path: "Apps/API/MeridianAPI"),
    // Apps: tokens, hashes of secrets, bcrypt passwords and webhook signatures (the only app module with crypto)
    .target(
      name: "MeridianSecrets",
      dependencies: [
        .product(name: "Crypto", package: "swift-crypto"),
        .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      path: "Apps/Store/MeridianSecrets"),
    // Apps: the storage interfaces, one per product area, and their rules (no GRDB, no SQL, no crypto, no files)
    .target(
      name: "MeridianStore",
      dependencies: [
        "MeridianAPI", "MeridianSecrets",
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
      ],
      path: "Apps/Store/MeridianStore"),
    // Apps: blobs (images) as files in a directory, beside the database engines (file I/O on NIO's thread pool)
    .target(
      name: "MeridianBlobFiles",
      dependencies: ["MeridianStore", "MeridianSecrets", .product(name: "NIOPosix", package: "swift-nio")],
      path: "Apps/Store/MeridianBlobFiles"),
    // Apps: the embedded SQLite engine of the store interfaces (the only app module that imports GRDB)
    .target(
      name: "MeridianStoreSQLite",
      dependencies: [
        "MeridianStore", "MeridianAPI", "MeridianSecrets",
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "PersistenceKit", package: "PersistenceKit"),
        .product(name: "PersistenceKitStrings", package: "PersistenceKit"),
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      path: "Apps/Store/MeridianStoreSQLite"),
    // Apps: the PostgreSQL/PostGIS engine of the store interfaces (several server nodes on one database)
    .target(
      name: "MeridianStorePostgres",
      dependencies: [
        "MeridianStore", "MeridianAPI", "MeridianSecrets",
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "PersistenceKit", package: "PersistenceKit"),
        .product(name: "PersistenceKitPostgres", package: "PersistenceKit"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
      ],
      path: "Apps/Store/MeridianStorePostgres", exclude: ["README.md"]),
    // Apps: the engine a path or a postgres:// URL names, opened (for the server and the admin CLI)
    .target(
      name: "MeridianStoreEngines",
      dependencies: [
        "MeridianStore", "MeridianStoreSQLite", "MeridianStorePostgres", "MeridianBlobFiles",
        .product(name: "DomainKit", package: "DomainKit"), .product(name: "Logging", package: "swift-log"),
      ],
      path: "Apps/Store/MeridianStoreEngines"),
    // Apps: libqrencode (Debian libqrencode-dev), a system library like SQLite's
    .systemLibrary(
      name: "CQRencode", path: "Apps/Server/CQRencode", pkgConfig: "libqrencode",
      providers: [.apt(["libqrencode-dev"]), .yum(["qrencode-devel"]), .brew(["qrencode"])]),
    // Apps: the system zlib for the QR code's PNG (as NetworkingKit's CZlib, which is not a product)
    .systemLibrary(
      name: "CQRZlib", path: "Apps/Server/CQRZlib", providers: [.apt(["zlib1g-dev"]), .yum(["zlib-devel"])]),
    // Apps: texts as QR codes, drawn as SVG and PNG (promotion codes)
    .target(name: "MeridianQRCode", dependencies: ["CQRencode", "CQRZlib"], path: "Apps/Server/MeridianQRCode"),
    // Apps: an MQTT 3.1.1 codec and client on SwiftNIO (OwnTracks' MQTT mode)
    .target(
      name: "MeridianMQTT",
      dependencies: [
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "Apps/MQTT/MeridianMQTT"),
    .testTarget(
      name: "MeridianMQTTTests",
      dependencies: ["MeridianMQTT", .product(name: "NIOCore", package: "swift-nio")],
      path: "Tests/MeridianMQTTTests"),
    // Apps: the server
    .target(
      name: "MeridianServer",
      dependencies: [
        "MeridianAPI", "MeridianStore", "MeridianSecrets", "MeridianStoreEngines", "MeridianQRCode", "MeridianMQTT",
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "NetworkingKitAsyncHTTPClient", package: "NetworkingKit"),
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "RealtimeKit", package: "RealtimeKit"),
        .product(name: "RealtimeKitHummingbird", package: "RealtimeKit"),
        .product(name: "RealtimeSocketIO", package: "RealtimeKit"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        // STARTTLS of the email alerts' SMTP client (already built for AsyncHTTPClient).
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "Crypto", package: "swift-crypto"),
        // RSA signatures of OpenID providers' ID tokens (RS256).
        .product(name: "_CryptoExtras", package: "swift-crypto"),
        .product(name: "PersistenceKitStrings", package: "PersistenceKit"),
      ],
      path: "Apps/Server/MeridianServer",
      // The web app's page, ES modules, CSS and String Catalog, served as they are (WebAppFeature).
      resources: [.copy("WebApp/Site")]),
    .executableTarget(
      name: "meridian-server",
      dependencies: [
        "MeridianServer",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ],
      path: "Apps/Server/meridian-server"),
    // Apps: the tracker's own SQLite database (its queue, state and local history), not the server's engine
    .target(
      name: "MeridianTrackerStore",
      dependencies: [
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "PersistenceKit", package: "PersistenceKit"),
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      path: "Apps/Tracker/MeridianTrackerStore"),
    // Apps: the tracker
    .target(
      name: "MeridianTracker",
      dependencies: [
        "MeridianAPI", "MeridianTrackerStore",
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "PersistenceKit", package: "PersistenceKit"),
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "NetworkingKitAsyncHTTPClient", package: "NetworkingKit"),
        .product(name: "RealtimeKit", package: "RealtimeKit"),
        .product(name: "RealtimeKitWebSocketClient", package: "RealtimeKit"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      path: "Apps/Tracker/MeridianTracker"),
    .executableTarget(
      name: "meridian-tracker",
      dependencies: ["MeridianTracker"],
      path: "Apps/Tracker/meridian-tracker"),
    // Apps: the benchmarks (library) and their executables
    .target(
      name: "MeridianBenchmarks",
      dependencies: [
        "MeridianServer", "MeridianStore", "MeridianStoreSQLite", "MeridianAPI", "MeridianTracker",
        "MeridianTrackerStore", "MeridianMQTT",
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "NetworkingKitAsyncHTTPClient", package: "NetworkingKit"),
        .product(name: "RealtimeKit", package: "RealtimeKit"),
        .product(name: "RealtimeKitWebSocketClient", package: "RealtimeKit"),
        .product(name: "RealtimeSocketIO", package: "RealtimeKit"),
        .product(name: "WSClient", package: "swift-websocket"),
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      path: "Apps/Benchmarks/MeridianBenchmarks"),
    .executableTarget(
      name: "meridian-tracker-bench", dependencies: ["MeridianBenchmarks"], path: "Apps/Tracker/meridian-tracker-bench"),
    .executableTarget(
      name: "meridian-server-bench", dependencies: ["MeridianBenchmarks"], path: "Apps/Server/meridian-server-bench"),
    // Tests: running the built executables
    .target(
      name: "MeridianTestSupport",
      dependencies: [
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      path: "Tests/MeridianTestSupport"),
    // Tests: the store engines and the fixtures every engine's tests share
    .target(
      name: "MeridianStoreTesting",
      dependencies: [
        "MeridianStore", "MeridianAPI", "MeridianStoreSQLite", "MeridianStorePostgres", "MeridianTestSupport",
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "DomainKitTesting", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "PersistenceKit", package: "PersistenceKit"),
        .product(name: "PersistenceKitPostgres", package: "PersistenceKit"),
      ],
      path: "Tests/MeridianStoreTesting"),
    // Tests: the contract every store engine passes
    .testTarget(
      name: "MeridianStoreContractTests",
      dependencies: [
        "MeridianStore", "MeridianStoreTesting", "MeridianAPI", "MeridianStorePostgres", "MeridianSecrets",
        "MeridianBlobFiles", "MeridianTestSupport",
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "PersistenceKitPostgres", package: "PersistenceKit"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "DomainKitTesting", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      path: "Tests/MeridianStoreContractTests"),
    .testTarget(
      name: "MeridianServerTests",
      dependencies: [
        "MeridianServer", "meridian-server", "MeridianStore", "MeridianStoreSQLite", "MeridianAPI", "MeridianSecrets",
        "MeridianTestSupport",
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdTesting", package: "hummingbird"),
        .product(name: "PersistenceKit", package: "PersistenceKit"),
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "RealtimeKit", package: "RealtimeKit"),
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "DomainKitTesting", package: "DomainKit"),
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "Crypto", package: "swift-crypto"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      path: "Tests/MeridianServerTests"),
    // Tests: the tracker's own (history, sources, policy, uploader, commands), no server
    .testTarget(
      name: "MeridianTrackerTests",
      dependencies: [
        "MeridianTracker", "MeridianTrackerStore", "MeridianStoreTesting", "MeridianTestSupport",
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "DomainKitTesting", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      path: "Tests/MeridianTrackerTests"),
    .testTarget(
      name: "MeridianServerIntegrationTests",
      dependencies: [
        "MeridianServer", "MeridianStore", "MeridianStoreSQLite", "MeridianAPI", "MeridianTracker",
        "MeridianTrackerStore", "MeridianSecrets", "MeridianTestSupport", "MeridianStoreTesting",
        "MeridianStoreEngines", "MeridianMQTT",
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "DomainKitTesting", package: "DomainKit"),
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "NetworkingKitAsyncHTTPClient", package: "NetworkingKit"),
        .product(name: "NetworkingKitTestServer", package: "NetworkingKit"),
        .product(name: "RealtimeKit", package: "RealtimeKit"),
        .product(name: "RealtimeKitWebSocketClient", package: "RealtimeKit"),
        .product(name: "RealtimeKitTesting", package: "RealtimeKit"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
      ],
      path: "Tests/MeridianServerIntegrationTests"),
    // Apps: the operators' CLI
    .target(
      name: "MeridianAdmin",
      dependencies: [
        "MeridianStore", "MeridianStoreSQLite", "MeridianStorePostgres", "MeridianStoreEngines", "MeridianAPI",
        "MeridianSecrets",
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "GeoKit", package: "GeoKit"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "PersistenceKit", package: "PersistenceKit"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "NetworkingKitAsyncHTTPClient", package: "NetworkingKit"),
        .product(name: "PersistenceKitStrings", package: "PersistenceKit"),
      ],
      path: "Apps/Admin/MeridianAdmin",
      // The CLI's String Catalog (counts in en, ru, uk), copied as it is: `i18n check` validates it.
      resources: [.copy("Resources/Localizable.xcstrings")]),
    .executableTarget(
      name: "meridian-admin",
      dependencies: ["MeridianAdmin"],
      path: "Apps/Admin/meridian-admin"),
    .testTarget(
      name: "MeridianAdminTests",
      dependencies: [
        "MeridianTestSupport", "MeridianStoreTesting", "MeridianStorePostgres",
        "MeridianAdmin", "MeridianServer", "MeridianStore", "MeridianStoreSQLite", "MeridianAPI", "MeridianSecrets",
        "MeridianBlobFiles", "MeridianStoreEngines",
        .product(name: "DomainKit", package: "DomainKit"),
        .product(name: "DomainKitTesting", package: "DomainKit"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "PersistenceKit", package: "PersistenceKit"),
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "NetworkingKitAsyncHTTPClient", package: "NetworkingKit"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "PersistenceKitStrings", package: "PersistenceKit"),
        .product(name: "PersistenceKitPostgres", package: "PersistenceKit"),
      ],
      path: "Tests/MeridianAdminTests"),
    // Tests: the kits' tests that need SwiftNIO, from the kits' own folders, so that NIO is compiled once here;
    // Tools/test-all runs each kit with MERIDIAN_KIT_CORE_ONLY=1 (its core and its NIO-free tests)
    .testTarget(
      name: "NetworkingKitIntegrationTests",
      dependencies: [
        .product(name: "NetworkingKit", package: "NetworkingKit"),
        .product(name: "NetworkingKitTesting", package: "NetworkingKit"),
        .product(name: "NetworkingKitAsyncHTTPClient", package: "NetworkingKit"),
        .product(name: "NetworkingKitTestSupport", package: "NetworkingKit"),
        .product(name: "NetworkingKitTestServer", package: "NetworkingKit"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
      ],
      path: "Packages/NetworkingKit/Tests/NetworkingKitIntegrationTests"),
    .testTarget(
      name: "RealtimeKitIntegrationTests",
      dependencies: [
        .product(name: "RealtimeKit", package: "RealtimeKit"),
        .product(name: "RealtimeKitHummingbird", package: "RealtimeKit"),
        .product(name: "RealtimeKitWebSocketClient", package: "RealtimeKit"),
        .product(name: "RealtimeKitTesting", package: "RealtimeKit"),
        .product(name: "RealtimeSocketIO", package: "RealtimeKit"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOWebSocket", package: "swift-nio"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "WSClient", package: "swift-websocket"),
      ],
      path: "Packages/RealtimeKit/Tests/RealtimeKitIntegrationTests"),
    .testTarget(
      name: "PersistenceKitPostgresTests",
      dependencies: [
        .product(name: "PersistenceKit", package: "PersistenceKit"),
        .product(name: "PersistenceKitPostgres", package: "PersistenceKit"),
      ],
      path: "Packages/PersistenceKit/Tests/PersistenceKitPostgresTests"),
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
      dependencies: ["GeoTool", "MeridianTestSupport"],
      path: "Tests/GeoToolTests"),
  ],
  swiftLanguageModes: [.v6]
)

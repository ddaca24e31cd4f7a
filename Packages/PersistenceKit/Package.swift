// swift-tools-version: 6.1
import PackageDescription

let package = Package(
  name: "PersistenceKit",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "PersistenceKit", targets: ["PersistenceKit"]),
    .library(name: "PersistenceKitStrings", targets: ["PersistenceKitStrings"]),
    .library(name: "PersistenceKitTesting", targets: ["PersistenceKitTesting"]),
    .library(name: "PersistenceKitPostgres", targets: ["PersistenceKitPostgres"]),
    .executable(name: "persistencekit-bench", targets: ["persistencekit-bench"]),
  ],
  dependencies: [
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
  ],
  targets: [
    .target(
      name: "PersistenceKit",
      dependencies: [
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "GRDBSQLite", package: "GRDB.swift"),
      ]
    ),
    .target(
      name: "PersistenceKitPostgres",
      dependencies: ["PersistenceKit", .product(name: "PostgresNIO", package: "postgres-nio")]
    ),
    .target(name: "PersistenceKitStrings"),
    .target(name: "PersistenceKitTesting", dependencies: ["PersistenceKit"]),
    .executableTarget(
      name: "persistencekit-bench",
      dependencies: ["PersistenceKit", .product(name: "GRDBSQLite", package: "GRDB.swift")]
    ),
    .executableTarget(name: "persistencekit-migrate-probe", dependencies: ["PersistenceKit"]),
    .testTarget(
      name: "PersistenceKitTests",
      dependencies: [
        "PersistenceKit", "PersistenceKitStrings", "PersistenceKitTesting", "persistencekit-migrate-probe",
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      resources: [.copy("Resources")]
    ),
    .testTarget(
      name: "PersistenceKitPostgresTests",
      dependencies: ["PersistenceKit", "PersistenceKitPostgres"]
    ),
  ],
  swiftLanguageModes: [.v6]
)

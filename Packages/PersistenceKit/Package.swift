// swift-tools-version: 6.1
import PackageDescription

// `MERIDIAN_KIT_CORE_ONLY=1` (set by the monorepo's Tools/test-all) leaves out PersistenceKitPostgres, which needs
// postgres-nio (and so SwiftNIO), and its tests: the monorepo's root package runs Tests/PersistenceKitPostgresTests
// itself, with the NIO it builds anyway, so NIO is compiled once. Without the variable,
// `swift test --package-path Packages/PersistenceKit` builds and runs everything.
let coreOnly = Context.environment["MERIDIAN_KIT_CORE_ONLY"] == "1"

let postgresProducts: [Product] = [.library(name: "PersistenceKitPostgres", targets: ["PersistenceKitPostgres"])]
let postgresDependencies: [Package.Dependency] = [
  .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2")
]
let postgresTargets: [Target] = [
  .target(
    name: "PersistenceKitPostgres",
    dependencies: ["PersistenceKit", .product(name: "PostgresNIO", package: "postgres-nio")]
  ),
  .testTarget(name: "PersistenceKitPostgresTests", dependencies: ["PersistenceKit", "PersistenceKitPostgres"]),
]

let package = Package(
  name: "PersistenceKit",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "PersistenceKit", targets: ["PersistenceKit"]),
    .library(name: "PersistenceKitStrings", targets: ["PersistenceKitStrings"]),
    .library(name: "PersistenceKitTesting", targets: ["PersistenceKitTesting"]),
    .executable(name: "persistencekit-bench", targets: ["persistencekit-bench"]),
  ] + (coreOnly ? [] : postgresProducts),
  dependencies: [
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0")
  ] + (coreOnly ? [] : postgresDependencies),
  targets: [
    .target(
      name: "PersistenceKit",
      dependencies: [
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "GRDBSQLite", package: "GRDB.swift"),
      ]
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
  ] + (coreOnly ? [] : postgresTargets),
  swiftLanguageModes: [.v6]
)

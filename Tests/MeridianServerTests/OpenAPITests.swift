import Foundation
import MeridianAPI
import Testing

/// `docs/api/openapi.yaml` lists exactly the routes of `API.all`, and every error code.
@Suite struct OpenAPITests {
  static func specification() throws -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    return try String(contentsOf: root.appendingPathComponent("docs/api/openapi.yaml"), encoding: .utf8)
  }

  /// `METHOD /path` for every operation under `paths:` (two-space path keys, four-space method keys).
  static func operations(in text: String) -> Set<String> {
    var operations: Set<String> = []
    var path: String?
    var inPaths = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if !line.hasPrefix(" ") { inPaths = line == "paths:" }
      guard inPaths else { continue }
      if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
        path = String(line.dropFirst(2).dropLast())
      } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
        let method = line.trimmingCharacters(in: .whitespaces).dropLast()
        if ["get", "post", "put", "patch", "delete"].contains(method) {
          operations.insert("\(method.uppercased()) \(path)")
        }
      }
    }
    return operations
  }

  @Test func routesAndSpecificationAgree() throws {
    let documented = Self.operations(in: try Self.specification())
    let defined = Set(API.all.map { "\($0.method.rawValue) \($0.pathTemplate)" })
    #expect(documented.subtracting(defined).isEmpty, "documented but not defined")
    #expect(defined.subtracting(documented).isEmpty, "defined but not documented")
    #expect(defined.count == API.all.count)
  }

  @Test func everyErrorCodeIsDocumented() throws {
    let text = try Self.specification()
    for code in APIErrorCode.allCases {
      #expect(text.contains(code.rawValue), "\(code.rawValue) is missing from the ErrorEnvelope schema")
    }
  }
}

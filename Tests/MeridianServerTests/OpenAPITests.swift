import DomainKit
import Foundation
import GeoKit
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

  /// The property names of the schema `name` under `components: schemas:` (eight-space keys of its `properties:`).
  static func properties(of name: String, in text: String) -> Set<String> {
    var names: Set<String> = []
    var inSchema = false
    var inProperties = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("    "), !line.hasPrefix("     ") {
        inSchema = line == "    \(name):"
        inProperties = false
        continue
      }
      guard inSchema else { continue }
      if line.hasPrefix("      "), !line.hasPrefix("       ") { inProperties = line == "      properties:" }
      if inProperties, line.hasPrefix("        "), !line.hasPrefix("         "),
        let key = line.trimmingCharacters(in: .whitespaces).split(separator: ":").first
      {
        names.insert(String(key))
      }
    }
    return names
  }

  /// The JSON keys of `value` (an object).
  static func keys(of value: some Encodable) throws -> Set<String> {
    let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any]
    return Set(object?.keys.map { $0 } ?? [])
  }

  /// Every field a geofence, its create and update bodies, its alert rule, its events (a proximity rule's among
  /// them) and a proximity rule carry on the wire is documented in their schemas.
  @Test func geofenceWireFieldsAreDocumented() throws {
    let text = try Self.specification()
    let rule = GeofenceAlertRule(
      kinds: [.exit], days: [.mon], hours: DailyHours(from: "08:00", until: "09:00"), timeZone: "UTC",
      people: [UserID("bob")])
    let shape = GeofenceShape.circle(center: Coordinate(uncheckedLatitude: 1, longitude: 2), radius: 100)
    var create = NewGeofence(name: "n", shape: shape, sharing: .group, groupId: GroupID("g"), alerts: rule)
    create.placeId = PlaceID("p")
    create.radius = 100
    let examples: [(String, any Encodable)] = [
      (
        "Geofence",
        GeofenceItem(
          id: GeofenceID("g"), ownerId: UserID("a"), name: "n", shape: shape, sharing: .group, groupId: GroupID("g"),
          externalId: "x", alerts: rule, createdAt: 1, updatedAt: 1)
      ),
      ("NewGeofence", create),
      (
        "GeofenceUpdate",
        GeofenceUpdate(name: "n", shape: shape, sharing: .group, groupId: GroupID("g"), alerts: rule)
      ),
      ("GeofenceAlertRule", rule),
      (
        "GeofenceEvent",
        GeofenceEventItem(
          id: "e", geofenceId: GeofenceID("g"), geofenceName: "n", ownerId: UserID("a"), userId: UserID("b"),
          kind: .exit, timestamp: 1, reportedBy: .server, lat: 1, lon: 2, accuracy: 3, alerted: false,
          proximity: ProximityEventDetail(ruleId: ProximityRuleID("r"), kind: .apart, radius: 200))
      ),
      (
        "ProximityRule",
        ProximityRuleItem(
          id: ProximityRuleID("r"), ownerId: UserID("a"), userId: UserID("b"), radius: 200, createdAt: 1)
      ),
      ("NewProximityRule", NewProximityRule(userId: UserID("b"), radius: 200)),
      ("ProximityRuleList", ProximityRuleList(items: [])),
    ]
    for (schema, example) in examples {
      let documented = Self.properties(of: schema, in: text)
      let sent = try Self.keys(of: example)
      #expect(sent.subtracting(documented).isEmpty, "\(schema) lacks \(sent.subtracting(documented).sorted())")
    }
  }
}

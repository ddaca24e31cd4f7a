import Foundation

/// Reads a committed fixture (Tools/geo-fixtures/generate.py) as rows of whitespace-separated fields.
enum Fixture {
  static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

  static func rows(_ name: String) throws -> [[Substring]] {
    let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: " ") }
  }

  /// The rows with every field parsed as a Double.
  static func numbers(_ name: String) throws -> [[Double]] {
    try rows(name).map { $0.map { Double($0) ?? .nan } }
  }
}

/// The smallest difference between two angles in degrees.
func angleDifference(_ a: Double, _ b: Double) -> Double {
  let d = abs(a - b).truncatingRemainder(dividingBy: 360)
  return min(d, 360 - d)
}

import DomainKit

/// `count` movement fixes one second apart from `start` (milliseconds), each about 11 m north-east of the last from
/// (`latitude`, 30.52), with accuracies cycling through 5 to 24 m.
public func makeFixes(count: Int, start: Int64 = 1_700_000_000_000, latitude: Double = 50.45) throws -> [LocationFix] {
  try (0..<count).map { index in
    let step = Double(index) * 0.0001
    return try LocationFix(
      timestamp: start + Int64(index) * 1000, latitude: latitude + step, longitude: 30.52 + step,
      horizontalAccuracy: Double(5 + index % 20), kind: .movement)
  }
}

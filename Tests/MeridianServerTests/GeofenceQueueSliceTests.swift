import DomainKit
import MeridianStore
import Testing

@testable import MeridianServer

/// The geofence monitor commits a person's queued uploads in runs of bounded size, in their order.
@Suite struct GeofenceQueueSliceTests {
  /// An entry of `count` fixes.
  func entry(_ sequence: UInt64, fixes count: Int) throws -> GeofenceQueueEntry {
    GeofenceQueueEntry(
      sequence: sequence, userID: UserID("anna"),
      fixes: try (0..<count).map { try LocationFix(timestamp: Int64($0) * 1000, latitude: 50, longitude: 30) },
      queuedAt: 0)
  }

  @Test func runsOfConsecutiveEntriesHoldAtMostTheLimitUnlessOneEntryHoldsMore() throws {
    let entries = try [
      entry(1, fixes: 40), entry(2, fixes: 60), entry(3, fixes: 1), entry(4, fixes: 250),
      entry(5, fixes: 0), entry(6, fixes: 99), entry(7, fixes: 2),
    ]
    let slices = GeofenceMonitor.slices(of: entries, fixes: 100)
    #expect(slices.map { $0.map(\.sequence) } == [[1, 2], [3], [4], [5, 6], [7]])
    #expect(GeofenceMonitor.slices(of: [], fixes: 100).isEmpty)
    #expect(GeofenceMonitor.slices(of: entries, fixes: 1_000).map { $0.map(\.sequence) } == [[1, 2, 3, 4, 5, 6, 7]])
  }
}

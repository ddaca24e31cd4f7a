import DomainKit
import MeridianStore
import Testing

@testable import MeridianServer

/// The geofence monitor evaluates a person's queued fixes in the order of their times, in runs of bounded size; each
/// run's commit removes the uploads whose every fix it has evaluated by then.
@Suite struct GeofenceQueueRunTests {
  /// An entry with fixes at `seconds`.
  func entry(_ sequence: UInt64, _ seconds: [Int64], kind: FixKind = .movement) throws -> GeofenceQueueEntry {
    GeofenceQueueEntry(
      sequence: sequence, userID: UserID("anna"),
      fixes: try seconds.map { try LocationFix(timestamp: $0 * 1000, latitude: 50, longitude: 30, kind: kind) },
      queuedAt: 0)
  }

  @Test func runsFollowTheFixesTimesAcrossUploadsAndEachRemovesTheUploadsItCompletes() throws {
    // Two phones of one person: their uploads overlap in time; an import's fixes are not evaluated.
    let entries = try [
      entry(1, [1, 3, 5]), entry(2, [2, 4, 6]), entry(3, [7, 8], kind: .imported), entry(4, [9, 7]), entry(5, []),
    ]
    let runs = GeofenceMonitor.runs(of: entries, fixes: 3)
    #expect(runs.map { $0.fixes.map { $0.timestamp / 1000 } } == [[1, 2, 3], [4, 5, 6], [7, 9]])
    #expect(runs.map(\.completing) == [[3, 5], [1, 2], [4]])
    // Every entry is removed once, by the run that holds its last fix.
    #expect(runs.flatMap(\.completing).sorted() == [1, 2, 3, 4, 5])
    #expect(GeofenceMonitor.runs(of: entries, fixes: 100).map(\.completing) == [[1, 2, 3, 4, 5]])
    #expect(GeofenceMonitor.runs(of: [], fixes: 3).isEmpty)
    #expect(GeofenceMonitor.runs(of: [try entry(6, [1], kind: .imported)], fixes: 3).isEmpty)
  }

  @Test func anUploadLargerThanARunIsEvaluatedAcrossSeveralAndRemovedWithTheLast() throws {
    let runs = GeofenceMonitor.runs(of: [try entry(1, Array(1...250))], fixes: 100)
    #expect(runs.map(\.fixes.count) == [100, 100, 50])
    #expect(runs.map(\.completing) == [[], [], [1]])
  }

  /// Two phones' fixes of one millisecond are never cut apart: the first run's commit marks that time evaluated,
  /// and the monitor skips what is not later.
  @Test func fixesOfOneTimeStayInOneRun() throws {
    let entries = try [entry(1, [1, 2, 3, 3, 4]), entry(2, [3, 5])]
    let runs = GeofenceMonitor.runs(of: entries, fixes: 3)
    #expect(runs.map { $0.fixes.map { $0.timestamp / 1000 } } == [[1, 2, 3, 3, 3], [4, 5]])
    #expect(runs.map(\.completing) == [[], [1, 2]])
    // A person's whole upload of one time is one run, however long.
    let burst = GeofenceMonitor.runs(of: [try entry(3, Array(repeating: 9, count: 7)), try entry(4, [10])], fixes: 3)
    #expect(burst.map(\.fixes.count) == [7, 1])
    #expect(burst.map(\.completing) == [[3], [4]])
  }
}

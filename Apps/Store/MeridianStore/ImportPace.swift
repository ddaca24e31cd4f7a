/// An upper bound on an import's rate in rows a second (`meridian-admin … --rows-per-second`,
/// `MERIDIAN_LIMIT_IMPORTED_FIXES_PER_SECOND`), so that a large import run beside live traffic leaves the database
/// room for it. The import calls ``spend(_:)`` after each stored batch; it sleeps until
/// the rows are within the rate. Time the import spent slower than the rate is credited for one second at most, so
/// a slow stretch is never followed by a burst faster than the bound.
public struct ImportPace: Sendable {
  /// The bound, in rows a second; nil imports as fast as the database takes it.
  public let rowsPerSecond: Int?
  /// When the rows spent so far are within the rate.
  private var due: ContinuousClock.Instant?

  /// A pace of at most `rowsPerSecond` rows a second, or none.
  public init(rowsPerSecond: Int?) {
    self.rowsPerSecond = rowsPerSecond
  }

  /// Counts `rows` stored, then waits until they are within the bound.
  public mutating func spend(_ rows: Int) async throws {
    guard let rowsPerSecond, rowsPerSecond > 0 else { return }
    let now = ContinuousClock.now
    let from = max(due ?? now, now - .seconds(1))
    let due = from + .seconds(Double(rows) / Double(rowsPerSecond))
    self.due = due
    if due > now { try await Task.sleep(until: due, clock: .continuous) }
  }

  /// The rates a pace accepts.
  public static let rates = 1...10_000_000
}

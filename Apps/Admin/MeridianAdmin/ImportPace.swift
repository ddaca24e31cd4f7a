/// An upper bound on an import's rate in rows a second (`--rows-per-second`), so that a large import run beside a live
/// server leaves the database room for it. The import calls ``spend(_:)`` after each stored batch; it sleeps until
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

  /// Checks a `--rows-per-second` value.
  static func validate(_ rowsPerSecond: Int?) throws {
    if let rowsPerSecond, !(1...10_000_000).contains(rowsPerSecond) {
      throw AdminError.usage("--rows-per-second must be 1…10000000.")
    }
  }
}

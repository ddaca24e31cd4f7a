/// An upper bound on an import's rate in rows a second (`--rows-per-second`), so that a large import run beside a live
/// server leaves the database room for it. The import calls ``spend(_:)`` after each stored batch; it sleeps until the
/// rows stored so far are within the rate since the first call.
public struct ImportPace: Sendable {
  /// The bound, in rows a second; nil imports as fast as the database takes it.
  public let rowsPerSecond: Int?
  private var started: ContinuousClock.Instant?
  private var rows = 0

  /// A pace of at most `rowsPerSecond` rows a second, or none.
  public init(rowsPerSecond: Int?) {
    self.rowsPerSecond = rowsPerSecond
  }

  /// Counts `rows` stored, then waits until the count is within the bound.
  public mutating func spend(_ rows: Int) async throws {
    guard let rowsPerSecond, rowsPerSecond > 0 else { return }
    let started = self.started ?? ContinuousClock.now
    self.started = started
    self.rows += rows
    let due = started + .seconds(Double(self.rows) / Double(rowsPerSecond))
    if due > ContinuousClock.now { try await Task.sleep(until: due, clock: .continuous) }
  }

  /// Checks a `--rows-per-second` value.
  static func validate(_ rowsPerSecond: Int?) throws {
    if let rowsPerSecond, !(1...10_000_000).contains(rowsPerSecond) {
      throw AdminError.usage("--rows-per-second must be 1…10000000.")
    }
  }
}

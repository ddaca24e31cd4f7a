import MeridianStore
import MeridianStorePostgres
import PostgresNIO

/// Statements run on a connection of a PostgreSQL store's pool that keep what they took (a lock, an open
/// transaction) until the test releases it, so that a test sees what waits for it without timing anything.
public final class ConnectionHold: Sendable {
  private let holder: Task<Void, any Error>
  private let releasing: AsyncStream<Void>.Continuation

  /// Runs `holding` on a connection of `store` (a ``PostgresStore``), returning once they ran; ``release()`` runs
  /// `releasing` on the same connection.
  public init(on store: any MeridianStore, holding: [String], releasing: [String]) async throws {
    guard let store = store as? PostgresStore else { throw LiveLogLockHoldError() }
    let (held, holdTaken) = AsyncStream.makeStream(of: Void.self)
    let (release, releaseAsked) = AsyncStream.makeStream(of: Void.self)
    self.releasing = releaseAsked
    holder = Task {
      try await store.database.withConnection(timeout: .seconds(120)) { connection in
        defer { holdTaken.finish() }
        let logger = store.database.logger
        for statement in holding {
          _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).collect()
        }
        holdTaken.yield()
        for await _ in release { break }
        for statement in releasing {
          _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).collect()
        }
      }
    }
    for await _ in held { return }
    try await holder.value
    throw LiveLogLockHoldError()
  }

  /// A transaction that read `fixes` and stays open: the ACCESS SHARE lock every reader of the table holds (a long
  /// live-log read, a history query).
  public static func readingFixes(on store: any MeridianStore) async throws -> ConnectionHold {
    try await ConnectionHold(on: store, holding: ["BEGIN", "SELECT count(*) FROM fixes"], releasing: ["COMMIT"])
  }

  /// Runs the releasing statements; returns once they ran.
  public func release() async throws {
    releasing.yield()
    try await holder.value
  }
}

import DomainKit
import MeridianServer
import MeridianStore
import MeridianStoreSQLite

/// Reads a server's database after the server stopped, through the server's own store.
struct MeridianServerStoreProbe {
  let store: SQLiteStore

  static func open(_ path: String) throws -> MeridianServerStoreProbe {
    MeridianServerStoreProbe(store: try SQLiteStore.open(at: path))
  }

  func timestamps(of user: UserID) async throws -> Set<Int64> {
    Set(
      try await store.history(owner: user, filter: HistoryFilter(), limit: 10_000_000, before: nil).map(\.fix.timestamp)
    )
  }
}

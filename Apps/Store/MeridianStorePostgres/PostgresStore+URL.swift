import Foundation
import PersistenceKitPostgres

extension PostgresStore {
  /// `url` as logs and messages show it: without its password, whatever its form (several hosts included, which
  /// `URLComponents` can't read); a URL that does not parse is shown as `postgres://…` when it may hold a password.
  public static func redacted(url: String) -> String {
    if let parsed = try? PostgresURL(url) { return parsed.description }
    return url.contains("@") ? "postgres://…" : url
  }
}

import DomainKit
import Foundation
import GeoKit
import MeridianAPI

/// The answers remembered for `Idempotency-Key`s.
public protocol IdempotencyStore: Sendable {
  // MARK: Idempotency

  /// The stored answer for a user's idempotency key.
  func idempotentResponse(userID: UserID, key: String) async throws -> StoredResponse?
  /// Stores the answer for a key (first writer wins).
  func saveIdempotentResponse(_ response: StoredResponse, userID: UserID, key: String, now: Int64) async throws
}

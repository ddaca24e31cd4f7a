/// The store's engine-neutral unit of work: ``write(_:)`` runs a body in one transaction of whichever engine the
/// server uses, handing it a ``StoreTransaction`` whose primitives (insert a ballot, move points, take stock, queue a
/// webhook delivery, …) are that engine's SQL on that transaction.
///
/// The rules are written once against the primitives, as extensions of ``StoreTransaction``
/// (``StoreTransaction/vote(_:user:choice:reward:now:)``, ``StoreTransaction/purchaseCoupon(_:user:couponID:code:requestKey:now:)``,
/// ``WebhookOutboxTransaction/enqueueWebhookEvent(_:)``, …), and the store's one-call methods run them in a
/// transaction of their own. A feature that must do several things at once composes them in one ``write(_:)``:
///
/// ```swift
/// let outcome = try await store.write { tx in
///   let outcome = try await tx.vote(poll, user: user, choice: .first, reward: 5, now: now)
///   try await tx.enqueueWebhookEvent(event)  // committed with the vote, or not at all
///   return outcome
/// }
/// ```
public protocol StoreTransactions: Sendable {
  /// Runs `body` in one write transaction: everything it does commits together, or nothing when it throws. An engine
  /// may run `body` again from the start when the database aborts the transaction for a conflict (a deadlock, a
  /// serialization failure), so `body` must only touch `tx` and must not wait for another of the store's calls.
  func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws -> T
  /// Runs `body` in one read-only transaction (one snapshot); its primitives that write fail.
  func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws -> T
}

/// One transaction's primitives, per product area, each an engine's SQL on the transaction it runs in. They keep
/// what the database keeps (unique keys, a balance that never goes negative, stock never oversold, locks); the rules
/// that decide what to write live in ``MeridianStore`` (``PollRules``, ``PointsRules``, ``WebhookEvent/recipients(_:)``)
/// and call them.
public protocol StoreTransaction: OneTimeCodeTransaction, PollTransaction, PointsTransaction, CouponTransaction,
  WebhookOutboxTransaction, GeofenceTransaction, ProximityTransaction
{}

import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import Synchronization

/// The server's way for a feature to send an event to webhooks: durably queued in the store, delivered by
/// ``WebhookDeliveryService`` (which this wakes at once).
///
/// ```swift
/// // After (or in) the transaction that stored the event:
/// try await environment.webhooks.enqueue(
///   kind: "geofence.enter", userID: person, payload: try JSONEncoder().encode(event),
///   idempotencyKey: "geofence.enter:\(event.id)", occurredAt: event.timestamp, queuedAt: now)
/// ```
///
/// A feature that queues inside the store transaction of what the event is about (`store.write { tx in … try await
/// tx.enqueueWebhookEvent(event) }`, engine-neutral) calls ``wake()`` after the commit.
public struct WebhookOutbox: Sendable {
  let store: any WebhookStore
  let signal: WakeSignal
  /// The enabled Home Assistant registrations (one entry), for ``HomeAssistantFeed``; dropped by every change of a
  /// registration made through the API, and read again after a few seconds anyway (another node's changes).
  let homeAssistantTargets = LookupCache<Int, [Webhook]>(lifetime: 5_000, capacity: 1)

  /// An outbox on `store`.
  public init(store: any WebhookStore) {
    self.store = store
    self.signal = WakeSignal()
  }

  /// Queues an event for every registration that wants it (the owner's and the operator-wide ones), once per
  /// idempotency key, due at `queuedAt` (the server's clock; `occurredAt` is only the body's); returns how many
  /// deliveries were queued.
  /// - Throws: `WebhookStoreError.invalidPayload` when `payload` isn't JSON; the store's errors.
  @discardableResult
  public func enqueue(
    kind: String, userID: UserID?, payload: Data, idempotencyKey: String, occurredAt: Int64, queuedAt: Int64
  ) async throws -> Int {
    try await enqueue(
      WebhookEvent(
        kind: kind, userID: userID, payload: payload, idempotencyKey: idempotencyKey, occurredAt: occurredAt,
        queuedAt: queuedAt))
  }

  /// Queues `event`; see ``enqueue(kind:userID:payload:idempotencyKey:occurredAt:queuedAt:)``.
  @discardableResult
  public func enqueue(_ event: WebhookEvent) async throws -> Int {
    let queued = try await store.enqueueWebhookEvent(event)
    if queued > 0 { wake() }
    return queued
  }

  /// Tells the delivery service that deliveries may be due now.
  public func wake() { signal.wake() }
}

/// A wake-up for one waiter: ``wake()`` before ``wait(timeout:)`` is remembered; a timeout ends only the wait that
/// set it (a timer of an earlier wait never counts as a wake-up for a later one).
final class WakeSignal: Sendable {
  private struct State {
    var pending = false
    var waiter: (id: UInt64, continuation: CheckedContinuation<Void, Never>)?
    var nextID: UInt64 = 0
  }
  private let state = Mutex(State())

  func wake() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      if let waiter = state.waiter {
        state.waiter = nil
        return waiter.continuation
      }
      state.pending = true
      return nil
    }
    waiter?.resume()
  }

  /// Returns on a wake-up, after `timeout`, or on cancellation.
  func wait(timeout: Duration) async {
    let id = state.withLock { state -> UInt64 in
      state.nextID &+= 1
      return state.nextID
    }
    let timer = Task { [weak self] in
      do { try await Task.sleep(for: timeout) } catch { return }
      self?.expire(id)
    }
    defer { timer.cancel() }
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let now = state.withLock { state -> Bool in
          if state.pending {
            state.pending = false
            return true
          }
          if Task.isCancelled { return true }
          state.waiter = (id, continuation)
          return false
        }
        if now { continuation.resume() }
      }
    } onCancel: {
      expire(id)
    }
  }

  /// Ends the wait numbered `id` if it is still waiting; remembers nothing otherwise.
  private func expire(_ id: UInt64) {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      guard let waiter = state.waiter, waiter.id == id else { return nil }
      state.waiter = nil
      return waiter.continuation
    }
    waiter?.resume()
  }
}

import Foundation
import Synchronization

/// One connection's bounded send queue.
///
/// It is drained by a task that exists only while the queue has something in it: an idle connection owns no writer
/// task. (A Swift task keeps the slabs of its high-water async stack until it ends, so a permanent writer task per
/// connection cost several kilobytes of memory on every idle connection.)
///
/// At most one drain task runs at a time, so the transport's `send` is called from one task at a time, in order.
final class SendQueue: Sendable {
  enum EnqueueResult {
    /// Queued; it will be sent after everything queued before it.
    case enqueued
    /// The queue is full (the consumer is too slow); nothing was queued.
    case dropped
    /// The queue was finished or stopped; nothing was queued.
    case terminated
  }

  private struct State {
    /// Pending messages; the one being sent is no longer counted.
    var items = DrainBuffer<Outbound>()
    /// No more messages are accepted; what is queued is still sent.
    var finished = false
    /// Nothing more is sent; what is queued is dropped.
    var stopped = false
    var drainer: Task<Void, Never>?
  }

  private let transport: any RealtimeServerConnection
  private let capacity: Int
  private let state = Mutex(State())

  init(transport: any RealtimeServerConnection, capacity: Int) {
    self.transport = transport
    self.capacity = max(1, capacity)
  }

  /// Queues `outbound`, starting a drain task if none is running.
  func enqueue(_ outbound: Outbound) -> EnqueueResult {
    state.withLock { state in
      guard !state.finished, !state.stopped else { return .terminated }
      guard state.items.count < capacity else { return .dropped }
      state.items.append(outbound)
      if state.drainer == nil {
        state.drainer = Task.detached { await self.drain() }
      }
      return .enqueued
    }
  }

  /// Accepts no more messages; those already queued are still sent.
  func finish() {
    state.withLock { $0.finished = true }
  }

  /// Drops what is queued and cancels the send in progress, if any.
  func stop() {
    let task: Task<Void, Never>? = state.withLock { state in
      state.stopped = true
      state.items.removeAll()
      defer { state.drainer = nil }
      return state.drainer
    }
    task?.cancel()
  }

  private func next() -> Outbound? {
    state.withLock { state in
      guard !state.stopped, let outbound = state.items.popFirst() else {
        // Ends this drain task; the next enqueue starts a new one.
        state.items.removeAll()
        state.drainer = nil
        return nil
      }
      return outbound
    }
  }

  private func drain() async {
    while let outbound = next() {
      switch outbound {
      case .text(let text):
        do {
          try await transport.send(text)
        } catch {
          stop()
          return
        }
      case .close(let code, let reason):
        await transport.close(code: code, reason: reason)
        stop()
        return
      }
    }
  }
}

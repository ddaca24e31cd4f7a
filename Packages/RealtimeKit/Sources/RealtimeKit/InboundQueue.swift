import Foundation
import Synchronization

extension RealtimeHub {
  /// Serves one connection whose transport delivers messages from callbacks (for example a NIO channel handler)
  /// instead of an async sequence that a task iterates: the same protocol as ``serve(connection:inbound:)``, but an
  /// idle connection owns no task. Messages are handled in order by a task that exists only while some are queued.
  ///
  /// Call ``RealtimeInbound/receive(_:)`` for every message and ``RealtimeInbound/finish()`` once when the
  /// connection ends (it is unregistered after the messages queued before it are handled).
  ///
  /// - Parameters:
  ///   - connection: the connection's sending side.
  ///   - resume: called (from any thread) after ``RealtimeInbound/receive(_:)`` returned `false`, once the backlog
  ///     has drained enough that the transport should read again.
  public func open(connection: some RealtimeServerConnection, resume: @escaping @Sendable () -> Void)
    -> RealtimeInbound
  {
    RealtimeInbound(hub: self, transport: connection, resume: resume)
  }
}

/// The inbound side of a connection opened with ``RealtimeHub/open(connection:resume:)``.
///
/// Thread-safe. At most one handling task runs at a time, so messages are handled one at a time, in order.
public final class RealtimeInbound: RealtimeMessageReceiver {
  enum Item {
    case message(RealtimeInboundMessage)
    case end
  }

  /// Above this many queued messages ``receive(_:)`` asks the transport to stop reading.
  static let highWatermark = 16
  /// At or below this many queued messages a paused transport is resumed.
  static let lowWatermark = 4

  private struct State {
    /// Until the handling task registers the connection.
    var transport: (any RealtimeServerConnection)?
    var items = DrainBuffer<Item>()
    var draining = false
    var ended = false
    var paused = false
    /// Only touched by the handling task (one at a time; the lock orders them).
    var session: RealtimeHub.Session?
  }

  private let hub: RealtimeHub
  private let resume: @Sendable () -> Void
  private let state: Mutex<State>

  init(hub: RealtimeHub, transport: any RealtimeServerConnection, resume: @escaping @Sendable () -> Void) {
    self.hub = hub
    self.resume = resume
    state = Mutex(State(transport: transport))
    // Register now rather than on the first message, so that the hello timeout and the connection count apply.
    state.withLock { startDrainingIfNeeded(&$0) }
  }

  /// Queues a received message. Returns `false` when the backlog is full: the transport should stop reading until
  /// `resume` is called.
  @discardableResult
  public func receive(_ message: RealtimeInboundMessage) -> Bool {
    state.withLock { state in
      guard !state.ended else { return true }
      state.items.append(.message(message))
      startDrainingIfNeeded(&state)
      if state.items.count > Self.highWatermark { state.paused = true }
      return !state.paused
    }
  }

  /// The connection has ended: it is unregistered after what is already queued is handled. Idempotent.
  public func finish() {
    state.withLock { state in
      guard !state.ended else { return }
      state.ended = true
      state.items.append(.end)
      startDrainingIfNeeded(&state)
    }
  }

  /// Call with the lock held.
  private func startDrainingIfNeeded(_ state: inout State) {
    guard !state.draining else { return }
    state.draining = true
    Task.detached { await self.drain() }
  }

  /// The next item, or `nil` (ending the handling task) when none is queued.
  private func next(_ session: RealtimeHub.Session) -> Item? {
    let (item, resumeNow): (Item?, Bool) = state.withLock { state in
      state.session = session
      guard let item = state.items.popFirst() else {
        // Idle connections keep no buffer and no task.
        state.draining = false
        return (nil, false)
      }
      var resumeNow = false
      if state.paused, state.items.count <= Self.lowWatermark {
        state.paused = false
        resumeNow = true
      }
      return (item, resumeNow)
    }
    if resumeNow { resume() }
    return item
  }

  private func drain() async {
    var session: RealtimeHub.Session
    if let existing = state.withLock({ $0.session }) {
      session = existing
    } else {
      // The first handling task (started by `init`) registers the connection; `transport` is set until then.
      let transport = state.withLock { state -> any RealtimeServerConnection in
        defer { state.transport = nil }
        return state.transport!
      }
      session = RealtimeHub.Session(id: await hub.state.register(transport: transport))
    }
    while let item = next(session) {
      switch item {
      case .message(let message):
        await hub.handle(message, session: &session)
      case .end:
        await hub.state.unregister(session.id)
      }
    }
  }
}

// Compile check of the README's example (kept in sync by copying); it is not run because it binds port 8080.
import Hummingbird
import RealtimeKit
import RealtimeKitHummingbird
import RealtimeKitWebSocketClient
import ServiceLifecycle

@available(*, deprecated, message: "documentation only")
func readmeExample() async throws {

  let hub = RealtimeHub(
    authenticate: { token in token == "secret-alice" ? RealtimePrincipal(id: "alice") : nil },
    authorize: { principal, access, channel in
      // The app decides: here, everyone may read group:1, and only a user may publish to their own channel.
      access == .subscribe ? channel.namespace == "group" : channel == .user(principal.id)
    }
  )
  let app = Application(
    router: Router(),  // the HTTP API's routes
    server: .realtime(hub: hub),  // WebSocket upgrades on /ws with subprotocol meridian.v1
    configuration: .init(address: .hostname("127.0.0.1", port: 8080))
  )
  // The hub is listed after the app, so on SIGTERM it closes sockets with 4004 before the server stops.
  let services = ServiceGroup(
    configuration: .init(
      services: [app, RealtimeHubService(hub: hub)], gracefulShutdownSignals: [.sigterm, .sigint], logger: app.logger)
  )
  let server = Task { try await services.run() }
  try await Task.sleep(for: .milliseconds(500))

  let client = RealtimeClient(
    transport: WebSocketRealtimeTransport(url: "ws://127.0.0.1:8080/ws"),
    configuration: RealtimeClientConfiguration(clientName: "example", clientVersion: "1.0", token: { "secret-alice" })
  )
  await client.start()
  let group = ChannelName.group("1")!
  await client.subscribe(group)
  Task {
    for await update in client.events {
      if case .event(let event) = update { print(event.channel, event.offset, event.payload) }  // group:1 1 ...
    }
  }
  try await Task.sleep(for: .milliseconds(200))
  await hub.publish(["lat": 50.45, "lon": 30.52], to: group)  // server-side push, e.g. a stored fix
  let ack = try await client.publish(["battery": 0.8], to: .user("alice")!)  // acknowledged exactly once
  print("published as offset", ack.offset)
  await client.stop()
  server.cancel()
}

import Foundation
import Logging
import MeridianAPI
import NIOCore
import NetworkingKit
import RealtimeKit
import RealtimeSocketIO
import Synchronization
import WSClient

/// Live latency over Socket.IO (`socketio.live.*`): a watcher signed in with `token` joins the namespace `/` on the
/// server at `port` the way the seed app's client does over WebSocket (Engine.IO v4, the token in `CONNECT`'s auth),
/// then ``liveLatencies(arrivals:posting:device:base:events:)`` posts and times. The server answers `CONNECT` once
/// the watcher is subscribed to everyone it may see, so the posting starts then. The tests drive the official
/// clients; this one only speaks what the timing needs (open, connect, pings, `message` events), on the same
/// packet codecs as the server.
func socketIOLiveLatencies(
  watching port: Int, token: String, posting api: NetworkClient, device: String, base: Int64
) async throws -> (latencies: [Duration], lost: Int) {
  let (arrivals, arrived) = AsyncStream<LiveArrival>.makeStream()
  let (joins, joined) = AsyncStream<Bool>.makeStream()
  let (stops, stop) = AsyncStream<Void>.makeStream()
  let url = "ws://127.0.0.1:\(port)/socket.io/?EIO=4&transport=websocket"
  let connection = Task {
    defer {
      joined.finish()
      arrived.finish()
    }
    _ = try await WebSocketClient.connect(
      url: url, configuration: WebSocketClientConfiguration(maxFrameSize: 1 << 22),
      logger: Logger(label: "meridian.bench.socketio")
    ) { inbound, outbound, _ in
      try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask {
          for await _ in stops { break }
          try await outbound.close(.normalClosure, reason: nil)
        }
        tasks.addTask {
          for try await message in inbound.messages(maxSize: 1 << 22) {
            guard case .text(let text) = message, let packet = try? EngineIOPacket(decoding: Substring(text)) else {
              continue
            }
            switch packet {
            case .open:
              let connect = SocketIOPacket(.connect, data: ["token": .string(token)])
              try await outbound.write(.text(EngineIOPacket.message(connect.encoded).encoded))
            case .ping(let data):
              try await outbound.write(.text(EngineIOPacket.pong(data).encoded))
            case .message(let text):
              guard let packet = try? SocketIOPacket(decoding: text) else { continue }
              switch packet.kind {
              case .connect: joined.yield(true)
              case .connectError: joined.yield(false)
              case .event:
                guard let event = packet.event, event.name == "message",
                  let location = try? event.arguments.first?.decode(as: LiveLocation.self),
                  let first = location.fixes.first
                else { continue }
                arrived.yield((first.timestamp, .now))  // decoded, as the /ws watcher's positions are
              default: continue
              }
            default:
              continue
            }
          }
        }
        _ = try await tasks.next()
        tasks.cancelAll()
      }
    }
  }
  defer {
    stop.finish()
    connection.cancel()
  }
  // The server answers CONNECT once the watcher is subscribed; 15 s is far more than that takes.
  let deadline = Task {
    try await Task.sleep(for: .seconds(15))
    joined.finish()
  }
  var answers = joins.makeAsyncIterator()
  let answer = await answers.next()
  deadline.cancel()
  guard answer == true else {
    throw BenchmarkFailure(
      description: answer == false
        ? "the Socket.IO server refused the watcher's token" : "the Socket.IO server did not answer CONNECT in 15 s")
  }
  let result = try await liveLatencies(arrivals: arrivals, posting: api, device: device, base: base)
  stop.yield()
  _ = await connection.result
  return result
}

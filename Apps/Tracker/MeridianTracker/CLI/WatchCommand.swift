import ArgumentParser
import DomainKit
import Foundation
import MeridianAPI

struct Watch: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Print friends' positions and your geofence events as they arrive over the live socket, until Ctrl-C.")

  @OptionGroup var options: StateOptions
  @OptionGroup var server: ServerOption
  @Option(help: "Watch only the members of your group with this name (e.g. Family).") var group: String?
  @Option(help: "Exit after this many position updates (for scripts).") var count: Int?
  @Flag(help: "Print one JSON object per line.") var json = false

  func validate() throws {
    if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
  }

  func run() async throws {
    try await reportingErrors {
      let session = try options.session()
      let json = self.json
      do {
        try await TrackerConnection.with(servers: try server.servers(for: session)) { connection in
          let watcher = FriendWatcher(session: session, client: try connection.client(token: session.token))
          try await watcher.watch(group: group, limit: count) { Self.print($0, json: json) }
        }
      } catch is CancellationError {
        throw Interrupted(message: "stopped watching.")
      }
    }
  }

  static func print(_ update: FriendWatcher.Update, json: Bool) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    switch update {
    case .watching(let people):
      if json {
        emitJSON(["watching": people.map(\.userId.rawValue)])
      } else {
        let names = people.map { $0.fullName ?? $0.userId.rawValue }
        Console.line(
          people.isEmpty ? "Nobody shares a location with you yet." : "Watching \(names.joined(separator: ", ")).")
      }
    case .location(let location, let name):
      if json {
        if let data = try? encoder.encode(location) { Console.line(String(decoding: data, as: UTF8.self)) }
      } else {
        // Every fix of the update (an upload can carry several), oldest first.
        for fix in location.fixes {
          Console.line(
            String(
              format: "%@ %@ %.6f %.6f ±%.0f m", Timestamp.formatISO8601(fix.timestamp),
              name ?? location.userId.rawValue, fix.latitude, fix.longitude, fix.horizontalAccuracy ?? 0))
        }
      }
    case .geofence(let event, let name):
      if json {
        emitJSON(["geofence": event])
      } else {
        let verb = ["enter": "arrived at", "exit": "left", "dwell": "is staying at"][event.kind.rawValue] ?? "was at"
        Console.line(
          "\(Timestamp.formatISO8601(event.timestamp)) \(name ?? event.userId.rawValue) \(verb) \(event.geofenceName)"
            + (event.reportedBy == .device ? " (reported by the device)" : ""))
      }
    case .watchingGeofences:
      if !json { Console.error("your geofence events from now on") }
    case .subscribed(let user):
      if json {
        emitJSON(["subscribed": user.rawValue])
      } else {
        Console.error("live updates of \(user) from now on")
      }
    case .stoppedSharing(let user):
      if json { emitJSON(["stoppedSharing": user.rawValue]) } else { Console.line("\(user) stopped sharing with you.") }
    case .connection(let state):
      if !json { Console.error("connection: \(state)") }
    }
  }

  static func emitJSON(_ value: [String: some Encodable]) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    if let data = try? encoder.encode(value) { Console.line(String(decoding: data, as: UTF8.self)) }
  }
}

import DomainKit
import Foundation
import Logging
import NIOCore
import NIOPosix

/// Where gpsd listens: `HOST:PORT`, `HOST` (port 2947) or `[IPv6]:PORT`.
public struct GPSDEndpoint: Sendable, Hashable, CustomStringConvertible {
  /// gpsd's registered port.
  public static let defaultPort = 2947

  /// The host name or address.
  public var host: String
  /// The TCP port.
  public var port: Int

  /// An endpoint.
  public init(host: String, port: Int = Self.defaultPort) {
    self.host = host
    self.port = port
  }

  /// Parses `HOST:PORT`, `HOST` or `[IPv6]:PORT`.
  /// - Throws: ``TrackerError/badArgument(_:)`` saying what is expected.
  public init(parsing text: String) throws {
    let bad = TrackerError.badArgument("--gpsd '\(text)' is not HOST:PORT (e.g. 127.0.0.1:2947)")
    var host = Substring(text.trimmingCharacters(in: .whitespaces))
    var portText: Substring?
    if host.hasPrefix("[") {
      guard let close = host.firstIndex(of: "]") else { throw bad }
      let rest = host[host.index(after: close)...]
      if !rest.isEmpty {
        guard rest.hasPrefix(":") else { throw bad }
        portText = rest.dropFirst()
      }
      host = host[host.index(after: host.startIndex)..<close]
    } else if let colon = host.lastIndex(of: ":") {
      guard host.firstIndex(of: ":") == colon else { throw bad }  // a bare IPv6 address needs brackets
      portText = host[host.index(after: colon)...]
      host = host[..<colon]
    }
    guard !host.isEmpty else { throw bad }
    var port = Self.defaultPort
    if let portText {
      guard let value = Int(portText), (1...65_535).contains(value) else { throw bad }
      port = value
    }
    self.init(host: String(host), port: port)
  }

  /// `host:port`.
  public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// gpsd's JSON reports, as far as the tracker needs them: a `TPV` (time-position-velocity) report with a 2D or 3D
/// fix becomes a ``LocationFix``; every other class (`VERSION`, `DEVICES`, `WATCH`, `SKY`, …) and TPVs without a
/// fix (mode 0 or 1) are ignored.
public enum GPSDReport {
  /// The command that asks gpsd to stream JSON reports.
  public static let watchCommand = #"?WATCH={"enable":true,"json":true}"# + "\n"

  private struct TPV: Decodable {
    var `class`: String
    var mode: Int?
    var time: Time?
    var lat: Double?
    var lon: Double?
    var alt: Double?
    var altMSL: Double?
    var altHAE: Double?
    var eph: Double?
    var epx: Double?
    var epy: Double?
    var epv: Double?
    var speed: Double?
    var eps: Double?
    var track: Double?
  }

  /// ISO 8601 text (gpsd ≥ 3.10) or epoch seconds (older protocol versions).
  private struct Time: Decodable {
    var milliseconds: Int64?
    init(from decoder: any Decoder) throws {
      let container = try decoder.singleValueContainer()
      if let text = try? container.decode(String.self) {
        milliseconds = Timestamp.parseISO8601(text)
      } else {
        milliseconds = Timestamp.milliseconds(epochSeconds: try container.decode(Double.self))
      }
    }
  }

  /// The fix in one line of gpsd output, or nil when the line is not a TPV report with a usable fix (mode ≥ 2, a
  /// time, a position in range).
  ///
  /// Accuracy is gpsd's `eph` when present, else the larger of `epx` and `epy` (gpsd's errors are 95 % estimates,
  /// so this errs on the safe side); `epv` and `eps` give the vertical and speed accuracy. Altitude is `altMSL`,
  /// else `alt`, else `altHAE`; `track` is the course.
  public static func fix(fromLine line: some StringProtocol, deviceID: DeviceID? = nil) -> LocationFix? {
    guard line.contains("\"TPV\""),
      let report = try? JSONDecoder().decode(TPV.self, from: Data(line.utf8)),
      report.class == "TPV", let mode = report.mode, mode >= 2,
      let timestamp = report.time?.milliseconds, let latitude = report.lat, let longitude = report.lon
    else { return nil }
    let horizontal = report.eph ?? [report.epx, report.epy].compactMap { $0 }.max()
    return try? LocationFix(
      deviceID: deviceID, timestamp: timestamp, latitude: latitude, longitude: longitude,
      horizontalAccuracy: horizontal, verticalAccuracy: report.epv,
      altitude: report.altMSL ?? report.alt ?? report.altHAE,
      speed: report.speed, speedAccuracy: report.eps, course: report.track.map { $0 == 360 ? 0 : $0 },
      kind: .movement, trigger: .automatic)
  }
}

/// A gpsd client: connects over TCP, sends `?WATCH={"enable":true,"json":true}`, and turns the TPV reports into
/// fixes. When gpsd closes the connection or can't be reached, it reconnects after `reconnectDelay`, doubling up to
/// `maximumReconnectDelay` while attempts fail; the stream only ends when its consumer stops.
public struct GPSDClient: Sendable {
  /// Where gpsd listens.
  public var endpoint: GPSDEndpoint
  /// The first wait before reconnecting.
  public var reconnectDelay: Duration
  /// The longest wait before reconnecting.
  public var maximumReconnectDelay: Duration
  /// Where connection problems are reported.
  public var logger: Logger

  /// A client.
  public init(
    endpoint: GPSDEndpoint, reconnectDelay: Duration = .seconds(1), maximumReconnectDelay: Duration = .seconds(30),
    logger: Logger = Logger(label: "meridian-tracker.gpsd")
  ) {
    self.endpoint = endpoint
    self.reconnectDelay = reconnectDelay
    self.maximumReconnectDelay = maximumReconnectDelay
    self.logger = logger
  }

  /// The fixes, as gpsd reports them. Fixes without an accuracy get `defaultAccuracy`.
  public func fixes(defaultAccuracy: Double?) -> AsyncThrowingStream<LocationFix, any Error> {
    AsyncThrowingStream { continuation in
      let task = Task {
        var delay = reconnectDelay
        while !Task.isCancelled {
          do {
            let received = try await session(defaultAccuracy: defaultAccuracy) { continuation.yield($0) }
            if received > 0 { delay = reconnectDelay }
            logger.warning("gpsd closed the connection", metadata: ["gpsd": "\(endpoint)"])
          } catch is CancellationError {
            break
          } catch {
            logger.warning("gpsd unreachable", metadata: ["gpsd": "\(endpoint)", "error": "\(error)"])
          }
          guard !Task.isCancelled else { break }
          logger.info("reconnecting to gpsd", metadata: ["in": "\(delay)"])
          do { try await Task.sleep(for: delay) } catch { break }
          delay = min(delay * 2, maximumReconnectDelay)
        }
        continuation.finish()
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }

  /// One connection: watch, then read lines until gpsd closes it. Returns the number of fixes emitted.
  func session(defaultAccuracy: Double?, emit: (LocationFix) -> Void) async throws -> Int {
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .connectTimeout(.seconds(5))
      .connect(host: endpoint.host, port: endpoint.port) { channel in
        channel.eventLoop.makeCompletedFuture {
          try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
        }
      }
    return try await channel.executeThenClose { inbound, outbound in
      try await outbound.write(ByteBuffer(string: GPSDReport.watchCommand))
      var pending: [UInt8] = []
      var emitted = 0
      for try await var buffer in inbound {
        pending += buffer.readBytes(length: buffer.readableBytes) ?? []
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
          let line = String(decoding: pending[..<newline], as: UTF8.self)
          pending.removeSubrange(...newline)
          guard var fix = GPSDReport.fix(fromLine: line) else { continue }
          if fix.horizontalAccuracy == nil { fix.horizontalAccuracy = defaultAccuracy }
          emit(fix)
          emitted += 1
        }
        // gpsd's reports are short lines; a megabyte without a line break is not gpsd.
        if pending.count > 1 << 20 { throw TrackerError.badSource("\(endpoint) does not speak the gpsd protocol") }
      }
      return emitted
    }
  }
}

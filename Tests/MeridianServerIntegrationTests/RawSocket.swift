import Foundation
import MeridianTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A blocking TCP connection to 127.0.0.1 that sends bytes exactly as given: for requests no HTTP client would send.
final class RawSocket: Sendable {
  private let descriptor: Int32

  /// Connects to `127.0.0.1:port`.
  init(port: Int) throws {
    descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard result == 0 else {
      Glibc.close(descriptor)
      throw POSIXError(.init(rawValue: errno) ?? .ECONNREFUSED)
    }
  }

  /// Sends every byte of `bytes`.
  func send(_ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
      let sent = bytes[offset...].withUnsafeBytes {
        Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      guard sent > 0 else { throw POSIXError(.init(rawValue: errno) ?? .EPIPE) }
      offset += sent
    }
  }

  /// Reads until the server closes the connection (true) or `timeout` passes (false), with what arrived. The
  /// blocking `poll` runs on a thread of its own (``onOwnThread(_:)``).
  func readUntilClosed(timeout: Duration) async -> (bytes: [UInt8], closed: Bool) {
    await onOwnThread { self.pollUntilClosed(timeout: timeout) }
  }

  private func pollUntilClosed(timeout: Duration) -> (bytes: [UInt8], closed: Bool) {
    let deadline = ContinuousClock.now + timeout
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while ContinuousClock.now < deadline {
      let left = deadline - ContinuousClock.now
      let milliseconds = Int32(
        max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
      var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      guard poll(&poller, 1, milliseconds) > 0 else { continue }
      let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
      if count == 0 { return (received, true) }
      if count < 0 { return (received, errno == ECONNRESET) }
      received += buffer[0..<count]
    }
    return (received, false)
  }

  /// Closes the connection.
  func close() { Glibc.close(descriptor) }
}

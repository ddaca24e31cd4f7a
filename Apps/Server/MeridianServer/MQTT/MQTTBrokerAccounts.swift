import Crypto
import DomainKit
import Foundation
import Logging
import MeridianSecrets

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The devices' accounts on the MQTT broker, kept in the two files plain Mosquitto reads: a `password_file` in the
/// format of `mosquitto_passwd` (`name:$6$<salt>$<SHA-512 of password and salt>`, base64) and an `acl_file` that
/// lets each device write only under `owntracks/<device>/<device>` and read only under `owntracks/<device>/` (where
/// the server publishes its friends). The server's own account may read and write all of `owntracks/`. After each
/// change the files are replaced whole (written beside, then renamed) and the broker is sent SIGHUP, on which it
/// reads them again.
///
/// A device's broker user name is its device id, which is unique across accounts: the topic a message arrives on
/// names the device, and the broker's ACL guarantees only that device's password could publish there. The
/// password file is where the credentials live: revoking removes the device's line.
actor MQTTBrokerAccounts {
  let passwordFile: String
  let aclFile: String
  let brokerPIDFile: String?
  /// The server's own account, written into both files.
  let serverAccount: (name: String, password: String)?
  let logger: Logger

  init?(settings: MQTTSettings, logger: Logger) {
    guard let passwordFile = settings.passwordFile, let aclFile = settings.aclFile else { return nil }
    self.passwordFile = passwordFile
    self.aclFile = aclFile
    brokerPIDFile = settings.brokerPIDFile
    if let name = settings.username {
      serverAccount = (name, settings.password ?? "")
    } else {
      serverAccount = nil
    }
    self.logger = logger
  }

  /// Whether `name` can be a broker user name and a topic level: 1 to 64 letters, digits, `.`, `_` or `-`.
  static func isAccountName(_ name: String) -> Bool {
    (1...64).contains(name.utf8.count)
      && name.utf8.allSatisfy { byte in
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
          || byte == 0x2E || byte == 0x5F || byte == 0x2D
      }
  }

  /// The topic a device publishes its locations to.
  static func topic(of device: DeviceID) -> String { "owntracks/\(device.rawValue)/\(device.rawValue)" }

  /// Rewrites both files from the device lines the password file holds (the server's own account with the
  /// configured password), so that a changed server password or a lost ACL file is repaired at start.
  func prepare() throws {
    try write(devices: try readDevices())
  }

  /// Whether `device` would take the server's own account name (which reads and writes all of `owntracks/`).
  func isReserved(_ device: DeviceID) -> Bool { device.rawValue == serverAccount?.name }

  /// Gives `device` a new random password (replacing the one it had) and returns it; never for the server's own
  /// account name (``isReserved(_:)``).
  func issue(device: DeviceID) throws -> String {
    guard !isReserved(device) else { throw ReservedAccountName(name: device.rawValue) }
    let password = Secrets.token()
    var devices = try readDevices().filter { $0.name != device.rawValue }
    devices.append((device.rawValue, Self.passwordHash(password)))
    try write(devices: devices)
    return password
  }

  /// Removes `device`'s account; returns whether it had one.
  func revoke(device: DeviceID) throws -> Bool {
    let devices = try readDevices()
    let kept = devices.filter { $0.name != device.rawValue }
    guard kept.count < devices.count else { return false }
    try write(devices: kept)
    return true
  }

  /// Whether `device` has an account.
  func hasAccount(_ device: DeviceID) throws -> Bool {
    try readDevices().contains { $0.name == device.rawValue }
  }

  /// The hash of `password` as `mosquitto_passwd` writes it with `-H sha512`: `$6$`, the base64 of 12 random
  /// bytes of salt, `$`, the base64 of SHA-512 over the password's bytes and then the salt's. (A single SHA-512
  /// is enough for passwords of 256 random bits; Mosquitto also reads it.)
  static func passwordHash(_ password: String, salt: [UInt8]? = nil) -> String {
    let salt = salt ?? (0..<12).map { _ in UInt8.random(in: 0...255) }
    var hash = SHA512()
    hash.update(data: Array(password.utf8))
    hash.update(data: salt)
    return "$6$" + Data(salt).base64EncodedString() + "$" + Data(hash.finalize()).base64EncodedString()
  }

  /// The ACL file's text for `devices` (and the server's account).
  static func acl(devices: [String], server: String?) -> String {
    var text = "# Written by meridian-server (MERIDIAN_MQTT_ACL_FILE): each change of a device's MQTT credentials\n"
    text += "# replaces this file. Edit the server's settings, not this file.\n"
    if let server { text += "\nuser \(server)\ntopic readwrite owntracks/#\n" }
    for device in devices {
      text += "\nuser \(device)\ntopic write owntracks/\(device)/\(device)/#\ntopic read owntracks/\(device)/#\n"
    }
    return text
  }

  private func readDevices() throws -> [(name: String, hash: String)] {
    guard FileManager.default.fileExists(atPath: passwordFile) else { return [] }
    let text = try String(contentsOfFile: passwordFile, encoding: .utf8)
    return text.split(separator: "\n").compactMap { line in
      let parts = line.split(separator: ":", maxSplits: 1)
      guard parts.count == 2, !line.hasPrefix("#") else { return nil }
      let name = String(parts[0])
      guard name != serverAccount?.name, Self.isAccountName(name) else { return nil }
      return (name, String(parts[1]))
    }
  }

  /// Writes both files and signals the broker, unless they already hold exactly this (a restart of the server
  /// changes nothing, and signals nothing: a SIGHUP that reaches a broker still starting would end it).
  private func write(devices: [(name: String, hash: String)]) throws {
    var passwords = ""
    if let serverAccount {
      passwords += "\(serverAccount.name):\(serverHash(password: serverAccount.password))\n"
    }
    for device in devices { passwords += "\(device.name):\(device.hash)\n" }
    let acl = Self.acl(devices: devices.map(\.name), server: serverAccount?.name)
    guard Self.contents(passwordFile) != passwords || Self.contents(aclFile) != acl else { return }
    try Self.replace(passwordFile, with: passwords)
    try Self.replace(aclFile, with: acl)
    signalBroker()
  }

  /// The server's line as the password file has it when it still matches `password`, else a new hash.
  private func serverHash(password: String) -> String {
    let line = Self.contents(passwordFile)?.split(separator: "\n").first {
      $0.hasPrefix("\(serverAccount?.name ?? ""):")
    }
    if let hash = line?.split(separator: ":", maxSplits: 1).last.map(String.init) {
      let parts = hash.split(separator: "$")
      if parts.count == 3, parts[0] == "6", let salt = Data(base64Encoded: String(parts[1])),
        Self.passwordHash(password, salt: Array(salt)) == hash
      {
        return hash
      }
    }
    return Self.passwordHash(password)
  }

  private static func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

  /// Writes `text` beside `path` and renames it over `path`, so the broker never reads half a file.
  private static func replace(_ path: String, with text: String) throws {
    let temporary = path + ".new"
    try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
    guard rename(temporary, path) == 0 else {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
    }
  }

  /// Sends SIGHUP to the process of the broker's pid file, if configured.
  private func signalBroker() {
    guard let brokerPIDFile else { return }
    guard let text = try? String(contentsOfFile: brokerPIDFile, encoding: .utf8),
      let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
    else {
      logger.warning("MQTT: no broker pid in \(brokerPIDFile); the broker reads the new accounts when reloaded")
      return
    }
    if kill(pid, SIGHUP) != 0 {
      logger.warning("MQTT: could not signal the broker (pid \(pid)): errno \(errno)")
    }
  }
}

/// A device named like the server's own broker account.
struct ReservedAccountName: Error, CustomStringConvertible {
  let name: String
  var description: String { "'\(name)' is the server's own broker account" }
}

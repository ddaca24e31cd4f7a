import DomainKit
import Foundation
import Logging
import Testing

@testable import MeridianServer

/// The broker's files the server writes for Mosquitto (issue 40 §1). That Mosquitto reads them is
/// `OwnTracksMQTTTests`' part (a real broker accepts the passwords and refuses others).
struct MQTTBrokerAccountsTests {
  /// `mosquitto_passwd -H sha512`'s form: `$6$`, base64 salt, base64 SHA-512 of the password then the salt
  /// (the reference value computed with Python's hashlib).
  @Test func passwordHashIsMosquittosSHA512Form() {
    #expect(
      MQTTBrokerAccounts.passwordHash("correct horse", salt: Array(0..<12))
        == "$6$AAECAwQFBgcICQoL$5W8GCQ9GLgmhmQvoa8jmRaPnsh82mRigdSv6mQsK0sMIII/WznlQb1g+RWddfoAKTMzBJP1deJU+Rp/1QZ0zZg=="
    )
  }

  /// Issuing writes both files; revoking removes the device; a restart that changes nothing rewrites nothing (and so
  /// signals no broker); the server's own account is never a device's.
  @Test func issueRevokeAndAnUnchangedRestart() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mqtt-accounts-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    var settings = MQTTSettings(host: "127.0.0.1")
    settings.username = "meridian"
    settings.password = "server secret"
    settings.passwordFile = directory.appendingPathComponent("passwd").path
    settings.aclFile = directory.appendingPathComponent("acl").path
    let accounts = try #require(MQTTBrokerAccounts(settings: settings, logger: Logger(label: "test")))
    func file(_ path: String?) throws -> String { try String(contentsOfFile: try #require(path), encoding: .utf8) }

    try await accounts.prepare()
    let password = try await accounts.issue(device: "anna-phone")
    #expect(password.count == 43)
    let passwords = try file(settings.passwordFile)
    #expect(passwords.hasPrefix("meridian:$6$") && passwords.contains("\nanna-phone:$6$"))
    #expect(
      try file(settings.aclFile).contains(
        "user meridian\ntopic readwrite owntracks/#\n\nuser anna-phone\ntopic write owntracks/anna-phone/anna-phone/#\n"
          + "topic read owntracks/anna-phone/#\n"))
    // A new instance (a restart) with the same settings leaves the files as they were, byte for byte.
    let again = try #require(MQTTBrokerAccounts(settings: settings, logger: Logger(label: "test")))
    try await again.prepare()
    #expect(try file(settings.passwordFile) == passwords)
    #expect(try await again.hasAccount("anna-phone"))
    #expect(try await again.revoke(device: "anna-phone"))
    #expect(try await !again.revoke(device: "anna-phone"))
    #expect(!(try file(settings.passwordFile)).contains("anna-phone"))
    await #expect(throws: ReservedAccountName.self) { try await again.issue(device: "meridian") }
  }
}

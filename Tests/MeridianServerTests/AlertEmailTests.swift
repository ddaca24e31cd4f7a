import Foundation
import Testing

@testable import MeridianServer

/// An alert's email as text: dot-stuffing and CRLF (RFC 5321 §4.5.2), encoded words for a subject that is not ASCII,
/// the headers and body of a geofence event, the recipient rule and the `MERIDIAN_SMTP_*` settings.
@Suite("Alert emails")
struct AlertEmailTests {
  @Test func dataIsDotStuffedWithCRLFLinesAndEndsWithADot() {
    #expect(SMTPClient.dotStuffed("a\r\n.b\n..c\rd\r\n") == "a\r\n..b\r\n...c\r\nd\r\n.\r\n")
    #expect(SMTPClient.dotStuffed(".") == "..\r\n.\r\n")
    #expect(SMTPClient.dotStuffed("") == ".\r\n")
  }

  @Test func aSubjectThatIsNotASCIIIsEncodedWordsOfWholeCharacters() throws {
    #expect(AlertEmail.encodedWords("Home\r\nBcc: x") == "Home  Bcc: x")
    let long = String(repeating: "é", count: 40) + "☕"
    let words = AlertEmail.encodedWords(long).components(separatedBy: "\r\n ")
    #expect(words.count == 2)
    let decoded = try words.map { word in
      #expect(word.count <= 75)
      let base64 = word.dropFirst("=?UTF-8?B?".count).dropLast(2)
      return String(decoding: try #require(Data(base64Encoded: String(base64))), as: UTF8.self)
    }
    #expect(decoded.joined() == long)
  }

  @Test func aGeofenceEventReadsWhoWhereWhatAndWhen() throws {
    let envelope = Data(
      #"{"id":"e1","kind":"geofence.exit","userId":"u1","occurredAt":1796000000000,"data":{"userId":"u1","geofenceName":"Home"}}"#
        .utf8)
    let email = AlertEmail(
      envelope: envelope, personName: "Anna", deliveryID: "d1", from: "alerts@meridian.test",
      to: "anna@example.com", now: 1796000000000)
    let (head, body) = try #require(
      email.message.range(of: "\r\n\r\n").map { (email.message[..<$0.lowerBound], email.message[$0.upperBound...]) })
    #expect(
      head.components(separatedBy: "\r\n") == [
        "Date: Mon, 30 Nov 2026 00:53:20 +0000", "Message-ID: <d1@meridian.test>",
        "From: Meridian <alerts@meridian.test>",
        "To: <anna@example.com>", "Subject: Anna left Home at 2026-11-30 00:53 UTC.", "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 7bit",
      ])
    #expect(
      body
        == "Anna left Home at 2026-11-30 00:53 UTC.\r\n\r\nWho: Anna\r\nWhere: Home\r\nWhat: departure (geofence.exit)\r\n"
        + "When: 2026-11-30 00:53 UTC\r\n\r\n-- \r\nMeridian alert d1\r\n")
  }

  @Test func aPersonWhoseNameTheRecipientMayNotSeeIsSomeoneNeverTheirID() {
    let envelope = Data(
      #"{"id":"e1","kind":"geofence.enter","userId":"u1","occurredAt":1796000000000,"data":{"userId":"u1","geofenceName":"Home"}}"#
        .utf8)
    #expect(AlertMessage.personID(envelope: envelope) == "u1")
    for name in [nil, ""] {
      let message = AlertMessage(envelope: envelope, personName: name)
      #expect(message.text == "Someone arrived at Home at 2026-11-30 00:53 UTC.")
      #expect(message.details.first == "Who: Someone")
    }
  }

  @Test func aProximityEventReadsWhoAndWhatNearTheOwner() throws {
    func message(_ kind: String) -> AlertMessage {
      AlertMessage(
        envelope: Data(
          #"{"id":"e1","kind":"\#(kind)","userId":"u1","occurredAt":1796000000000,"data":{"userId":"u2","geofenceName":"","proximity":{"ruleId":"r1","kind":"near","radius":200}}}"#
            .utf8), personName: "Bob")
    }
    let near = message("proximity.near")
    #expect(
      near.title == "Nearby" && near.text == "Bob is near you (200 m) at 2026-11-30 00:53 UTC." && near.priority == 4)
    #expect(near.details == ["Who: Bob", "What: near (proximity.near)", "When: 2026-11-30 00:53 UTC"])
    #expect(message("proximity.apart").text == "Bob moved apart from you at 2026-11-30 00:53 UTC.")
    #expect(message("proximity.dwell").priority == 3)
  }

  @Test func theRecipientIsAnASCIIAddressKeptAsItsMailtoURL() throws {
    #expect(try AlertEmail.recipientURL("anna@Example.COM") == "mailto:anna@example.com")
    #expect(try AlertEmail.recipientURL("mailto:anna@example.com") == "mailto:anna@example.com")
    for bad in ["", "mailto:", "anna", "anna@example", "an na@example.com", "anna@exämple.com", "a\u{1}@example.com"] {
      #expect(throws: (any Error).self, "\(bad)") { try AlertEmail.recipientURL(bad) }
    }
  }

  @Test func theSMTPSettingsAreReadFromTheEnvironment() throws {
    #expect(try SMTPSettings.read([:]) == nil)
    let settings = try #require(
      try SMTPSettings.read([
        "MERIDIAN_SMTP_HOST": "mail.example.com", "MERIDIAN_SMTP_FROM": "alerts@example.com",
        "MERIDIAN_SMTP_PORT": "2525", "MERIDIAN_SMTP_USERNAME": "u", "MERIDIAN_SMTP_PASSWORD": "p",
        "MERIDIAN_SMTP_STARTTLS": "required", "MERIDIAN_SMTP_TIMEOUT": "5",
      ]))
    #expect(settings.host == "mail.example.com" && settings.port == 2525 && settings.sender == "alerts@example.com")
    #expect(settings.username == "u" && settings.password == "p" && settings.startTLS == .required)
    #expect(settings.stepTimeout == .seconds(5))
    let base = ["MERIDIAN_SMTP_HOST": "mail.example.com", "MERIDIAN_SMTP_FROM": "alerts@example.com"]
    for (name, value) in [
      ("MERIDIAN_SMTP_FROM", ""), ("MERIDIAN_SMTP_FROM", "nobody"), ("MERIDIAN_SMTP_PORT", "0"),
      ("MERIDIAN_SMTP_USERNAME", "u"), ("MERIDIAN_SMTP_STARTTLS", "maybe"), ("MERIDIAN_SMTP_TIMEOUT", "0"),
    ] {
      #expect(throws: ConfigurationError.self, "\(name)=\(value)") {
        try SMTPSettings.read(base.merging([name: value]) { $1 })
      }
    }
  }
}

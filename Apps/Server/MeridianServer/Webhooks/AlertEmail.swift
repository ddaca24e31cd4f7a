import DomainKit
import Foundation
import MeridianAPI

/// The email of one alert (RFC 5322, lines ending CRLF): `Date`, `Message-ID` (the delivery's id, the same on every
/// retry, so a receiver can drop a duplicate), `From`, `To`, `Subject` (the ``AlertMessage`` text, RFC 2047 encoded
/// words when not ASCII), `MIME-Version`, `Content-Type: text/plain; charset=utf-8`, and a plain-text body: the text,
/// then who, where, what and when (``AlertMessage/details``), base64 when not ASCII so any server takes it.
struct AlertEmail: Sendable, Hashable {
  /// The sender's address.
  var from: String
  /// The recipient's address.
  var to: String
  /// The whole message, headers and body, lines ending CRLF (not yet dot-stuffed: ``SMTPClient`` does that).
  var message: String

  /// The email of the outbox event `envelope` (the JSON a webhook receives) for delivery `deliveryID`, sent at
  /// `now` (UTC milliseconds), naming the person it is about `personName` (``AlertMessage``).
  init(envelope: Data, personName: String? = nil, deliveryID: String, from: String, to: String, now: Int64) {
    self.from = from
    self.to = to
    let alert = AlertMessage(envelope: envelope, personName: personName)
    let domain = from.split(separator: "@").last.map(String.init) ?? "meridian.invalid"
    let body =
      ([alert.text, ""] + alert.details + ["", "-- ", "Meridian alert \(deliveryID)"])
      .joined(separator: "\r\n") + "\r\n"
    let ascii = body.unicodeScalars.allSatisfy { $0.isASCII }
    let headers = [
      "Date: " + Self.date(now),
      "Message-ID: <\(deliveryID)@\(domain)>",
      "From: Meridian <\(from)>",
      "To: <\(to)>",
      "Subject: " + Self.encodedWords(String(alert.text.trimmingCharacters(in: .whitespaces))),
      "MIME-Version: 1.0",
      "Content-Type: text/plain; charset=utf-8",
      "Content-Transfer-Encoding: " + (ascii ? "7bit" : "base64"),
    ]
    let encodedBody =
      ascii
      ? body
      : Data(body.utf8).base64EncodedString(options: [
        .lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed,
      ]) + "\r\n"
    message = headers.joined(separator: "\r\n") + "\r\n\r\n" + encodedBody
  }

  /// The recipient of an email channel's `url` (`mailto:name@example.com` or the bare address), checked
  /// (``EmailAddress/validate(_:)``, ASCII only: the SMTP client does not ask for SMTPUTF8) and returned as its
  /// `mailto:` URL, the form that is stored.
  /// - Throws: ``APIError`` `400 invalid_email`.
  static func recipientURL(_ url: String) throws(APIError) -> String {
    let text = url.hasPrefix("mailto:") ? String(url.dropFirst("mailto:".count)) : url
    do throws(CredentialError) {
      let address = try EmailAddress.validate(text)
      guard address.unicodeScalars.allSatisfy({ (0x21...0x7e).contains($0.value) }) else {
        throw CredentialError.emailInvalidCharacters
      }
      return "mailto:" + address
    } catch {
      throw APIError(
        status: 400, code: .invalidEmail,
        message: "An email channel's url is its recipient, like mailto:name@example.com: \(error.description)")
    }
  }

  /// The address of a stored `mailto:` URL.
  static func address(ofURL url: String) -> String {
    url.hasPrefix("mailto:") ? String(url.dropFirst("mailto:".count)) : url
  }

  /// RFC 5322 date-time in UTC: `Sun, 29 Nov 2026 06:52:40 +0000`.
  static func date(_ milliseconds: Int64) -> String {
    AlertMessage.utc(milliseconds, "EEE, dd MMM yyyy HH:mm:ss '+0000'")
  }

  /// `text` as a header value: control characters become spaces; ASCII as it is, else RFC 2047 `=?UTF-8?B?…?=`
  /// words of at most 45 bytes of UTF-8 each (under the 75 characters a word may have), whole characters, folded.
  static func encodedWords(_ text: String) -> String {
    let flat = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
    if flat.unicodeScalars.allSatisfy({ $0.isASCII }) { return flat }
    var words: [String] = []
    var chunk = ""
    for character in flat {
      if chunk.utf8.count + String(character).utf8.count > 45 {
        words.append(chunk)
        chunk = ""
      }
      chunk.append(character)
    }
    if !chunk.isEmpty { words.append(chunk) }
    return words.map { "=?UTF-8?B?" + Data($0.utf8).base64EncodedString() + "?=" }.joined(separator: "\r\n ")
  }
}

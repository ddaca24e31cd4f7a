import Foundation

/// The short text a person's alert channel shows for one outbox event, read from the event's envelope (the JSON a
/// webhook receives): a title, a one-line message, ntfy tags and a priority.
///
/// A geofence event reads "<person> arrived at <fence>" (left, stayed at), titled with the fence's name; a proximity
/// event "<person> is near you (<radius> m)" (moved apart from you, has been near you for a while), titled "Nearby" —
/// the person by the name the delivery gives (their full name where the recipient may see it), else "Someone", never
/// an id; a test event its message; any other kind its kind.
struct AlertMessage: Sendable, Hashable {
  /// A few words: the fence's name, or "Meridian".
  var title: String
  /// One sentence.
  var text: String
  /// ntfy tags (an emoji short code first, then the event kind).
  var tags: [String]
  /// ntfy priority, 1 (min) … 5 (max): 4 for an arrival or departure, 3 otherwise.
  var priority: Int
  /// The facts behind ``text``, one `Label: value` line each (who, where, what, when), for a longer message (email).
  var details: [String]

  /// The message of the envelope `body` (`{"id","kind","userId","occurredAt","data"}`), naming the person the event
  /// is about `personName` (nil or empty: "Someone").
  init(envelope body: Data, personName: String? = nil) {
    let envelope = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
    let kind = envelope["kind"] as? String ?? "event"
    let data = envelope["data"] as? [String: Any] ?? [:]
    let occurredAt = (envelope["occurredAt"] as? NSNumber)?.int64Value
    let when = occurredAt.map { " at " + Self.time($0) } ?? ""
    let whenLine = occurredAt.map { ["When: " + Self.time($0)] } ?? []
    let person = personName.flatMap { $0.isEmpty ? nil : $0 } ?? "Someone"
    switch kind {
    case "geofence.enter", "geofence.exit", "geofence.dwell":
      let fence = data["geofenceName"] as? String ?? "a place"
      let verb =
        switch kind {
        case "geofence.enter": "arrived at"
        case "geofence.exit": "left"
        default: "is staying at"
        }
      title = fence
      text = "\(person) \(verb) \(fence)\(when)."
      tags = [kind == "geofence.exit" ? "outbox_tray" : "round_pushpin", kind]
      priority = kind == "geofence.dwell" ? 3 : 4
      let what = ["geofence.enter": "arrival", "geofence.exit": "departure"][kind] ?? "stay"
      details = ["Who: \(person)", "Where: \(fence)", "What: \(what) (\(kind))"] + whenLine
    case "proximity.near", "proximity.apart", "proximity.dwell":
      let proximity = data["proximity"] as? [String: Any] ?? [:]
      let metres = (proximity["radius"] as? NSNumber).map { " (\(Int($0.doubleValue.rounded())) m)" } ?? ""
      let (verb, what) =
        switch kind {
        case "proximity.near": ("is near you\(metres)", "near")
        case "proximity.apart": ("moved apart from you", "apart")
        default: ("has been near you for a while", "staying near")
        }
      title = "Nearby"
      text = "\(person) \(verb)\(when)."
      tags = [kind == "proximity.apart" ? "wave" : "people_holding_hands", kind]
      priority = kind == "proximity.dwell" ? 3 : 4
      details = ["Who: \(person)", "What: \(what) (\(kind))"] + whenLine
    default:
      title = "Meridian"
      text = data["message"] as? String ?? "\(kind)\(when)."
      tags = ["bell", kind]
      priority = 3
      details = ["What: \(kind)"] + whenLine
    }
  }

  /// The id of the person a geofence or proximity event of the envelope `body` is about (`data.userId`), if any.
  static func personID(envelope body: Data) -> String? {
    let envelope = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    return (envelope?["data"] as? [String: Any])?["userId"] as? String
  }

  /// `yyyy-MM-dd HH:mm UTC` of UTC milliseconds.
  static func time(_ milliseconds: Int64) -> String { utc(milliseconds, "yyyy-MM-dd HH:mm 'UTC'") }

  /// UTC milliseconds in the fixed (POSIX locale, UTC) date `format`.
  static func utc(_ milliseconds: Int64, _ format: String) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = format
    return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
  }

  /// `text` as one header value: control characters become spaces, and non-ASCII text is an RFC 2047 encoded word
  /// (`=?UTF-8?B?…?=`, which ntfy decodes), so that a fence named in any script reaches the header intact.
  static func headerValue(_ text: String) -> String {
    let flat = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
    if flat.unicodeScalars.allSatisfy({ $0.isASCII }) { return flat }
    return "=?UTF-8?B?" + Data(flat.utf8).base64EncodedString() + "?="
  }
}

import Foundation

/// The web app: where its files are and which map tiles it shows.
///
/// | setting | default | variable |
/// |---|---|---|
/// | the app's files | the `Site` folder bundled with the server | `MERIDIAN_WEB_DIR` |
/// | Leaflet | Debian's `libjs-leaflet`, `/usr/share/javascript/leaflet` | `MERIDIAN_LEAFLET_DIR` |
/// | tile URL template | OpenStreetMap's standard tiles; `none` shows no tiles | `MERIDIAN_TILE_URL` |
/// | tile attribution | © OpenStreetMap contributors | `MERIDIAN_TILE_ATTRIBUTION` |
public struct WebAppSettings: Sendable, Hashable {
  /// The folder of `index.html` and the app's modules; nil serves the copy SwiftPM bundles with the server.
  public var directory: String?
  /// The folder of `leaflet.esm.js`, `leaflet.css` and `images/`.
  public var leafletDirectory = "/usr/share/javascript/leaflet"
  /// The tiles' URL template (`{z}`, `{x}`, `{y}`, optionally `{s}`), or nil for a map without tiles.
  public var tileURL: String? = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
  /// The tiles' attribution (HTML, shown in the map's corner).
  public var tileAttribution =
    "© <a href=\"https://www.openstreetmap.org/copyright\">OpenStreetMap</a> contributors"

  /// The defaults.
  public init() {}

  /// Reads `MERIDIAN_WEB_DIR`, `MERIDIAN_LEAFLET_DIR`, `MERIDIAN_TILE_URL` and `MERIDIAN_TILE_ATTRIBUTION`.
  /// - Throws: ``ConfigurationError`` for a tile URL that is not an http(s) template.
  mutating func read(_ environment: [String: String]) throws(ConfigurationError) {
    func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
    if let directory = value("MERIDIAN_WEB_DIR") { self.directory = directory }
    if let directory = value("MERIDIAN_LEAFLET_DIR") { leafletDirectory = directory }
    if let template = value("MERIDIAN_TILE_URL") {
      if template == "none" {
        tileURL = nil
      } else {
        guard Self.tileOrigin(template) != nil else {
          throw ConfigurationError(
            setting: "MERIDIAN_TILE_URL", value: template,
            reason: "must be an http(s) URL template such as https://tile.openstreetmap.org/{z}/{x}/{y}.png, or none")
        }
        tileURL = template
      }
    }
    if let attribution = value("MERIDIAN_TILE_ATTRIBUTION") { tileAttribution = attribution }
  }

  /// The origin of a tile template for the Content-Security-Policy (`{s}` becomes `*`): `https://*.tile.example`.
  static func tileOrigin(_ template: String) -> String? {
    for scheme in ["https://", "http://"] where template.hasPrefix(scheme) {
      let host = template.dropFirst(scheme.count).prefix { $0 != "/" }
      let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: ".-:[]{}"))
      guard !host.isEmpty, host.unicodeScalars.allSatisfy(allowed.contains) else { return nil }
      return scheme + host.replacingOccurrences(of: "{s}", with: "*")
    }
    return nil
  }
}

import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PersistenceKitStrings

/// The web app a person opens in a browser: `GET /` (the page), `/app/…` (its ES modules, CSS and images),
/// `/vendor/leaflet/…` (Leaflet from the system's `libjs-leaflet`), `/app/config.json` (the tiles) and
/// `/app/strings.json` (the texts of one language from the app's String Catalog, chosen by `?lang=` or the
/// browser's `Accept-Language`).
///
/// The page signs in through the HTTP API and keeps the bearer token in memory only (no cookie, so no request can be
/// forged from another site, and nothing survives a reload). Every answer of these routes carries a
/// Content-Security-Policy that allows scripts, styles and connections of this origin only (no `unsafe-inline`), and
/// images from here and from the tile server.
struct WebAppFeature: Sendable {
  /// The folder of the app's files.
  let directory: URL
  /// Leaflet's folder.
  let leaflet: URL
  /// The tiles and their attribution.
  let settings: WebAppSettings
  /// The texts, loaded once.
  let catalog: StringCatalog

  /// The feature for `settings`; throws when the String Catalog is missing or malformed.
  init(settings: WebAppSettings) throws {
    self.settings = settings
    directory = settings.directory.map { URL(fileURLWithPath: $0) } ?? Self.bundledSite
    leaflet = URL(fileURLWithPath: settings.leafletDirectory)
    do {
      catalog = try StringCatalog(contentsOf: directory.appendingPathComponent("strings.xcstrings"))
    } catch {
      throw CompositionError(
        message: "the web app's string catalog \(directory.path)/strings.xcstrings can't be read: \(error)")
    }
  }

  /// The `Site` folder SwiftPM copies next to the server's executable.
  static var bundledSite: URL { Bundle.module.bundleURL.appendingPathComponent("Site") }

  /// The languages offered, the catalog's source language first.
  var languages: [String] { catalog.languages }

  func register(on router: Router<MeridianRequestContext>) {
    let policy = contentSecurityPolicy
    router.get("/") { _, _ in try file("index.html", in: directory, policy: policy) }
    router.get("/app/config.json") { _, _ in
      json(
        WebAppConfiguration(
          tileURL: settings.tileURL, tileAttribution: settings.tileAttribution, languages: languages))
    }
    router.get("/app/strings.json") { request, _ in
      let requested = request.uri.queryParameters["lang"].map(String.init)
      let language = Self.language(
        requested: requested, acceptLanguage: request.headers[.acceptLanguage], offered: languages)
      return json(WebAppStrings(language: language, languages: languages, strings: strings(language)))
    }
    router.get("/app/**") { _, context in
      try file(context.parameters.getCatchAll().joined(separator: "/"), in: directory, policy: policy)
    }
    router.get("/vendor/leaflet/**") { _, context in
      try file(context.parameters.getCatchAll().joined(separator: "/"), in: leaflet, policy: policy)
    }
  }

  /// Scripts, styles, fonts and connections (HTTP and the WebSocket) of this origin only; images also from the tile
  /// server; no frames, no plugins, no `<base>`.
  var contentSecurityPolicy: String {
    let tiles = settings.tileURL.flatMap(WebAppSettings.tileOrigin).map { " \($0)" } ?? ""
    return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:\(tiles); "
      + "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
  }

  /// Every text of `language`: a plain text, or a plural text as its CLDR forms (`one`, `few`, `many`, `other`, …)
  /// for the page to choose from with the language's plural rules.
  func strings(_ language: String) -> [String: WebAppStrings.Text] {
    var result: [String: WebAppStrings.Text] = [:]
    for (key, entry) in catalog.strings {
      for candidate in catalog.languageChain(for: language) {
        guard let localization = entry.localizations[candidate] else { continue }
        if let plural = localization.variations?.plural {
          result[key] = .plural(plural.compactMapValues { $0.stringUnit?.value })
          break
        }
        if let unit = localization.stringUnit {
          result[key] = .text(unit.value)
          break
        }
      }
    }
    return result
  }

  /// `requested` when offered, else the first offered language of `Accept-Language` by weight, else the first offered.
  static func language(requested: String?, acceptLanguage: String?, offered: [String]) -> String {
    if let requested, offered.contains(requested) { return requested }
    var weighted: [(language: String, weight: Double, order: Int)] = []
    for (order, item) in (acceptLanguage ?? "").split(separator: ",").enumerated() {
      let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
      guard let tag = parts.first?.lowercased(), !tag.isEmpty else { continue }
      let weight = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
      let primary = String(tag.split(separator: "-").first ?? "")
      if weight > 0, offered.contains(primary) { weighted.append((primary, weight, order)) }
    }
    let best = weighted.sorted { ($0.weight, -$0.order) > ($1.weight, -$1.order) }.first
    return best?.language ?? offered.first ?? "en"
  }

  /// The file at `relative` under `root`, with its media type; 404 for anything else (no `..`, no hidden files,
  /// only the kinds of files a page needs).
  func file(_ relative: String, in root: URL, policy: String) throws -> Response {
    let components = relative.split(separator: "/", omittingEmptySubsequences: false)
    guard !components.isEmpty,
      components.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") && !$0.contains("\\") }),
      let type = Self.mediaTypes[URL(fileURLWithPath: relative).pathExtension.lowercased()],
      let data = FileManager.default.contents(atPath: root.appendingPathComponent(relative).path)
    else { throw HTTPError(.notFound) }
    return Response(
      status: .ok,
      headers: [
        .contentType: type, .contentSecurityPolicy: policy, .cacheControl: "no-cache",
        .referrerPolicy: "same-origin",
      ],
      body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
  }

  /// The media types served, by file extension.
  static let mediaTypes = [
    "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
    "png": "image/png", "svg": "image/svg+xml", "ico": "image/x-icon",
  ]

  private func json(_ value: some Encodable) -> Response {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
    return Response(
      status: .ok, headers: [.contentType: "application/json", .contentSecurityPolicy: contentSecurityPolicy],
      body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
  }
}

/// `GET /app/config.json`: what the page needs to draw the map.
struct WebAppConfiguration: Encodable {
  /// The tile URL template, absent for a map without tiles.
  var tileURL: String?
  /// The tiles' attribution (HTML).
  var tileAttribution: String
  /// The languages offered.
  var languages: [String]
}

/// `GET /app/strings.json`: the texts of one language.
struct WebAppStrings: Encodable {
  /// A text, or a plural text's forms by CLDR category.
  enum Text: Encodable, Equatable {
    case text(String)
    case plural([String: String])

    func encode(to encoder: any Encoder) throws {
      var container = encoder.singleValueContainer()
      switch self {
      case .text(let text): try container.encode(text)
      case .plural(let forms): try container.encode(forms)
      }
    }
  }
  /// The language chosen.
  var language: String
  /// Every language offered.
  var languages: [String]
  /// The texts by key.
  var strings: [String: Text]
}

extension HTTPField.Name {
  /// `Referrer-Policy`.
  static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}

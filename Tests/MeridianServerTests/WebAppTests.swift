import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MeridianServer
import NIOCore
import NetworkingKit
import Testing

/// The web app's routes (`/`, `/app/…`, `/vendor/leaflet/…`, its configuration and texts) and settings; what the
/// page does in a browser is tested by `Tests/browser` in headless Chromium.
@Suite struct WebAppTests {
  static func text(_ response: TestResponse) -> String { String(buffer: response.body) }

  @Test func thePageAndItsModulesCarryAPolicyWithoutInlineCode() async throws {
    try await RouteTests.withRoutes { client in
      let page = try await client.execute(uri: "/", method: .get)
      #expect(page.status == .ok)
      #expect(page.headers[.contentType] == "text/html; charset=utf-8")
      #expect(Self.text(page).contains(#"<script type="module" src="/app/main.js">"#))
      let policy = try #require(page.headers[.contentSecurityPolicy])
      #expect(policy.contains("script-src 'self'"))
      #expect(policy.contains("connect-src 'self'"))
      #expect(policy.contains("img-src 'self' data: blob: https://tile.openstreetmap.org"))
      #expect(!policy.contains("unsafe"))
      let module = try await client.execute(uri: "/app/main.js", method: .get)
      #expect(module.status == .ok)
      #expect(module.headers[.contentType] == "text/javascript; charset=utf-8")
      #expect(module.headers[.contentSecurityPolicy] == policy)
    }
  }

  /// Files come from Hummingbird's FileMiddleware: revalidated by their ETag (304 without a body) and served in
  /// byte ranges, each answer with the page's policy.
  @Test func filesAreRevalidatedByTheirETagAndServedInRanges() async throws {
    try await RouteTests.withRoutes { client in
      let whole = try await client.execute(uri: "/app/i18n.js", method: .get)
      #expect(whole.status == .ok)
      #expect(whole.headers[.cacheControl] == "no-cache")
      let tag = try #require(whole.headers[.eTag])
      let again = try await client.execute(uri: "/app/i18n.js", method: .get, headers: [.ifNoneMatch: tag])
      #expect(again.status == .notModified)
      #expect(again.body.readableBytes == 0)
      #expect(again.headers[.contentSecurityPolicy] == whole.headers[.contentSecurityPolicy])
      let part = try await client.execute(uri: "/app/i18n.js", method: .get, headers: [.range: "bytes=3-12"])
      #expect(part.status == .partialContent)
      #expect(part.headers[.contentRange] == "bytes 3-12/\(whole.body.readableBytes)")
      #expect(Array(part.body.readableBytesView) == Array(whole.body.readableBytesView.dropFirst(3).prefix(10)))
      let page = try await client.execute(uri: "/", method: .get)
      let file = try await client.execute(uri: "/app/index.html", method: .get)
      #expect(page.status == .ok && file.status == .ok)
      #expect(Self.text(page) == Self.text(file))
    }
  }

  /// `HEAD` answers as `GET` does, headers and all, without the body: the page, a module, the configuration.
  @Test func headAnswersLikeGetWithoutABody() async throws {
    try await RouteTests.withRoutes { client in
      for uri in ["/", "/app/main.js", "/app/config.json", "/app/strings.json?lang=ru", "/vendor/leaflet/leaflet.css"] {
        let get = try await client.execute(uri: uri, method: .get)
        let head = try await client.execute(uri: uri, method: .head)
        #expect(get.status == .ok && head.status == .ok, "\(uri)")
        #expect(head.body.readableBytes == 0, "\(uri)")
        #expect(head.headers[.contentType] == get.headers[.contentType], "\(uri)")
        #expect(head.headers[.contentLength] == String(get.body.readableBytes), "\(uri)")
        #expect(head.headers[.contentSecurityPolicy] == get.headers[.contentSecurityPolicy], "\(uri)")
      }
      #expect(try await client.execute(uri: "/app/missing.js", method: .head).status == .notFound)
    }
  }

  /// Leaflet is Debian's minified build, gzip-compressed (its `.gz`) for a browser that accepts gzip: about 40 KB
  /// instead of 406 KB.
  @Test func leafletIsServedMinifiedAndCompressed() async throws {
    let folder = URL(fileURLWithPath: WebAppSettings().leafletDirectory)
    let minified = try Data(contentsOf: folder.appendingPathComponent("leaflet.esm.min.js"))
    let compressed = try Data(contentsOf: folder.appendingPathComponent("leaflet.esm.min.js.gz"))
    try await RouteTests.withRoutes { client in
      let gzip = try await client.execute(
        uri: "/vendor/leaflet/leaflet.esm.js", method: .get, headers: [.acceptEncoding: "gzip, deflate, br"])
      #expect(gzip.status == .ok)
      #expect(gzip.headers[.contentEncoding] == "gzip")
      #expect(gzip.headers[.contentType] == "text/javascript; charset=utf-8")
      #expect(gzip.headers[.vary] == "Accept-Encoding")
      #expect(Data(gzip.body.readableBytesView) == compressed)
      #expect(gzip.body.readableBytes < 50_000)
      let tag = try #require(gzip.headers[.eTag])
      let again = try await client.execute(
        uri: "/vendor/leaflet/leaflet.esm.js", method: .get, headers: [.acceptEncoding: "gzip", .ifNoneMatch: tag])
      #expect(again.status == .notModified)
      for refused in [nil, "identity", "gzip;q=0", "br"] {
        var headers: HTTPFields = [:]
        if let refused { headers[.acceptEncoding] = refused }
        let plain = try await client.execute(uri: "/vendor/leaflet/leaflet.esm.js", method: .get, headers: headers)
        #expect(plain.status == .ok)
        #expect(plain.headers[.contentEncoding] == nil, "\(refused ?? "none")")
        #expect(plain.headers[.vary] == "Accept-Encoding")
        #expect(Data(plain.body.readableBytesView) == minified, "\(refused ?? "none")")
      }
      let css = try await client.execute(
        uri: "/vendor/leaflet/leaflet.css", method: .get, headers: [.acceptEncoding: "gzip"])
      #expect(css.headers[.contentEncoding] == "gzip")
      #expect(css.headers[.contentType] == "text/css; charset=utf-8")
    }
  }

  /// The app's own files have no `.gz` beside them: compressed once for a browser that accepts gzip, revalidated by
  /// their own tag; the same bytes as the file once decompressed.
  @Test func theAppsOwnFilesAreCompressedOnceForBrowsersThatAcceptGzip() async throws {
    try await RouteTests.withRoutes { client in
      for uri in ["/", "/app/main.js", "/app/app.css", "/app/icon.svg"] {
        let plain = try await client.execute(uri: uri, method: .get)
        let gzip = try await client.execute(uri: uri, method: .get, headers: [.acceptEncoding: "gzip"])
        #expect(gzip.status == .ok, "\(uri)")
        #expect(gzip.headers[.contentEncoding] == "gzip", "\(uri)")
        #expect(gzip.headers[.vary] == "Accept-Encoding" && plain.headers[.vary] == "Accept-Encoding", "\(uri)")
        #expect(gzip.headers[.contentType] == plain.headers[.contentType], "\(uri)")
        #expect(gzip.headers[.contentSecurityPolicy] == plain.headers[.contentSecurityPolicy], "\(uri)")
        let decompressed = try Gzip.decompress(Data(gzip.body.readableBytesView), limit: 1 << 20)
        #expect(decompressed == Data(plain.body.readableBytesView), "\(uri)")
        let tag = try #require(gzip.headers[.eTag])
        #expect(tag != plain.headers[.eTag])
        let again = try await client.execute(
          uri: uri, method: .get, headers: [.acceptEncoding: "gzip", .ifNoneMatch: tag])
        #expect(again.status == .notModified && again.body.readableBytes == 0, "\(uri)")
        let head = try await client.execute(uri: uri, method: .head, headers: [.acceptEncoding: "gzip"])
        #expect(head.body.readableBytes == 0 && head.headers[.contentLength] == String(gzip.body.readableBytes))
      }
      let main = try await client.execute(uri: "/app/main.js", method: .get, headers: [.acceptEncoding: "gzip"])
      #expect(main.body.readableBytes < 15_000)
      // Images that are compressed already, and files that are not there, are as before.
      #expect(
        try await client.execute(uri: "/app/missing.js", method: .get, headers: [.acceptEncoding: "gzip"])
          .status == .notFound)
      #expect(
        try await client.execute(uri: "/app/../WebAppFeature.swift", method: .get, headers: [.acceptEncoding: "gzip"])
          .status == .notFound)
    }
  }

  @Test func onlyTheAppsOwnFilesAreServed() async throws {
    try await RouteTests.withRoutes { client in
      for uri in [
        "/app/strings.xcstrings", "/app/../WebAppFeature.swift", "/app/%2e%2e/WebAppFeature.swift", "/app/.hidden.js",
        "/app/missing.js", "/vendor/leaflet/../../../../etc/passwd", "/app/",
      ] {
        let response = try await client.execute(uri: uri, method: .get)
        #expect(response.status == .notFound, "\(uri)")
      }
    }
  }

  struct Strings: Decodable {
    enum Text: Decodable, Equatable {
      case text(String)
      case plural([String: String])
      init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
          self = .text(text)
        } else {
          self = .plural(try container.decode([String: String].self))
        }
      }
    }
    var language: String
    var languages: [String]
    var strings: [String: Text]
  }

  static func strings(_ client: any TestClientProtocol, query: String = "", acceptLanguage: String? = nil)
    async throws -> Strings
  {
    var headers: HTTPFields = [:]
    if let acceptLanguage { headers[.acceptLanguage] = acceptLanguage }
    let response = try await client.execute(uri: "/app/strings.json\(query)", method: .get, headers: headers)
    #expect(response.status == .ok)
    return try JSONDecoder().decode(Strings.self, from: Data(response.body.readableBytesView))
  }

  @Test func textsFollowAcceptLanguageOrTheChosenLanguage() async throws {
    try await RouteTests.withRoutes { client in
      let cases: [(query: String, acceptLanguage: String, chosen: String)] = [
        ("", "uk-UA,uk;q=0.9,en;q=0.5", "uk"), ("", "de-DE,en;q=0.5,ru;q=0.8", "ru"), ("", "fr-FR", "en"),
        ("", "ru;q=0, uk", "uk"), ("?lang=ru", "uk", "ru"), ("?lang=xx", "uk", "uk"),
      ]
      for (query, acceptLanguage, chosen) in cases {
        let texts = try await Self.strings(client, query: query, acceptLanguage: acceptLanguage)
        #expect(texts.language == chosen, "\(query) \(acceptLanguage)")
      }
    }
  }

  /// Every text exists in every language, and each plural text has the forms its language's CLDR rules need.
  @Test func everyLanguageHasEveryTextAndItsPluralForms() async throws {
    try await RouteTests.withRoutes { client in
      let english = try await Self.strings(client, query: "?lang=en")
      #expect(english.languages == ["en", "ru", "uk"])
      let needed = [
        "en": ["one", "other"], "ru": ["few", "many", "one", "other"], "uk": ["few", "many", "one", "other"],
      ]
      for language in english.languages {
        let texts = try await Self.strings(client, query: "?lang=\(language)")
        #expect(Set(texts.strings.keys) == Set(english.strings.keys), "\(language)")
        for (key, text) in texts.strings {
          guard case .plural(let forms) = text else { continue }
          #expect(forms.keys.sorted() == needed[language], "\(key) in \(language)")
          #expect(forms.values.allSatisfy { $0.contains("%lld") }, "\(key) in \(language)")
        }
      }
      let russian = try await Self.strings(client, query: "?lang=ru")
      #expect(
        russian.strings["history.fixes"]
          == .plural([
            "one": "%lld точка", "few": "%lld точки",
            "many": "%lld точек", "other": "%lld точки",
          ]))
    }
  }

  @Test func tileSettingsComeFromTheEnvironment() throws {
    let none = try ServerConfiguration.resolve(environment: ["MERIDIAN_TILE_URL": "none"])
    #expect(none.web.tileURL == nil)
    let own = try ServerConfiguration.resolve(environment: [
      "MERIDIAN_TILE_URL": "https://{s}.tiles.example.org/{z}/{x}/{y}.png", "MERIDIAN_TILE_ATTRIBUTION": "© Example",
      "MERIDIAN_LEAFLET_DIR": "/opt/leaflet",
    ])
    #expect(own.web.tileURL == "https://{s}.tiles.example.org/{z}/{x}/{y}.png")
    #expect(own.web.tileAttribution == "© Example")
    #expect(own.web.leafletDirectory == "/opt/leaflet")
    for bad in ["ftp://tiles.example.org/{z}/{x}/{y}.png", "tiles.example.org", "https://", "https://a b/{z}"] {
      #expect(throws: ConfigurationError.self, "\(bad)") {
        try ServerConfiguration.resolve(environment: ["MERIDIAN_TILE_URL": bad])
      }
    }
  }
}

import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NetworkingKit
import PersistenceKitStrings
import Synchronization

/// The web app a person opens in a browser: `GET /` (the page), `GET /s/{token}` (a share link's page, without an
/// account), `/app/…` (its ES modules, CSS and images),
/// `/vendor/leaflet/…` (Leaflet from the system's `libjs-leaflet`), `/app/config.json` (the tiles) and
/// `/app/strings.json` (the texts of one language from the app's String Catalog, chosen by `?lang=` or the
/// browser's `Accept-Language`). Each answers `HEAD` as `GET`, without the body.
///
/// Leaflet is served as Debian ships it for production: `leaflet.esm.js` is answered with the minified
/// `leaflet.esm.min.js` when the folder has it. A browser that accepts gzip gets every script, style sheet, page and
/// SVG gzip-compressed (`Content-Encoding: gzip`): a file's pre-compressed `.gz` sibling when there is one (Debian
/// ships them), else the file compressed once and kept in memory until it changes (``GzipCache``);
/// `Vary: Accept-Encoding` either way.
///
/// The page signs in through the HTTP API and keeps the bearer token in memory only (no cookie, so no request can be
/// forged from another site, and nothing survives a reload). Every answer of these routes carries a
/// Content-Security-Policy that allows scripts, styles and connections of this origin only (no `unsafe-inline`), and
/// images from here and from the tile server.
///
/// Files are served by Hummingbird's `FileMiddleware` (asynchronous reads, `ETag` and `Last-Modified` with
/// `Cache-Control: no-cache`, so a reload revalidates and gets 304, byte ranges) behind this feature's own check
/// that only the kinds of files a page needs are asked for (no hidden files, no `..`, no other extensions).
struct WebAppFeature: Sendable {
  /// The folder of the app's files.
  let directory: URL
  /// Leaflet's folder.
  let leaflet: URL
  /// The tiles and their attribution.
  let settings: WebAppSettings
  /// The texts, loaded once.
  let catalog: StringCatalog
  /// Files compressed once, for browsers that accept gzip.
  let gzipCache = GzipCache()

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
    let site = Self.files(directory)
    let vendor = Self.files(leaflet)
    for method in [HTTPRequest.Method.get, .head] {
      router.on("/", method: method) { request, context in
        try await serveCompressible("index.html", in: directory, with: site, request, context)
      }
      // A share link's page: the same file for every token, which the page reads from its address.
      router.on("/s/{token}", method: method) { request, context in
        try await serveCompressible("share.html", in: directory, with: site, request, context)
      }
      router.on("/app/config.json", method: method) { request, _ in
        json(
          WebAppConfiguration(
            tileURL: settings.tileURL, tileAttribution: settings.tileAttribution, languages: languages),
          for: request)
      }
      router.on("/app/strings.json", method: method) { request, _ in
        let requested = request.uri.queryParameters["lang"].map(String.init)
        let language = Self.language(
          requested: requested, acceptLanguage: request.headers[.acceptLanguage], offered: languages)
        return json(WebAppStrings(language: language, languages: languages, strings: strings(language)), for: request)
      }
      router.on("/app/**", method: method) { request, context in
        let relative = context.parameters.getCatchAll().joined(separator: "/")
        return try await serveCompressible(relative, in: directory, with: site, request, context)
      }
      router.on("/vendor/leaflet/**", method: method) { request, context in
        var relative = context.parameters.getCatchAll().joined(separator: "/")
        if let minified = Self.minifiedNames[relative], Self.exists(leaflet.appendingPathComponent(minified)) {
          relative = minified
        }
        return try await serveCompressible(relative, in: leaflet, with: vendor, request, context)
      }
    }
  }

  /// The file at `relative` under `folder`, gzip-compressed when the request accepts gzip and it is text: its `.gz`
  /// sibling when there is one, else compressed once (``gzipCache``).
  func serveCompressible(
    _ relative: String, in folder: URL, with files: FileMiddleware<MeridianRequestContext, LocalFileSystem>,
    _ request: Request, _ context: MeridianRequestContext
  ) async throws -> Response {
    guard let mediaType = Self.servableMediaType(relative) else { throw HTTPError(.notFound) }
    let compressible = Self.compressedExtensions.contains(Self.fileExtension(relative))
    guard compressible, Self.acceptsGzip(request.headers[.acceptEncoding]) else {
      var response = try await serve(relative, with: files, request, context)
      if compressible { response.headers[.vary] = "Accept-Encoding" }
      return response
    }
    var response: Response
    if Self.exists(folder.appendingPathComponent(relative + ".gz")) {
      response = try await serve(relative + ".gz", with: files, request, context, servedAs: relative)
    } else if let compressed = try gzipCache.compressed(folder.appendingPathComponent(relative)) {
      response = compressedResponse(compressed, mediaType: mediaType, request)
    } else {
      response = try await serve(relative, with: files, request, context)
      response.headers[.vary] = "Accept-Encoding"
      return response
    }
    if response.status == .ok || response.status == .partialContent || response.status == .notModified {
      response.headers[.contentEncoding] = "gzip"
    }
    response.headers[.vary] = "Accept-Encoding"
    return response
  }

  /// A file compressed in memory, revalidated by its own `ETag` (304), without a body for `HEAD`; no byte ranges
  /// (the whole file is answered, as HTTP allows).
  func compressedResponse(_ file: GzipCache.Entry, mediaType: String, _ request: Request) -> Response {
    var headers: HTTPFields = [
      .contentType: mediaType, .eTag: file.tag, .cacheControl: "no-cache",
      .contentSecurityPolicy: contentSecurityPolicy, .referrerPolicy: "same-origin",
    ]
    let matched = request.headers[values: .ifNoneMatch].flatMap { $0.split(separator: ",") }
      .contains {
        $0.trimmingCharacters(in: .whitespaces) == file.tag || $0.trimmingCharacters(in: .whitespaces) == "*"
      }
    if matched { return Response(status: .notModified, headers: headers) }
    headers[.contentLength] = String(file.data.count)
    return Response(
      status: .ok, headers: headers,
      body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: file.data)))
  }

  /// The extensions of the files worth compressing (text).
  static let compressedExtensions: Set<String> = ["html", "js", "css", "svg"]

  static func fileExtension(_ name: String) -> String {
    String(name.split(separator: "/").last?.split(separator: ".").last ?? "").lowercased()
  }

  /// The vendor files answered with Debian's minified build of them.
  static let minifiedNames = ["leaflet.esm.js": "leaflet.esm.min.js", "leaflet.js": "leaflet.min.js"]

  static func exists(_ file: URL) -> Bool {
    var directory: ObjCBool = false
    return FileManager.default.fileExists(atPath: file.path, isDirectory: &directory) && !directory.boolValue
  }

  /// Whether `Accept-Encoding` accepts gzip: `gzip` (or `x-gzip`, or `*`) with a weight above 0.
  static func acceptsGzip(_ header: String?) -> Bool {
    guard let header else { return false }
    var gzip: Double?
    var any: Double?
    for item in header.split(separator: ",") {
      let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
      guard let coding = parts.first else { continue }
      var weight = 1.0
      for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
        weight = Double(parameter.dropFirst(2)) ?? 0
      }
      if coding == "gzip" || coding == "x-gzip" { gzip = max(gzip ?? 0, weight) }
      if coding == "*" { any = weight }
    }
    return (gzip ?? any ?? 0) > 0
  }

  /// Scripts, styles, fonts and connections (HTTP and the WebSocket) of this origin only; images also from the tile
  /// server; no frames, no plugins, no `<base>`.
  var contentSecurityPolicy: String {
    let tiles = settings.tileURL.flatMap(WebAppSettings.tileOrigin).map { " \($0)" } ?? ""
    return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:\(tiles); "
      + "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
  }

  /// Every text of `language`: a plain text as the catalog gives it (its `%@` left for the page to fill), or a
  /// plural text as its CLDR forms (`one`, `few`, `many`, `other`, …) for the page to choose from by count with the
  /// language's plural rules.
  func strings(_ language: String) -> [String: WebAppStrings.Text] {
    var result: [String: WebAppStrings.Text] = [:]
    for (key, entry) in catalog.strings {
      let localization = catalog.languageChain(for: language).lazy.compactMap { entry.localizations[$0] }.first
      if let plural = localization?.variations?.plural {
        result[key] = .plural(plural.compactMapValues { $0.stringUnit?.value })
      } else {
        result[key] = .text(catalog.string(key, locale: language))
      }
    }
    return result
  }

  /// `requested` when offered, else the first offered language of `Accept-Language` by weight, else the first offered.
  static func language(requested: String?, acceptLanguage: String?, offered: [String]) -> String {
    if let requested, offered.contains(requested) { return requested }
    return AcceptLanguage(acceptLanguage).best(of: offered) ?? offered.first ?? "en"
  }

  /// The file at `relative` (a path under the folder `files` serves) with this page's policy; 404 for anything but
  /// the kinds of files a page needs: every component made of letters, digits, `-`, `_` and inner dots (so no `..`,
  /// no hidden file, nothing percent-encoded), with an extension of ``mediaTypes``.
  /// `servedAs` is the name whose media type the answer takes (a `.gz` file is served as the file it compresses).
  func serve(
    _ relative: String, with files: FileMiddleware<MeridianRequestContext, LocalFileSystem>, _ request: Request,
    _ context: MeridianRequestContext, servedAs: String? = nil
  ) async throws -> Response {
    guard let mediaType = Self.servableMediaType(servedAs ?? relative) else { throw HTTPError(.notFound) }
    var head = request.head
    head.path = "/" + relative
    var response = try await files.handle(Request(head: head, body: request.body), context: context) { _, _ in
      throw HTTPError(.notFound)
    }
    if servedAs != nil, response.headers[.contentType] != nil { response.headers[.contentType] = mediaType }
    response.headers[.contentSecurityPolicy] = contentSecurityPolicy
    response.headers[.referrerPolicy] = "same-origin"
    return response
  }

  /// The media type of `relative` when it names a file a page may ask for (see ``serve(_:with:_:_:servedAs:)``).
  static func servableMediaType(_ relative: String) -> String? {
    let components = relative.split(separator: "/", omittingEmptySubsequences: false)
    guard let last = components.last, last.contains("."),
      components.allSatisfy({ $0.first != "." && $0.allSatisfy(isPathCharacter) })
    else { return nil }
    return mediaTypes[fileExtension(relative)]
  }

  static func isPathCharacter(_ character: Character) -> Bool {
    character.isASCII && (character.isLetter || character.isNumber || "-_.".contains(character))
  }

  /// Hummingbird's file middleware over `folder`: every file revalidated (`no-cache`) by its `ETag`.
  static func files(_ folder: URL) -> FileMiddleware<MeridianRequestContext, LocalFileSystem> {
    FileMiddleware(
      folder.path, cacheControl: CacheControl([(MediaType(type: .any), [.noCache])]),
      logger: Logger(label: "meridian.webapp")
    ).withAdditionalMediaTypes(forFileExtensions: mediaTypes.compactMapValues { MediaType(from: $0) })
  }

  /// The media types served, by file extension.
  static let mediaTypes = [
    "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
    "png": "image/png", "svg": "image/svg+xml", "ico": "image/x-icon",
  ]

  /// `value` as JSON; for `HEAD`, the same headers (its `Content-Length` too) without the body.
  private func json(_ value: some Encodable, for request: Request) -> Response {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
    var headers: HTTPFields = [.contentType: "application/json", .contentSecurityPolicy: contentSecurityPolicy]
    headers[.contentLength] = String(data.count)
    return Response(
      status: .ok, headers: headers,
      body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
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

/// Files gzip-compressed once and kept while they are unchanged (same size and modification time): the web app's
/// own files and any vendor file without a `.gz` beside it. A handful of files of one folder each, so unbounded.
final class GzipCache: Sendable {
  /// A compressed file.
  struct Entry: Sendable {
    /// The gzip data.
    var data: Data
    /// Its entity tag (weak: from the file's size and modification time).
    var tag: String
    var size: Int
    var modified: Double
  }

  private let entries = Mutex<[String: Entry]>([:])

  /// `file` compressed: from the cache while the file is unchanged; nil when it is not a readable regular file.
  func compressed(_ file: URL) throws -> Entry? {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: file.path),
      attributes[.type] as? FileAttributeType == .typeRegular,
      let size = (attributes[.size] as? NSNumber)?.intValue,
      let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970
    else { return nil }
    if let entry = entries.withLock({ $0[file.path] }), entry.size == size, entry.modified == modified {
      return entry
    }
    guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
    let entry = Entry(
      data: try Gzip.compress(data), tag: "W/\"gzip-\(size)-\(Int64(modified * 1000))\"", size: size,
      modified: modified)
    entries.withLock { $0[file.path] = entry }
    return entry
  }
}

import DomainKit
import Foundation
import GeoKit
import HTTPTypes
import MeridianAPI
import MeridianStore
import MeridianTestSupport
import NetworkingKit
import RealtimeKitTesting
import Testing

/// `GET /v1/promotions/{id}/qr`: the images decode back to the promotion's code with ZBar (`zbarimg`, Debian's
/// `zbar-tools`), a reader independent of the libqrencode that drew them.
@Suite("Promotion codes as QR images")
struct PromotionQRTests {
  @Test func qrImagesDecodeToTheCodeForPeopleOfferedThePromotion() async throws {
    try await TestServer.with { server in
      let store = server.app.environment.store
      let venue = try Place(
        id: "qr-cafe", kind: .venue, name: LocalizedText(["en": "QR Café"]),
        location: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52), venueType: "cafe")
      try await store.upsertVenues([try VenueRecord(place: venue)])
      let code = "Morning-Coffee 2026/XL"
      try await store.insertPromotion(
        Promotion(id: "coffee", venueID: venue.id, name: "Coffee", promoCode: code, audience: .general))
      let (anna, annaClient) = try await server.signUp("anna")
      let (bob, _) = try await server.signUp("bob")
      func get(_ path: String, _ session: AuthSession, accept: String? = nil) async throws -> TransportResponse {
        var headers: HTTPFields = [.authorization: "Bearer \(session.token)"]
        if let accept { headers[.accept] = accept }
        return try await server.phoneAppRequest(.get, path, headers: headers)
      }

      // Not offered yet: refused, as for anyone who never listed the venue.
      let early = try await get("/v1/promotions/coffee/qr", anna)
      #expect(early.head.status.code == 403)
      #expect(early.errorCode == APIErrorCode.promotionNotAvailable.rawValue)
      let unknown = try await get("/v1/promotions/no-such/qr", anna)
      #expect(unknown.head.status.code == 404)
      #expect(unknown.errorCode == APIErrorCode.notFound.rawValue)

      _ = try await annaClient.send(API.venuePromotions, parameters: VenueRef(id: venue.id))

      let png = try await get("/v1/promotions/coffee/qr", anna)
      #expect(png.head.status.code == 200)
      #expect(png.head.headerFields[.contentType] == "image/png")
      #expect(png.body.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
      #expect(try await zbarDecode(png.body, fileExtension: "png") == code)
      // Deflated, not stored: the file is far smaller than its rows (IHDR's width and height at bytes 16…23).
      let size = png.body.count >= 24 ? png.body.dropFirst(16).prefix(8).map(Int.init) : []
      if size.count == 8 {
        let width = size[0] << 24 | size[1] << 16 | size[2] << 8 | size[3]
        let height = size[4] << 24 | size[5] << 16 | size[6] << 8 | size[7]
        #expect(png.body.count * 4 < ((width + 7) / 8 + 1) * height, "\(png.body.count) bytes, \(width)×\(height)")
      } else {
        Issue.record("no IHDR in \(png.body.count) bytes")
      }
      let large = try await annaClient.send(API.promotionQR, parameters: PromotionQRQuery(id: "coffee", scale: 3))
      #expect(try await zbarDecode(large, fileExtension: "png") == code)

      for (path, accept) in [
        ("/v1/promotions/coffee/qr?format=svg", nil), ("/v1/promotions/coffee/qr", "image/svg+xml, */*;q=0.1"),
      ] {
        let svg = try await get(path, anna, accept: accept)
        #expect(svg.head.status.code == 200)
        #expect(svg.head.headerFields[.contentType] == "image/svg+xml")
        let document = String(decoding: svg.body, as: UTF8.self)
        #expect(document.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(try await zbarDecode(try rasterize(svg: document), fileExtension: "pgm") == code)
      }

      // Bad queries are named; someone else never offered it is refused.
      for path in [
        "/v1/promotions/coffee/qr?format=gif", "/v1/promotions/coffee/qr?scale=0",
        "/v1/promotions/coffee/qr?scale=abc", "/v1/promotions/coffee/qr?scale=33",
      ] {
        let response = try await get(path, anna)
        #expect(response.head.status.code == 400, "\(path)")
        #expect(response.errorCode == APIErrorCode.invalidRequest.rawValue, "\(path)")
      }
      let bobs = try await get("/v1/promotions/coffee/qr", bob)
      #expect(bobs.head.status.code == 403)
      let anonymous = try await server.phoneAppRequest(.get, "/v1/promotions/coffee/qr")
      #expect(anonymous.head.status.code == 401)
    }
  }
}

/// The text ZBar reads from an image file, or nil; ZBar is stopped after 30 s.
func zbarDecode(_ image: Data, fileExtension: String) async throws -> String? {
  let file = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID().uuidString).\(fileExtension)")
  try image.write(to: file)
  defer { try? FileManager.default.removeItem(at: file) }
  let child = try ChildProcess(URL(fileURLWithPath: "/usr/bin/zbarimg"), ["--quiet", "--raw", file.path])
  let status: Int32?
  do {
    status = try await withTimeout(.seconds(30)) { await child.wait() }
  } catch is TimeoutError {
    child.terminate()
    status = nil
  }
  let text = child.standardOutput.value
  guard status == 0 else {
    Issue.record("zbarimg ended with \(status.map(String.init) ?? "a timeout"): \(child.output.value)")
    return nil
  }
  return text.hasSuffix("\n") ? String(text.dropLast()) : text
}

/// The SVG's dark runs (`M x y h w v1 h-w z` in module units) drawn as a binary PGM, 4 pixels per module: the SVG's
/// geometry checked by a reader without our PNG writer in between.
func rasterize(svg: String) throws -> Data {
  let box = try #require(svg.firstMatch(of: /viewBox="0 0 (\d+) (\d+)"/))
  let side = try #require(Int(box.1))
  let scale = 4
  var pixels = [UInt8](repeating: 255, count: side * scale * side * scale)
  let path = try #require(svg.firstMatch(of: /<path d="([^"]*)"/)).1
  var runs = 0
  for run in path.matches(of: /M(\d+) (\d+)h(\d+)v1h-(\d+)z/) {
    let (x, y, width) = (try #require(Int(run.1)), try #require(Int(run.2)), try #require(Int(run.3)))
    #expect(Int(run.4) == width)
    for row in (y * scale)..<((y + 1) * scale) {
      for column in (x * scale)..<((x + width) * scale) { pixels[row * side * scale + column] = 0 }
    }
    runs += 1
  }
  #expect(runs > 0)
  return Data("P5\n\(side * scale) \(side * scale)\n255\n".utf8) + Data(pixels)
}

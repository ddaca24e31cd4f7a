import DomainKit
import Foundation
import NetworkingKit

extension API {
  /// `GET /v1/promotions/{id}/qr?format=png|svg&scale=`: the promotion's code as a QR image, for a caller it was
  /// offered to or an advertiser of its venue. Without `format`, an `Accept` naming `image/svg+xml` (and not
  /// `image/png`) chooses SVG; else PNG.
  public static let promotionQR = Endpoint<PromotionQRQuery, NoBody, Data>(
    .get, "/v1/promotions/\(\.id, "id")/qr", query: { $0.queryItems }, body: .none, response: .raw)
}

/// The image formats of `GET /v1/promotions/{id}/qr`.
public enum QRImageFormat: String, Sendable, Hashable, CaseIterable, Codable {
  /// PNG, 1-bit greyscale.
  case png
  /// SVG 1.1.
  case svg

  /// The media type sent.
  public var contentType: String {
    switch self {
    case .png: "image/png"
    case .svg: "image/svg+xml"
    }
  }

  /// The format an `Accept` header asks for: SVG when it names `image/svg+xml` and not `image/png`, else PNG.
  public static func accepted(_ accept: String?) -> QRImageFormat {
    let types = (accept ?? "").lowercased().split(separator: ",").map {
      $0.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
    }
    return types.contains("image/svg+xml") && !types.contains("image/png") ? .svg : .png
  }
}

/// `GET /v1/promotions/{id}/qr`: the promotion, the format (absent: by `Accept`) and pixels per module.
public struct PromotionQRQuery: RouteParameters, Hashable {
  /// Pixels per module accepted.
  public static let scales = 1...32
  /// The promotion.
  public var id: PromotionID
  /// The format asked for in the query, if any.
  public var format: QRImageFormat?
  /// Pixels per module (default 8).
  public var scale: Int

  /// A query.
  public init(id: PromotionID, format: QRImageFormat? = nil, scale: Int = 8) {
    self.id = id
    self.format = format
    self.scale = scale
  }

  /// Reads `{id}`, `format` and `scale`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = PromotionID(try path.required("id"))
    if let text = query.string("format") {
      guard let format = QRImageFormat(rawValue: text.lowercased()) else {
        throw .invalidRequest("'format' must be png or svg, not '\(echo(text))'.")
      }
      self.format = format
    }
    let scale = try query.int64("scale") ?? 8
    guard Self.scales.contains(Int(clamping: scale)) else {
      throw .invalidRequest("'scale' must be between \(Self.scales.lowerBound) and \(Self.scales.upperBound).")
    }
    self.scale = Int(scale)
  }

  var queryItems: [QueryItem] {
    (format.map { [QueryItem("format", $0.rawValue)] } ?? []) + [QueryItem("scale", scale)]
  }
}

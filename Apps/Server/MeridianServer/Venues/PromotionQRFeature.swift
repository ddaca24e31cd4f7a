import DomainKit
import Foundation
import MeridianAPI
import MeridianQRCode
import MeridianStore

/// `GET /v1/promotions/{id}/qr`: a promotion's code as a QR image (libqrencode), for a caller it was offered to or an
/// advertiser of its venue — the code is what redeems it, so it is shown to no one else.
struct PromotionQRFeature: Sendable {
  let environment: ServerEnvironment
  var store: any MeridianStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.onRaw(API.promotionQR) { call in
      let code = try await promoCode(call.parameters.id, for: call.authenticated())
      let format = call.parameters.format ?? QRImageFormat.accepted(call.headers[.accept])
      let symbol: QRCode
      do throws(QRCode.Failure) {
        symbol = try QRCode(code)
      } catch {
        throw APIError(status: 422, code: .invalidRequest, message: error.description)
      }
      let data =
        switch format {
        case .png: symbol.png(scale: call.parameters.scale)
        case .svg: Data(symbol.svg(scale: call.parameters.scale).utf8)
        }
      return RouteRegistrar.RawBody(contentType: format.contentType, filename: nil, data: data)
    }
  }

  /// The promotion's code, if it was offered to `user` or `user` advertises for its venue.
  func promoCode(_ id: PromotionID, for user: UserID) async throws -> String {
    guard let promotion = try await store.promotion(id) else {
      throw APIError.notFound("There is no promotion with this id.")
    }
    var allowed = try await store.wasOffered(id, to: user)
    if !allowed { allowed = try await store.isAdvertiser(user, of: promotion.venueID) }
    guard allowed else {
      throw APIError(
        status: 403, code: .promotionNotAvailable,
        message: "This promotion was not offered to you; list the venue's promotions first.")
    }
    return promotion.promoCode
  }
}

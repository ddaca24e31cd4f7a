import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// `/v1/me/home-work` and `/v1/history/visits/corrections`: the home and work a person sets, and the corrections
/// of their stays (merge, split, rename) that `GET /v1/history/visits`, "Where I've been" and the statistics apply
/// each time they detect stays (``HistoryExport/visits(of:in:)``).
struct StayFeature: Sendable {
  let environment: ServerEnvironment
  var store: any MeridianStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.homeWork) { call in
      try await store.homeWork(owner: call.authenticated())
    }
    routes.on(API.setHomeWork) { call in
      let owner = try call.authenticated()
      try await store.setHomeWork(call.body, owner: owner, now: environment.now())
      return call.body
    }
    routes.on(API.stayCorrections) { call in
      StayCorrectionList(items: try await store.stayCorrections(owner: call.authenticated()))
    }
    routes.on(API.addStayCorrection, status: .created) { call in
      let owner = try call.authenticated()
      let correction: StayCorrection
      do throws(StayCorrection.Invalid) {
        correction = try call.body.validated()
      } catch {
        throw APIError(status: 422, code: .invalidStayCorrection, message: error.description)
      }
      let stored = StoredStayCorrection(id: Secrets.userID(), createdAt: environment.now(), correction: correction)
      guard try await store.addStayCorrection(stored, owner: owner, maximumCount: StayCorrectionList.maximumCount)
      else {
        throw APIError(
          status: 409, code: .quotaExceeded,
          message: "You have \(StayCorrectionList.maximumCount) stay corrections, the most allowed; delete one first.")
      }
      return stored
    }
    routes.on(API.deleteStayCorrection, status: .noContent) { call in
      guard try await store.deleteStayCorrection(id: call.parameters.id, owner: call.authenticated()) else {
        throw APIError.notFound("You have no stay correction with this id.")
      }
      return NoContent()
    }
  }
}

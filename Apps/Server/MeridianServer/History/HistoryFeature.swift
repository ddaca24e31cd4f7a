import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import NetworkingKit

/// The caller's history: pages, deletion and clusters (visits and exports are ``HistoryExport``).
struct HistoryFeature: Sendable {
  let environment: ServerEnvironment
  var store: any FixStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.history) { call in try await history(call.authenticated(), call.parameters) }
    routes.on(API.deleteHistory) { call in
      let filter = call.parameters.filter(now: Timestamp.date(environment.now()))
      return HistoryDeletion(deleted: try await store.deleteHistory(owner: call.authenticated(), filter: filter))
    }
    routes.on(API.historyClusters) { call in try await clusters(call.authenticated(), call.parameters) }
  }

  func history(_ user: UserID, _ query: HistoryQuery) async throws -> HistoryPage {
    let limit = query.limit ?? 100
    var before: HistoryCursor?
    if let text = query.cursor {
      guard let cursor = HistoryCursor(text: text) else {
        throw APIError.invalidRequest("'cursor' is not a cursor this server gave out.")
      }
      before = cursor
    }
    let filter = query.filter(now: Timestamp.date(environment.now()))
    let rows = try await store.history(owner: user, filter: filter, limit: limit + 1, before: before)
    let page = rows.prefix(limit)
    let next = rows.count > limit ? page.last?.cursor.text : nil
    return HistoryPage(fixes: page.map(\.fix), nextCursor: next)
  }

  func clusters(_ user: UserID, _ query: ClusterQuery) async throws -> HistoryClusters {
    let filter = query.history.filter(now: Timestamp.date(environment.now()))
    return HistoryClusters(
      precision: query.precision,
      clusters: try await store.clusters(owner: user, filter: filter, precision: query.precision, box: query.bbox))
  }
}

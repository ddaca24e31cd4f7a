import DomainKit
import Foundation
import MeridianAPI
import MeridianStore

/// `GET /v1/history/visits` and `GET /v1/history/export`: the caller's filtered history read in full, oldest first.
/// The admin CLI's `history export` uses the same reading and writing (``HistoryFiles``).
public struct HistoryExport: Sendable {
  let environment: ServerEnvironment

  /// The most fixes one export or visit detection reads over HTTP; narrow the filters beyond that.
  public static let maximumFixes = 2_000_000

  func register(on routes: RouteRegistrar) {
    routes.on(API.historyVisits) { call in
      let fixes = try await allFixes(call.authenticated(), call.parameters)
      return VisitList(visits: VisitDetector().visits(in: fixes))
    }
    routes.onRaw(API.historyExport) { call in
      let format = call.parameters.format
      let fixes = try await allFixes(call.authenticated(), call.parameters.history)
      return RouteRegistrar.RawBody(
        contentType: format.contentType, filename: "meridian-history.\(format.rawValue)",
        data: Data(HistoryFiles.document(fixes, format: format).utf8))
    }
  }

  /// Every fix of the caller matching the filters, oldest first.
  func allFixes(_ owner: UserID, _ query: HistoryQuery) async throws -> [LocationFix] {
    let filter = query.filter(now: Timestamp.date(environment.now()))
    return try await HistoryFiles.fixes(
      of: owner, matching: filter, store: environment.store, maximum: Self.maximumFixes)
  }
}

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
      let owner = try call.authenticated()
      let visits = try await visits(of: owner, in: allFixes(owner, call.parameters))
      // Each stay's nights and weekdays in its local time (its town's zone), else in the query's.
      let zones = try await environment.audience.gazetteer.timeZones(for: visits.map(\.location))
      let local = Dictionary(zip(visits, zones), uniquingKeysWith: { first, _ in first })
      let fallback = call.parameters.zone
      let proposal = HomeWorkRules().propose(from: visits) { local[$0].flatMap { $0 } ?? fallback }
      let choice = try await environment.store.homeWork(owner: owner)
      return VisitList(
        visits: visits, home: HomeWorkPlace.resolve(set: choice.home, proposed: proposal.home),
        work: HomeWorkPlace.resolve(set: choice.work, proposed: proposal.work))
    }
    routes.onRaw(API.historyExport) { call in
      let format = call.parameters.format
      let fixes = try await allFixes(call.authenticated(), call.parameters.history)
      return RouteRegistrar.RawBody(
        contentType: format.contentType, filename: "meridian-history.\(format.rawValue)",
        data: Data(HistoryFiles.document(fixes, format: format).utf8))
    }
  }

  /// The owner's stays in `fixes` (oldest first), with the corrections they made applied: every route that shows
  /// or counts stays reads them here.
  func visits(of owner: UserID, in fixes: [LocationFix]) async throws -> [Visit] {
    let corrections = try await environment.store.stayCorrections(owner: owner).map(\.correction)
    return VisitDetector().visits(in: fixes, corrections: corrections)
  }

  /// Every fix of the caller matching the filters, oldest first.
  func allFixes(_ owner: UserID, _ query: HistoryQuery) async throws -> [LocationFix] {
    let filter = query.filter(now: Timestamp.date(environment.now()))
    return try await HistoryFiles.fixes(
      of: owner, matching: filter, store: environment.store, maximum: Self.maximumFixes)
  }
}

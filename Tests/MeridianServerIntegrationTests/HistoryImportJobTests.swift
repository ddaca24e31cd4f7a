import DomainKit
import Foundation
import HTTPTypes
import MeridianAPI
import MeridianServer
import NetworkingKit
import Testing

/// `POST /v1/history/imports` (issue 38 §1): the upload is answered 202 with a job as soon as the body is in, and
/// the job reports its progress until it is done or failed, to its owner only, on both engines.
@Suite("History import jobs over HTTP")
struct HistoryImportJobTests {
  /// A CSV of `count` fixes a second apart, one device.
  static func csv(_ count: Int, start: Int64 = 1_704_067_200_000) -> Data {
    var text = "time,lat,lon,device\n"
    for index in 0..<count {
      text += "\(Timestamp.formatISO8601(start + Int64(index) * 1000)),50.45,30.52,phone\n"
    }
    return Data(text.utf8)
  }

  static func start(_ server: TestServer, _ token: String, _ body: Data) async throws -> (
    status: Int, location: String?, job: HistoryImportJob?, error: String?
  ) {
    let response = try await server.phoneAppRequest(
      .post, "/v1/history/imports",
      headers: [.authorization: "Bearer \(token)", .contentType: "application/octet-stream"], body: body)
    return (
      response.head.status.code, response.head.headerFields[.location],
      try? JSONDecoder().decode(HistoryImportJob.self, from: response.body), response.errorCode
    )
  }

  /// Asks for the job until it has ended.
  static func ended(_ client: NetworkClient, _ id: String) async throws -> HistoryImportJob {
    var job: HistoryImportJob?
    try await GeofenceQueueTests.waitFor("import job \(id) to end") {
      job = try await client.send(API.historyImportJob, parameters: HistoryImportJobRef(id: id))
      return job?.state == .done || job?.state == .failed
    }
    return try #require(job)
  }

  @Test(arguments: PollTests.engines)
  func anImportIsAnsweredAtOnceAndReportsUntilDone(_ engine: String) async throws {
    // Paced at 2,000 fixes a second, the 6,000 fixes take three seconds to store: the job is seen storing.
    try await PollTests.withServer(engine, { $0.limits.importedFixesPerSecond = 2_000 }) { server in
      let anna = try await server.signUp("anna")
      let boris = try await server.signUp("boris")
      let body = Self.csv(6_000)
      let started = try await Self.start(server, anna.session.token, body)
      let job = try #require(started.job, "\(started)")
      #expect(started.status == 202 && started.location == "/v1/history/imports/\(job.id)")
      #expect(job.state == .checking && job.bytes == body.count && job.stored == 0)

      var seen: Set<HistoryImportJob.State> = []
      var storing: HistoryImportJob?
      try await GeofenceQueueTests.waitFor("the job to end") {
        let now = try await anna.client.send(API.historyImportJob, parameters: HistoryImportJobRef(id: job.id))
        seen.insert(now.state)
        if now.state == .storing, storing == nil { storing = now }
        return now.state == .done
      }
      #expect(seen.contains(.storing), "\(seen)")
      if let storing { #expect(storing.format == "csv" && storing.read <= 6_000 && storing.bytesRead <= body.count) }
      let done = try await Self.ended(anna.client, job.id)
      #expect(done.summary?.stored == 6_000 && done.stored == 6_000 && done.duplicates == 0 && done.error == nil)
      #expect(done.bytesRead == body.count && done.read == 6_000 && done.format == "csv")
      #expect(try await anna.client.send(API.history, parameters: HistoryQuery(limit: 1)).fixes.count == 1)

      // Someone else's job is no job of theirs; the owner's list has it.
      await #expect(throws: (any Error).self) {
        _ = try await boris.client.send(API.historyImportJob, parameters: HistoryImportJobRef(id: job.id))
      }
      let missing = try await server.phoneAppRequest(
        .get, "/v1/history/imports/\(job.id)", headers: [.authorization: "Bearer \(boris.session.token)"])
      #expect(missing.head.status.code == 404 && missing.errorCode == "not_found")
      #expect(try await boris.client.send(API.historyImportJobs).items.isEmpty)
      #expect(try await anna.client.send(API.historyImportJobs).items.map(\.id) == [job.id])

      // The same file again: every fix is a duplicate.
      let again = try #require(try await Self.start(server, anna.session.token, body).job)
      let second = try await Self.ended(anna.client, again.id)
      #expect(second.summary?.stored == 0 && second.duplicates == 6_000)
      #expect(try await anna.client.send(API.historyImportJobs).items.map(\.id) == [again.id, job.id])
    }
  }

  @Test(arguments: PollTests.engines)
  func aBrokenFileFailsItsJobWithTheLineAndStoresNothing(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let anna = try await server.signUp("anna")
      var body = Self.csv(3_000)
      body += Data("2024-01-01T10:00:00Z,95.0,30.52,phone\n".utf8)
      let job = try #require(try await Self.start(server, anna.session.token, body).job)
      let ended = try await Self.ended(anna.client, job.id)
      #expect(ended.state == .failed && ended.summary == nil && ended.stored == 0)
      #expect(ended.error?.code == "invalid_request", "\(String(describing: ended.error))")
      #expect(ended.error?.message.contains("line 3002") == true, "\(String(describing: ended.error))")
      #expect(try await anna.client.send(API.history, parameters: HistoryQuery(limit: 10)).fixes.isEmpty)

      // Refused before the body: not a file (415) is the job's failure too; no account, no job.
      let words = try #require(try await Self.start(server, anna.session.token, Data("just words".utf8)).job)
      #expect(try await Self.ended(anna.client, words.id).error?.code == "unsupported_media_type")
      let anonymous = try await server.phoneAppRequest(.post, "/v1/history/imports", body: body)
      #expect(anonymous.head.status.code == 401)
      let unknown = try await server.phoneAppRequest(
        .get, "/v1/history/imports/imp_nothing", headers: [.authorization: "Bearer \(anna.session.token)"])
      #expect(unknown.head.status.code == 404)
    }
  }
}

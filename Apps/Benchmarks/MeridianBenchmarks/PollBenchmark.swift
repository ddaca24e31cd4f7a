import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import NetworkingKit
import NetworkingKitAsyncHTTPClient

/// The polls phase of `meridian-server-bench`:
/// - `polls.vote.requests_per_s` (and `p99_ms`): 32 clients, each its own account, voting on one hot poll, each vote
///   changing the client's choice, so every request writes a ballot and the poll's counts under the poll's lock;
/// - `polls.feed.p99_ms` (and `p50_ms`): one client reading pages of 10 polls with their authors embedded
///   (`GET /v1/polls`, newest first, following the cursor 20 pages deep, then from the top again) over `BENCH_POLLS`
///   polls (100,000 by default) stored through `store`.
func pollFigures(
  port: Int, transport: AsyncHTTPClientTransport, configuration: NetworkClient.Configuration,
  store: any MeridianStore, phase: Duration
) async throws {
  let anonymous = try makeClient(port: port, token: nil, transport: transport, configuration: configuration)
  var voters: [NetworkClient] = []
  var authors: [UserID] = []
  for index in 0..<clients {
    let session = try await anonymous.send(
      API.register, body: EmailCredentials(email: "voter\(index)@example.com", password: "benchmark password"))
    voters.append(try makeClient(port: port, token: session.token, transport: transport, configuration: configuration))
    authors.append(session.userId)
    _ = try await voters[index].send(
      API.updateProfile, body: ProfileUpdate(fullName: "Voter \(index)", audience: [.fullName: .everyone]))
  }
  let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 1, count: 200))
  let image = try await voters[0].send(API.uploadBlob, body: png).url
  let options = [PollOption(text: "Tea", imageURL: image), PollOption(text: "Coffee", imageURL: image)]
  let hot = try await voters[0].send(API.createPoll, body: NewPoll(title: "The hot poll", options: options))

  let voting = voters
  let votes = try await load(for: phase) { task, iteration in
    _ = try await voting[task].send(
      API.vote, parameters: PollRef(id: hot.id), body: PollVote(choice: iteration % 2 == 0 ? .first : .second))
  }
  emit("polls.vote.requests_per_s", votes.requestsPerSecond, "requests/s")
  emit("polls.vote.p99_ms", quantile(votes.sortedLatencies, 0.99), "ms")

  let pollCount = Int(ProcessInfo.processInfo.environment["BENCH_POLLS"] ?? "") ?? 100_000
  let seedStart = ContinuousClock.now
  let base: Int64 = 1_700_000_000_000
  let writers = authors
  try await withThrowingTaskGroup(of: Void.self) { group in
    for worker in 0..<4 {
      group.addTask {
        for index in stride(from: worker, to: pollCount, by: 4) {
          let poll = try Poll(
            id: PollID("bench-\(index)"), authorID: writers[index % writers.count], title: "Poll \(index)",
            first: options[0], second: options[1], createdAt: base + Int64(index))
          _ = try await store.createPoll(poll, closesAt: nil, reward: 0, now: base + Int64(index))
        }
      }
    }
    try await group.waitForAll()
  }
  emit("polls.seed_rows_per_s", Double(pollCount) / seconds(ContinuousClock.now - seedStart), "rows/s")

  var latencies: [Duration] = []
  var cursor: String?
  for request in 0..<2000 {
    if request % 20 == 0 { cursor = nil }
    let begin = ContinuousClock.now
    let page = try await voters[1].send(API.polls, parameters: PollFeedParameters(cursor: cursor, limit: 10))
    latencies.append(ContinuousClock.now - begin)
    guard page.items.count == 10, page.items.allSatisfy({ $0.author.fullName != nil }) else {
      fatalError("a feed page has \(page.items.count) polls, or an author without their public name")
    }
    cursor = page.nextCursor
  }
  latencies.sort()
  emit("polls.feed.p50_ms", quantile(latencies, 0.5), "ms")
  emit("polls.feed.p99_ms", quantile(latencies, 0.99), "ms")
}

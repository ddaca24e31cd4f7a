import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianSecrets
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import MeridianStoreTesting
import NetworkingKit
import Testing

@Suite("Fix ingest and history over HTTP", .inProcess)
struct IngestTests {
  @Test func sameFixesTwiceAreStoredOnce() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let batch = FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 10))
      #expect(try await anna.send(API.postFixes, body: batch) == FixReceipt(accepted: 10, duplicates: 0))
      #expect(try await anna.send(API.postFixes, body: batch) == FixReceipt(accepted: 0, duplicates: 10))
      // Overlapping batch: 5 old, 5 new; a fix repeated inside one batch counts once.
      var overlapping = try makeFixes(count: 15).suffix(10).map { $0 }
      overlapping.append(overlapping[overlapping.count - 1])
      #expect(
        try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: overlapping))
          == FixReceipt(accepted: 5, duplicates: 6))
      #expect(try await anna.send(API.history, parameters: HistoryQuery()).fixes.count == 15)
    }
  }

  @Test func idempotencyKeyReplaysTheFirstAnswer() async throws {
    try await TestServer.with { server in
      let (annaSession, anna) = try await server.signUp("anna")
      let batch = FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 5))
      let first = try await anna.send(API.postFixes, body: batch, idempotencyKey: "upload-1")
      #expect(first == FixReceipt(accepted: 5, duplicates: 0))
      // The replay answers what the first request answered, not "5 duplicates".
      #expect(try await anna.send(API.postFixes, body: batch, idempotencyKey: "upload-1") == first)
      #expect(
        try await anna.send(API.postFixes, body: batch, idempotencyKey: "upload-2")
          == FixReceipt(accepted: 0, duplicates: 5))
      let other = FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 5, start: 1_750_000_000_000))
      await expectAPIError(.idempotencyConflict, status: 422) {
        try await anna.send(API.postFixes, body: other, idempotencyKey: "upload-1")
      }
      // The fingerprint is of the bytes: the same fixes spelled with other key order under a used key are refused.
      let raw = try server.client(token: annaSession.token)
      let spelled =
        #"{"fixes":[{"timestamp":1750000000000,"latitude":50.45,"longitude":30.52,"kind":"movement"}],"deviceId":"anna-phone"}"#
      let respelled =
        #"{"deviceId":"anna-phone","fixes":[{"kind":"movement","longitude":30.52,"latitude":50.45,"timestamp":1750000000000}]}"#
      let stored = try await raw.send(RawAPI.keyedFixes, body: Data(spelled.utf8), idempotencyKey: "spelled")
      #expect(stored == FixReceipt(accepted: 1, duplicates: 0))
      #expect(try await raw.send(RawAPI.keyedFixes, body: Data(spelled.utf8), idempotencyKey: "spelled") == stored)
      await expectAPIError(.idempotencyConflict, status: 422) {
        try await raw.send(RawAPI.keyedFixes, body: Data(respelled.utf8), idempotencyKey: "spelled")
      }
      // Keys are per user: Bob's "upload-1" is his own.
      let (_, bob) = try await server.signUp("bob")
      #expect(
        try await bob.send(
          API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: other.fixes), idempotencyKey: "upload-1")
          == FixReceipt(accepted: 5, duplicates: 0))
    }
  }

  @Test func concurrentRetriesWithOneKeyGetTheFirstAnswer() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let batch = FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 50))
      let receipts = try await withThrowingTaskGroup(of: FixReceipt.self) { group in
        for _ in 0..<6 {
          group.addTask { try await anna.send(API.postFixes, body: batch, idempotencyKey: "same-upload") }
        }
        return try await group.reduce(into: []) { $0.append($1) }
      }
      #expect(receipts == Array(repeating: FixReceipt(accepted: 50, duplicates: 0), count: 6))
    }
  }

  @Test func gzipBatchOfAThousandThenPagesAndClusters() async throws {
    try await TestServer.with { server in
      let (session, _) = try await server.signUp("anna")
      // Every body compressed: the server must accept Content-Encoding: gzip.
      let anna = try server.client(token: session.token, compressionThreshold: 1)
      let fixes = try makeFixes(count: 1000)
      #expect(
        try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
          == FixReceipt(accepted: 1000, duplicates: 0))

      var seen: [Int64] = []
      var cursor: String?
      repeat {
        let page = try await anna.send(API.history, parameters: HistoryQuery(limit: 300, cursor: cursor))
        seen += page.fixes.map(\.timestamp)
        cursor = page.nextCursor
      } while cursor != nil
      #expect(seen == fixes.map(\.timestamp).reversed())

      let filtered = try await anna.send(
        API.history,
        parameters: HistoryQuery(from: 1_700_000_100_000, to: 1_700_000_200_000, minAccuracy: 10, limit: 1000))
      let expected = fixes.filter {
        $0.timestamp >= 1_700_000_100_000 && $0.timestamp < 1_700_000_200_000 && ($0.horizontalAccuracy ?? 0) <= 10
      }
      #expect(filtered.fixes.map(\.timestamp) == expected.map(\.timestamp).reversed())
      #expect(try await anna.send(API.history, parameters: HistoryQuery(kinds: [.visit])).fixes.isEmpty)

      let clusters = try await anna.send(API.historyClusters, parameters: ClusterQuery(precision: 5))
      #expect(clusters.clusters.map(\.count).reduce(0, +) == 1000)
      var expectedCounts: [String: Int] = [:]
      for fix in fixes { expectedCounts[fix.geohashes.cell(precision: 5), default: 0] += 1 }
      #expect(Dictionary(uniqueKeysWithValues: clusters.clusters.map { ($0.geohash, $0.count) }) == expectedCounts)
      let boxed = try await anna.send(
        API.historyClusters,
        parameters: ClusterQuery(
          precision: 6, bbox: BoundingBox(south: 50.45, west: 30.52, north: 50.46, east: 30.53)))
      #expect(
        boxed.clusters.map(\.count).reduce(0, +) == fixes.filter { $0.latitude <= 50.46 && $0.longitude <= 30.53 }.count
      )
    }
  }

  @Test func deletingHistoryRemovesOnlyTheSelectedOwnFixes() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let (_, bob) = try await server.signUp("bob")
      _ = try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 10)))
      _ = try await bob.send(API.postFixes, body: FixBatch(deviceId: "bob-phone", fixes: try makeFixes(count: 10)))
      let range = HistoryQuery(from: 1_700_000_000_000, to: 1_700_000_004_000)
      #expect(try await anna.send(API.deleteHistory, parameters: range) == HistoryDeletion(deleted: 4))
      let left = try await anna.send(API.history, parameters: HistoryQuery())
      #expect(left.fixes.map(\.timestamp).min() == 1_700_000_004_000)
      #expect(try await anna.send(API.deleteHistory, parameters: HistoryQuery()) == HistoryDeletion(deleted: 6))
      #expect(try await anna.send(API.history, parameters: HistoryQuery()).fixes.isEmpty)
      // Bob's history is untouched, and re-sending deleted fixes stores them again.
      #expect(try await bob.send(API.history, parameters: HistoryQuery()).fixes.count == 10)
      #expect(
        try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 2)))
          == FixReceipt(accepted: 2, duplicates: 0))
    }
  }

  @Test func concurrentRequestsAllCommit() async throws {
    try await TestServer.with { server in
      let (_, anna) = try await server.signUp("anna")
      let receipts = try await withThrowingTaskGroup(of: FixReceipt.self) { group in
        for index in 0..<40 {
          group.addTask {
            let fixes = try makeFixes(count: 25, start: 1_700_000_000_000 + Int64(index) * 25_000)
            return try await anna.send(API.postFixes, body: FixBatch(deviceId: "anna-phone", fixes: fixes))
          }
        }
        return try await group.reduce(into: []) { $0.append($1) }
      }
      #expect(receipts.map(\.accepted).reduce(0, +) == 1000)
      #expect(receipts.allSatisfy { $0.duplicates == 0 })
      #expect(try await anna.send(API.history, parameters: HistoryQuery(limit: 1000)).fixes.count == 1000)
    }
  }
}

import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Single sign-on: a subject belongs to one account, found by issuer and subject (both exactly); an account created
/// through a subject has no credential and the standard groups; links go with their account; a single-use record is
/// taken once, never after it expired.
@Suite("Store contract: single sign-on")
struct SingleSignOnContractTests {
  static let anna = OpenIDSubject(issuer: "https://id.example", subject: "248289761001")

  @Test(arguments: StoreEngine.all)
  func aSubjectIsLinkedToOneAccountAndGoesWithIt(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let created = try #require(try await store.createAccount(id: "anna", linkedTo: Self.anna, now: 1_000))
      #expect(created.credentials.isEmpty && created.createdAt == 1_000)
      #expect(try await store.account("anna")?.id == "anna")
      #expect(try await store.groups(owner: "anna").count == Group.standardGroups(for: "anna").count)
      #expect(try await store.user(linkedTo: Self.anna) == "anna")
      // The same subject can't make a second account, nor be linked to another; issuer and subject match exactly.
      #expect(try await store.createAccount(id: "anna2", linkedTo: Self.anna, now: 2_000) == nil)
      #expect(try await store.account("anna2") == nil)
      #expect(
        try await store.user(linkedTo: OpenIDSubject(issuer: "https://id.example/", subject: "248289761001")) == nil)
      #expect(
        try await store.user(linkedTo: OpenIDSubject(issuer: "https://id.example", subject: "248289761002")) == nil)

      _ = try await store.createAccount(id: "boris", credential: .email("boris@example.com"), passwordHash: "h", now: 1)
      #expect(try await store.link(Self.anna, to: "boris", now: 3_000) == false)
      let other = OpenIDSubject(issuer: "https://other.example", subject: "b")
      #expect(try await store.link(other, to: "nobody", now: 3_000) == false)
      #expect(try await store.link(other, to: "boris", now: 3_000))
      #expect(try await store.link(other, to: "boris", now: 4_000) == false)
      #expect(try await store.user(linkedTo: other) == "boris")
      #expect(try await store.account(for: .email("boris@example.com"))?.account.id == "boris")

      _ = try await store.deleteUser("boris", dryRun: false, batchSize: 100)
      #expect(try await store.user(linkedTo: other) == nil)
      #expect(try await store.user(linkedTo: Self.anna) == "anna")
    }
  }

  @Test(arguments: StoreEngine.all)
  func aSingleUseRecordIsTakenOnceBeforeItExpires(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await store.putSingleUseRecord(key: "a", value: "first", expiresAt: 10_000, now: 1_000)
      try await store.putSingleUseRecord(key: "a", value: "second", expiresAt: 10_000, now: 1_000)
      try await store.putSingleUseRecord(key: "b", value: "late", expiresAt: 5_000, now: 1_000)
      try await store.putSingleUseRecord(key: "c", value: "swept", expiresAt: 2_000, now: 1_000)
      #expect(try await store.takeSingleUseRecord(key: "a", now: 9_999) == "second")
      #expect(try await store.takeSingleUseRecord(key: "a", now: 9_999) == nil)
      #expect(try await store.takeSingleUseRecord(key: "b", now: 5_000) == nil)
      #expect(try await store.takeSingleUseRecord(key: "missing", now: 1_000) == nil)
      // Putting another sweeps the expired ones: "c" is gone even for a taker whose clock is behind.
      try await store.putSingleUseRecord(key: "d", value: "new", expiresAt: 20_000, now: 3_000)
      #expect(try await store.takeSingleUseRecord(key: "c", now: 1_500) == nil)
      // Of many takers at once, one gets it.
      try await store.putSingleUseRecord(key: "race", value: "once", expiresAt: 20_000, now: 3_000)
      let taken = try await withThrowingTaskGroup(of: String?.self) { group in
        for _ in 0..<8 { group.addTask { try await store.takeSingleUseRecord(key: "race", now: 4_000) } }
        return try await group.reduce(into: [String]()) { if let value = $1 { $0.append(value) } }
      }
      #expect(taken == ["once"])
    }
  }
}

import DomainKit
import Foundation
import MeridianStore
import MeridianStoreTesting
import Testing

/// History import jobs: created and updated by their owner only, found by id and owner, listed newest first, the
/// oldest beyond the kept number deleted, gone with their owner's account.
@Suite("Store contract: history import jobs")
struct ImportJobContractTests {
  static func job(_ id: String, owner: UserID = "anna", at time: Int64, document: String = "{}") -> ImportJobRecord {
    ImportJobRecord(id: id, owner: owner, document: document, createdAt: time, updatedAt: time)
  }

  @Test(arguments: StoreEngine.all)
  func jobsAreKeptByOwnerUpdatedInPlaceAndPrunedToTheNewest(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await FixContractTests.accounts(store, ["anna", "boris"])
      try await store.saveImportJob(Self.job("a1", at: 1_000, document: #"{"state":"checking"}"#))
      try await store.saveImportJob(Self.job("b1", owner: "boris", at: 1_500))
      #expect(try await store.importJob(id: "a1", owner: "anna")?.document == #"{"state":"checking"}"#)
      #expect(try await store.importJob(id: "a1", owner: "boris") == nil)
      #expect(try await store.importJob(id: "missing", owner: "anna") == nil)

      // An update keeps the creation time; another owner can't overwrite the job.
      var update = Self.job("a1", at: 9_000, document: #"{"state":"done"}"#)
      try await store.saveImportJob(update)
      let updated = try #require(try await store.importJob(id: "a1", owner: "anna"))
      #expect(updated.document == #"{"state":"done"}"# && updated.createdAt == 1_000 && updated.updatedAt == 9_000)
      update.owner = "boris"
      update.document = #"{"state":"stolen"}"#
      try await store.saveImportJob(update)
      #expect(try await store.importJob(id: "a1", owner: "anna")?.document == #"{"state":"done"}"#)
      #expect(try await store.importJob(id: "a1", owner: "boris") == nil)

      // Newest first; creating more than the kept number deletes the owner's oldest, not another owner's.
      let kept = type(of: store).importJobsKept
      for index in 0..<kept { try await store.saveImportJob(Self.job("a\(index + 2)", at: 2_000 + Int64(index))) }
      let listed = try await store.importJobs(owner: "anna", limit: 100)
      #expect(listed.count == kept)
      #expect(listed.first?.id == "a\(kept + 1)" && listed.last?.id == "a2")
      #expect(try await store.importJob(id: "a1", owner: "anna") == nil)
      #expect(
        try await store.importJobs(owner: "anna", limit: 3).map(\.id) == ["a\(kept + 1)", "a\(kept)", "a\(kept - 1)"])
      #expect(try await store.importJobs(owner: "boris", limit: 100).map(\.id) == ["b1"])

      _ = try await store.deleteUser("anna", dryRun: false, batchSize: 100)
      #expect(try await store.importJobs(owner: "anna", limit: 100).isEmpty)
      #expect(try await store.importJobs(owner: "boris", limit: 100).count == 1)
    }
  }
}

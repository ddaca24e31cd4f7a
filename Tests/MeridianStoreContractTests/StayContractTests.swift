import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Home and work set by the person, and their corrections of stays (issue 38 §3), on every engine: replaced, read
/// back in the order made, capped per person, deleted, and each person's own.
@Suite("Store contract: stays")
struct StayContractTests {
  static let home = Coordinate(uncheckedLatitude: 50.45, longitude: 30.52)
  static let work = Coordinate(uncheckedLatitude: 50.4612, longitude: -0.1)

  @Test(arguments: StoreEngine.all)
  func homeAndWorkAreReplacedAndEachPersonsOwn(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      _ = try await store.createAccount(id: "bob", credential: .email("bob@example.com"), passwordHash: nil, now: 0)
      #expect(try await store.homeWork(owner: "anna") == HomeWorkChoice())
      try await store.setHomeWork(HomeWorkChoice(home: Self.home, work: Self.work), owner: "anna", now: 10)
      #expect(try await store.homeWork(owner: "anna") == HomeWorkChoice(home: Self.home, work: Self.work))
      #expect(try await store.homeWork(owner: "bob") == HomeWorkChoice())
      try await store.setHomeWork(HomeWorkChoice(work: Self.home), owner: "anna", now: 20)
      #expect(try await store.homeWork(owner: "anna") == HomeWorkChoice(work: Self.home))
    }
  }

  @Test(arguments: StoreEngine.all)
  func correctionsAreKeptInTheOrderMadeCappedAndDeleted(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      _ = try await store.createAccount(id: "bob", credential: .email("bob@example.com"), passwordHash: nil, now: 0)
      let merge = StoredStayCorrection(id: "b", createdAt: 10, correction: .merge(from: 1, to: 2))
      let split = StoredStayCorrection(id: "a", createdAt: 20, correction: .split(at: 3))
      let rename = StoredStayCorrection(id: "c", createdAt: 20, correction: .rename(location: Self.home, name: "Дім"))
      for correction in [rename, merge, split] {
        #expect(try await store.addStayCorrection(correction, owner: "anna", maximumCount: 3))
      }
      #expect(try await store.stayCorrections(owner: "anna") == [merge, split, rename])
      #expect(try await !store.addStayCorrection(merge, owner: "anna", maximumCount: 3))
      #expect(try await store.addStayCorrection(merge, owner: "bob", maximumCount: 3))
      #expect(try await store.stayCorrections(owner: "bob") == [merge])

      #expect(try await !store.deleteStayCorrection(id: "zzz", owner: "anna"))
      #expect(try await store.deleteStayCorrection(id: "b", owner: "anna"))
      #expect(try await !store.deleteStayCorrection(id: "b", owner: "anna"))
      #expect(try await store.stayCorrections(owner: "anna") == [split, rename])
      #expect(try await store.stayCorrections(owner: "bob") == [merge])
    }
  }
}

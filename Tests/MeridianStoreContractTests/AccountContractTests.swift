import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreTesting
import Testing

/// Accounts, tokens, one-time codes and deployment secrets: what every engine must do the same way.
@Suite("Store contract: accounts and sessions")
struct AccountContractTests {
  @Test(arguments: StoreEngine.all)
  func accountsAreUniquePerCredentialAndComeWithStandardGroups(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let anna = try #require(
        try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: "h", now: 5))
      #expect(anna == Account(id: "anna", createdAt: 5, credentials: [.email("anna@example.com")]))
      #expect(
        try await store.createAccount(id: "other", credential: .email("anna@example.com"), passwordHash: nil, now: 6)
          == nil)
      let found = try #require(try await store.account(for: .email("anna@example.com")))
      #expect(found.account.id == "anna" && found.passwordHash == "h")
      #expect(try await store.account("anna") == anna)
      #expect(try await store.account("nobody") == nil)
      #expect(try await store.account(for: .phone("+380671234567")) == nil)
      #expect(Set(try await store.groups(owner: "anna").map(\.kind)) == [.family, .friends, .blacklist])
      #expect(try await store.profile("anna")?.userID == "anna")
      #expect(try await store.sharing(owner: "anna") == SharingState())
      #expect(try await !store.isDisabled("anna"))
      #expect(try await store.setDisabled("anna", true))
      #expect(try await store.isDisabled("anna"))
      #expect(try await !store.isDisabled("nobody"))
    }
  }

  @Test(arguments: StoreEngine.all)
  func tokensExpireAreRevokedAndAreCappedPerAccount(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      for index in 0..<4 {
        try await store.insertToken(
          hash: "t\(index)", userID: "anna", createdAt: Int64(index), expiresAt: 1_000 + Int64(index))
      }
      #expect(try await store.user(forTokenHash: "t0", now: 10) == "anna")
      #expect(try await store.user(forTokenHash: "t0", now: 1_000) == nil)  // expired
      #expect(try await store.user(forTokenHash: "nope", now: 10) == nil)
      try await store.revokeToken(hash: "t1")
      #expect(try await store.user(forTokenHash: "t1", now: 10) == nil)
      // Of the three usable tokens, the two newest stay.
      #expect(try await store.revokeTokens(of: "anna", keepingNewest: 2, now: 10) == 1)
      #expect(try await store.user(forTokenHash: "t0", now: 10) == nil)
      #expect(try await store.user(forTokenHash: "t2", now: 10) == "anna")
      #expect(try await store.user(forTokenHash: "t3", now: 10) == "anna")
      // A disabled account's tokens stop working.
      try await store.setDisabled("anna", true)
      #expect(try await store.user(forTokenHash: "t3", now: 10) == nil)
    }
  }

  @Test(arguments: StoreEngine.all)
  func oneTimeCodesCountAttemptsAndAreConsumed(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      try await store.replaceOTP(phone: "+380671234567", codeHash: "right", expiresAt: 100, maxAttempts: 2, now: 0)
      #expect(try await store.checkOTP(phone: "+380671234567", codeHash: "wrong", now: 1) == .wrong(remaining: 1))
      #expect(try await store.checkOTP(phone: "+380671234567", codeHash: "right", now: 2) == .valid)
      #expect(try await store.checkOTP(phone: "+380671234567", codeHash: "right", now: 3) == .expired)  // consumed
      try await store.replaceOTP(phone: "+380671234567", codeHash: "right", expiresAt: 100, maxAttempts: 1, now: 4)
      #expect(try await store.checkOTP(phone: "+380671234567", codeHash: "wrong", now: 5) == .exhausted)
      #expect(try await store.checkOTP(phone: "+380671234567", codeHash: "right", now: 6) == .exhausted)
      try await store.replaceOTP(phone: "+380671234567", codeHash: "right", expiresAt: 10, maxAttempts: 5, now: 7)
      #expect(try await store.checkOTP(phone: "+380671234567", codeHash: "right", now: 10) == .expired)
    }
  }

  @Test(arguments: StoreEngine.all)
  func deploymentSecretsAreRandomAndStable(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      let first = try await store.deploymentSecret("device-handle")
      #expect(first.count == 32)
      #expect(try await store.deploymentSecret("device-handle") == first)
      #expect(try await store.deploymentSecret("another") != first)
    }
  }

  @Test(arguments: StoreEngine.all)
  func idempotentAnswersAreKeptPerUserAndKey(_ engine: StoreEngine) async throws {
    try await engine.with { store in
      _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 0)
      _ = try await store.createAccount(id: "bob", credential: .email("bob@example.com"), passwordHash: nil, now: 0)
      let answer = StoredResponse(requestHash: "r1", status: 201, body: Data("{}".utf8))
      try await store.saveIdempotentResponse(answer, userID: "anna", key: "k", now: 1)
      // First writer wins.
      try await store.saveIdempotentResponse(
        StoredResponse(requestHash: "r2", status: 200, body: Data()), userID: "anna", key: "k", now: 2)
      #expect(try await store.idempotentResponse(userID: "anna", key: "k") == answer)
      #expect(try await store.idempotentResponse(userID: "bob", key: "k") == nil)
    }
  }

  /// Guesses at one code sent to two nodes at once are counted one after another against the same attempts: each
  /// remaining count is reported once, then the code is exhausted, the right code included.
  @Test(arguments: StoreEngine.all)
  func oneTimeCodeGuessesOnTwoNodesShareTheAttempts(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { nodeA, nodeB in
      try await nodeA.replaceOTP(phone: "+380671234567", codeHash: "right", expiresAt: 100, maxAttempts: 5, now: 0)
      let checks = try await withThrowingTaskGroup(of: OTPCheck.self) { group in
        for guess in 0..<20 {
          let node = guess.isMultiple(of: 2) ? nodeA : nodeB
          group.addTask { try await node.checkOTP(phone: "+380671234567", codeHash: "wrong \(guess)", now: 1) }
        }
        return try await group.reduce(into: []) { $0.append($1) }
      }
      let remaining = checks.compactMap { check -> Int? in
        if case .wrong(let remaining) = check { return remaining }
        return nil
      }
      #expect(remaining.sorted() == [1, 2, 3, 4])
      #expect(checks.filter { $0 == .exhausted }.count == 16)
      #expect(try await nodeB.checkOTP(phone: "+380671234567", codeHash: "right", now: 2) == .exhausted)
    }
  }

  /// Two nodes creating accounts with one credential at once: one account, the other call answers nil.
  @Test(arguments: StoreEngine.all)
  func aCredentialClaimedOnTwoNodesAtOnceMakesOneAccount(_ engine: StoreEngine) async throws {
    try await engine.withTwoNodes { nodeA, nodeB in
      for round in 0..<10 {
        let credential = Credential.email("user\(round)@example.com")
        async let a = nodeA.createAccount(id: UserID("a\(round)"), credential: credential, passwordHash: nil, now: 1)
        async let b = nodeB.createAccount(id: UserID("b\(round)"), credential: credential, passwordHash: nil, now: 1)
        let created = try await [a, b].compactMap { $0 }
        #expect(created.count == 1, "round \(round)")
        let owner = try #require(try await nodeA.account(for: credential)).account.id
        #expect(created.first?.id == owner)
        let other = owner == UserID("a\(round)") ? UserID("b\(round)") : UserID("a\(round)")
        #expect(try await nodeB.account(other) == nil)
      }
    }
  }
}

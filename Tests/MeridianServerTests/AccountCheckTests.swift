import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import MeridianStoreSQLite
import NetworkingKit
import Testing

@testable import MeridianServer

/// A signed-in request whose account goes while it runs answers 401 `token_invalid`, never 500; and a revocation
/// made by another process on the SQLite file reaches this process's token cache at the next lookup.
@Suite struct AccountCheckTests {
  struct Unexpected: Error {}

  static func call(_ user: UserID) -> RouteCall<Void, NoBody> {
    RouteCall(
      parameters: (), body: NoBody(), bodyBytes: Data(), user: user, tokenHash: nil, headers: [:],
      clientAddress: "127.0.0.1", logger: Logger(label: "account-check-tests"))
  }

  @Test func aFailureOfACallerWhoseAccountIsGoneOrDisabledIsTokenInvalid() async throws {
    let file = TemporaryDatabaseFile()
    defer { file.remove() }
    let store = try SQLiteStore.open(at: file.path)
    let anna = try #require(
      try await store.createAccount(
        id: UserID("anna"), credential: .email("anna@example.com"), passwordHash: nil, now: 1))
    let handler = RouteRegistrar.checkingAccount(
      { (_: RouteCall<Void, NoBody>) async throws -> Int in
        throw Unexpected()
      }, store: store)
    // The account is there: the failure is the handler's own (a 500).
    await #expect(throws: Unexpected.self) { try await handler(Self.call(anna.id)) }
    // Gone or disabled meanwhile: 401, as the next request's token check would say.
    await #expect(throws: APIError.tokenInvalid) { try await handler(Self.call(UserID("nobody"))) }
    try await store.setDisabled(anna.id, true)
    await #expect(throws: APIError.tokenInvalid) { try await handler(Self.call(anna.id)) }
    // An APIError goes out as it is.
    let notFound = RouteRegistrar.checkingAccount(
      { (_: RouteCall<Void, NoBody>) async throws -> Int in
        throw APIError.notFound("none")
      }, store: store)
    await #expect(throws: APIError.notFound("none")) { try await notFound(Self.call(UserID("nobody"))) }
  }
}

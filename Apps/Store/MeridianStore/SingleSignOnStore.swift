import DomainKit
import Foundation

/// A person at an OpenID provider: the provider's issuer URL and the subject it names them by (`iss` and `sub` of an
/// ID token), which together never change for that person, unlike their email.
public struct OpenIDSubject: Sendable, Hashable, Codable {
  /// The provider's issuer URL, exactly as its ID tokens say it.
  public var issuer: String
  /// The provider's identifier of the person.
  public var subject: String

  /// A subject of `issuer`.
  public init(issuer: String, subject: String) {
    self.issuer = issuer
    self.subject = subject
  }
}

/// Single sign-on: accounts linked to OpenID subjects, and the short-lived records of a sign-in in progress (its
/// `state`, PKCE verifier and `nonce`; then the one-time code that hands the session to the page), each taken once.
public protocol SingleSignOnStore: Sendable {
  /// The account linked to `subject`, if any.
  func user(linkedTo subject: OpenIDSubject) async throws -> UserID?
  /// Links `subject` to `user`'s existing account. Returns false when the subject is linked already (to any
  /// account) or there is no such account.
  func link(_ subject: OpenIDSubject, to user: UserID, now: Int64) async throws -> Bool
  /// Creates an account that signs in through `subject` alone (no phone, no email and password): its empty profile,
  /// standard groups and default sharing state, as ``AccountStore/createAccount(id:credential:passwordHash:now:)``.
  /// Returns nil when the subject is linked already.
  func createAccount(id: UserID, linkedTo subject: OpenIDSubject, now: Int64) async throws -> Account?
  /// Stores `value` under `key` until `expiresAt` (replacing one under the same key), and deletes records that
  /// expired by `now`.
  func putSingleUseRecord(key: String, value: String, expiresAt: Int64, now: Int64) async throws
  /// Takes (deletes and returns) the record under `key` if it has not expired at `now`: of two takers, on any node,
  /// one gets it.
  func takeSingleUseRecord(key: String, now: Int64) async throws -> String?
}

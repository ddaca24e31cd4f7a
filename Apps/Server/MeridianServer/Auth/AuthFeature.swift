import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// Signing up and in: one-time codes by SMS, email and password (throttled, see ``ServerEnvironment/signIn(email:password:address:)``),
/// tokens and signing out.
struct AuthFeature: Sendable {
  let environment: ServerEnvironment
  let live: LiveUpdates
  var store: any AccountStore { environment.store }

  func register(on routes: RouteRegistrar) {
    routes.on(API.requestOTP, status: .accepted) { call in try await requestOTP(call) }
    routes.on(API.verifyOTP) { call in try await verifyOTP(call.body) }
    routes.on(API.register, status: .created) { call in try await register(call.body, address: call.clientAddress) }
    routes.on(API.login) { call in try await login(call.body, address: call.clientAddress) }
    routes.on(API.logout, status: .noContent) { call in try await logout(call) }
  }

  func requestOTP(_ call: RouteCall<Void, OTPRequest>) async throws -> NoContent {
    let phone = try normalizedPhone(call.body.phone)
    let now = environment.now()
    guard await environment.otpAddressLimiter.allow(call.clientAddress, now: now) else {
      throw APIError.rateLimited("Too many code requests from this address; try again in an hour.")
    }
    if let wait = await environment.otpPhoneSpacing.take(phone, cost: 1, now: now) {
      throw APIError.rateLimited(
        "A code was sent to this number less than \(environment.otpPhoneSpacing.window / 1000) s ago; "
          + "wait \((wait + 999) / 1000) s before asking for another.", retryAfterMilliseconds: wait)
    }
    guard await environment.otpPhoneLimiter.allow(phone, now: now) else {
      await environment.otpPhoneSpacing.giveBack(phone, now: now)
      throw APIError.rateLimited("Too many codes for this number; try again in an hour.")
    }
    let code = Secrets.otpCode()
    // Sent before it is stored: a code that never left keeps the number's current code and its attempts.
    do {
      try await environment.smsSender.sendCode(code, to: phone)
    } catch is CancellationError {
      throw CancellationError()
    } catch {
      await environment.otpPhoneLimiter.giveBack(phone, now: now)
      await environment.otpPhoneSpacing.giveBack(phone, now: now)
      await environment.otpAddressLimiter.giveBack(call.clientAddress, now: now)
      throw APIError.smsUnavailable
    }
    try await store.replaceOTP(
      phone: phone, codeHash: SecretHash.sha256(phone + ":" + code), expiresAt: now + environment.otpLifetime,
      maxAttempts: environment.otpAttempts, now: now)
    return NoContent()
  }

  func verifyOTP(_ body: OTPVerification) async throws -> AuthSession {
    let phone = try normalizedPhone(body.phone)
    let now = environment.now()
    let code = body.code.trimmingCharacters(in: .whitespaces)
    switch try await store.checkOTP(phone: phone, codeHash: SecretHash.sha256(phone + ":" + code), now: now) {
    case .valid: break
    case .wrong(let remaining):
      throw APIError(
        status: 401, code: .otpInvalid, message: "The code is wrong; \(remaining) attempts left.")
    case .expired:
      throw APIError(status: 401, code: .otpExpired, message: "No valid code for this number; request a new one.")
    case .exhausted:
      throw APIError(status: 401, code: .otpAttemptsExceeded, message: "Too many wrong codes; request a new one.")
    }
    if let existing = try await store.account(for: .phone(phone)) {
      guard try await !store.isDisabled(existing.account.id) else { throw APIError.accountDisabled }
      return try await issueToken(for: existing.account.id, isNew: false)
    }
    try environment.checkRegistrationOpen()
    if let account = try await store.createAccount(
      id: UserID(Secrets.userID()), credential: .phone(phone), passwordHash: nil, now: now)
    {
      return try await issueToken(for: account.id, isNew: true)
    }
    // Another request created the account between the check and the insert.
    guard let existing = try await store.account(for: .phone(phone)) else {
      throw APIError(status: 500, code: .internal, message: "The account could not be created; try again.")
    }
    return try await issueToken(for: existing.account.id, isNew: false)
  }

  /// Creates an email account. An email that already has one is a failed guess for the sign-in throttles (per
  /// email and per address, ``ServerEnvironment/checkSignInAllowed(account:address:)``): registering is no way
  /// around them to learn which emails have accounts.
  func register(_ body: EmailCredentials, address: String) async throws -> AuthSession {
    try checkPasswordSignIn()
    try environment.checkRegistrationOpen()
    let email: String
    do {
      // Addresses are unique regardless of case: mail providers treat the local part case-insensitively.
      email = try EmailAddress.validate(body.email).lowercased()
    } catch {
      throw APIError(status: 400, code: .invalidEmail, message: error.description)
    }
    do {
      try PasswordRules.validate(body.password)
    } catch {
      throw APIError(status: 400, code: .invalidPassword, message: error.description)
    }
    try await environment.checkSignInAllowed(account: email, address: address)
    let taken = APIError(status: 409, code: .emailTaken, message: "This email already has an account; sign in instead.")
    if try await store.account(for: .email(email)) != nil {
      await environment.recordSignIn(account: email, address: address, succeeded: false)
      throw taken
    }
    let hash = try await environment.passwords.hash(body.password)
    guard
      let account = try await store.createAccount(
        id: UserID(Secrets.userID()), credential: .email(email), passwordHash: hash, now: environment.now())
    else {
      await environment.recordSignIn(account: email, address: address, succeeded: false)
      throw taken
    }
    return try await issueToken(for: account.id, isNew: nil)
  }

  func login(_ body: EmailCredentials, address: String) async throws -> AuthSession {
    try checkPasswordSignIn()
    let user = try await environment.signIn(email: body.email, password: body.password, address: address)
    return try await issueToken(for: user, isNew: nil)
  }

  func logout(_ call: RouteCall<Void, NoBody>) async throws -> NoContent {
    if let hash = call.tokenHash {
      try await store.revokeToken(hash: hash)
      await live.disconnect(tokenHash: hash, reason: "signed out")
    }
    return NoContent()
  }

  private func issueToken(for user: UserID, isNew: Bool?) async throws -> AuthSession {
    try await environment.issueSession(for: user, isNew: isNew)
  }

  /// Throws 403 `password_sign_in_disabled` when the operator turned password sign-in off.
  private func checkPasswordSignIn() throws(APIError) {
    guard environment.signIn.passwordSignIn else {
      throw APIError(
        status: 403, code: .passwordSignInDisabled,
        message: "Signing in with an email and password is turned off on this server; use single sign-on.")
    }
  }

  private func normalizedPhone(_ text: String) throws(APIError) -> String {
    do {
      return try PhoneNumber.normalize(text)
    } catch {
      throw APIError(status: 400, code: .invalidPhone, message: error.description)
    }
  }
}

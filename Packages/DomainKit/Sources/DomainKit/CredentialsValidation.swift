import Foundation

/// Why an email, password or phone number was rejected; `description` is a message for the person typing it.
public enum CredentialError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The email field is empty.
  case emailEmpty
  /// The email has no `@` or more than one outside quotes.
  case emailMissingAt
  /// Nothing before the `@`.
  case emailMissingLocalPart
  /// The part after `@` is not a domain like `example.com`.
  case emailInvalidDomain
  /// Spaces or other characters an address can't contain.
  case emailInvalidCharacters
  /// Longer than 254 characters (or a local part over 64).
  case emailTooLong
  /// Fewer than ``PasswordRules/minimumLength`` characters.
  case passwordTooShort(minimum: Int)
  /// More than ``PasswordRules/maximumLength`` characters.
  case passwordTooLong(maximum: Int)
  /// Only spaces.
  case passwordBlank
  /// Not an international phone number.
  case phoneInvalid

  /// A sentence for the person typing the credential.
  public var description: String {
    switch self {
    case .emailEmpty: "Please enter your email address."
    case .emailMissingAt: "An email address needs exactly one @, like name@example.com."
    case .emailMissingLocalPart: "Add the part before the @, like name@example.com."
    case .emailInvalidDomain: "The part after the @ should be a domain like example.com."
    case .emailInvalidCharacters: "An email address can't contain spaces or characters like ( ) < > , ; : [ ]."
    case .emailTooLong: "This email address is too long."
    case .passwordTooShort(let minimum): "Your password needs at least \(minimum) characters."
    case .passwordTooLong(let maximum): "Your password can have at most \(maximum) characters."
    case .passwordBlank: "Your password can't be only spaces."
    case .phoneInvalid: "Enter the phone number with its country code, like +380 67 123 4567."
    }
  }
}

/// Email address validation for sign-up (a practical subset of RFC 5321/5322: what mail providers accept).
public enum EmailAddress {
  /// The trimmed, validated address with its domain lowercased.
  /// - Throws: ``CredentialError`` saying what is wrong.
  public static func validate(_ input: String) throws(CredentialError) -> String {
    let address = input.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !address.isEmpty else { throw .emailEmpty }
    guard address.count <= 254 else { throw .emailTooLong }
    let parts = address.split(separator: "@", omittingEmptySubsequences: false)
    guard parts.count == 2 else { throw .emailMissingAt }
    let local = parts[0]
    let domain = parts[1].lowercased()
    guard !local.isEmpty else { throw .emailMissingLocalPart }
    guard local.count <= 64 else { throw .emailTooLong }
    let forbidden = Set(" \t\r\n()<>,;:[]\\\"")
    guard !address.contains(where: { forbidden.contains($0) }) else { throw .emailInvalidCharacters }
    guard !local.hasPrefix("."), !local.hasSuffix("."), !local.contains("..") else {
      throw .emailInvalidCharacters
    }
    let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
    guard labels.count >= 2,
      labels.allSatisfy({ label in
        !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
          && label.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" }
      }),
      let tld = labels.last, tld.count >= 2, !tld.allSatisfy(\.isNumber)
    else { throw .emailInvalidDomain }
    return "\(local)@\(domain)"
  }
}

/// Password rules: at least 8 characters (Unicode characters, not bytes), at most 128, not only spaces.
public enum PasswordRules {
  /// The minimum length.
  public static let minimumLength = 8
  /// The maximum length.
  public static let maximumLength = 128

  /// Checks `password`.
  /// - Throws: ``CredentialError`` saying what is wrong.
  public static func validate(_ password: String) throws(CredentialError) {
    guard password.count >= minimumLength else { throw .passwordTooShort(minimum: minimumLength) }
    guard password.count <= maximumLength else { throw .passwordTooLong(maximum: maximumLength) }
    guard password.contains(where: { !$0.isWhitespace }) else { throw .passwordBlank }
  }
}

/// Phone numbers for OTP sign-in, normalized to E.164 (`+` and 8…15 digits).
public enum PhoneNumber {
  /// The E.164 form of `input`, ignoring spaces, dashes, dots and parentheses; `00` prefix becomes `+`.
  /// - Throws: ``CredentialError/phoneInvalid``.
  public static func normalize(_ input: String) throws(CredentialError) -> String {
    var text = input.filter { !" -.()\t".contains($0) }
    if text.hasPrefix("00") { text = "+" + text.dropFirst(2) }
    guard text.hasPrefix("+") else { throw .phoneInvalid }
    let digits = text.dropFirst()
    guard (8...15).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.first != "0"
    else { throw .phoneInvalid }
    return text
  }
}

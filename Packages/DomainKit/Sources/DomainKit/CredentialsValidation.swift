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
  /// More than ``PasswordRules/maximumBytes`` bytes of UTF-8.
  case passwordTooLong(maximumBytes: Int)
  /// Only spaces.
  case passwordBlank
  /// Contains control characters (tabs, line breaks, NUL, …).
  case passwordControlCharacters
  /// One of the most common passwords (``PasswordRules/commonPasswords``).
  case passwordTooCommon
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
    case .passwordTooLong(let maximumBytes):
      "Your password can have at most \(maximumBytes) bytes (\(maximumBytes) Latin letters, fewer in other scripts)."
    case .passwordBlank: "Your password can't be only spaces."
    case .passwordControlCharacters: "Your password can't contain control characters such as tabs or line breaks."
    case .passwordTooCommon: "This password is one of the most common ones and is guessed first; choose another."
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

/// Password rules: at least 8 characters (Unicode characters, not bytes), at most 72 bytes of UTF-8 (all that bcrypt
/// reads: a longer password would sign in with its first 72 bytes and anything after them), no control characters,
/// not only spaces, and not one of the most common passwords.
public enum PasswordRules {
  /// The minimum length, in characters.
  public static let minimumLength = 8
  /// The maximum length, in bytes of UTF-8: bcrypt ignores what follows.
  public static let maximumBytes = 72

  /// Checks `password`.
  /// - Throws: ``CredentialError`` saying what is wrong.
  public static func validate(_ password: String) throws(CredentialError) {
    try checkLength(password)
    guard !password.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
      throw .passwordControlCharacters
    }
    guard password.contains(where: { !$0.isWhitespace }) else { throw .passwordBlank }
    guard !isCommon(password) else { throw .passwordTooCommon }
  }

  /// Checks only the length limits: what signing in with an existing password must still respect (a password
  /// longer than ``maximumBytes`` would be compared by its first 72 bytes alone).
  /// - Throws: ``CredentialError/passwordTooShort(minimum:)`` or ``CredentialError/passwordTooLong(maximumBytes:)``.
  public static func checkLength(_ password: String) throws(CredentialError) {
    guard password.count >= minimumLength else { throw .passwordTooShort(minimum: minimumLength) }
    guard password.utf8.count <= maximumBytes else { throw .passwordTooLong(maximumBytes: maximumBytes) }
  }

  /// Whether `password`, ignoring case and surrounding spaces, is one of ``commonPasswords``.
  public static func isCommon(_ password: String) -> Bool {
    commonPasswords.contains(password.trimmingCharacters(in: .whitespaces).lowercased())
  }

  /// The most common passwords of 8 characters or more (lowercase), from published lists of leaked passwords:
  /// the first ones an attacker tries.
  public static let commonPasswords: Set<String> = [
    "password", "password1", "password12", "password123", "password1234", "password!", "passw0rd", "p@ssw0rd",
    "p@ssword", "pa$$word", "12345678", "123456789", "1234567890", "0123456789", "87654321", "987654321",
    "9876543210", "11111111", "111111111", "1111111111", "00000000", "000000000", "22222222", "55555555",
    "66666666", "77777777", "88888888", "99999999", "12341234", "11223344", "12344321", "12121212", "123123123",
    "147258369", "159753456", "123654789", "741852963", "123qweasd", "1q2w3e4r", "1q2w3e4r5t", "1q2w3e4r5t6y",
    "q1w2e3r4", "q1w2e3r4t5", "q1w2e3r4t5y6", "1qaz2wsx", "1qazxsw2", "zaq12wsx", "zaq1zaq1", "qazwsxedc",
    "qwertyui", "qwertyuiop", "qwerty12", "qwerty123", "qwerty1234", "qwe123qwe", "1234qwer", "asdfghjk",
    "asdfghjkl", "asdf1234", "zxcvbnm1", "zxcvbnm123", "zxcvbnma", "abcd1234", "abc12345", "abcdefgh",
    "a1b2c3d4", "aa123456", "iloveyou", "iloveyou1", "iloveyou2", "sunshine", "princess", "football",
    "baseball", "basketball", "superman", "batman123", "starwars", "trustno1", "whatever", "welcome1",
    "welcome123", "letmein1", "letmein123", "admin123", "administrator", "changeme", "computer", "internet",
    "michael1", "jennifer", "jordan23", "charlie1", "freedom1", "monkey123", "shadow12", "master12", "hello123",
    "dragon12", "secret123", "samsung1", "google123", "pokemon1", "liverpool", "chelsea1", "arsenal1",
    "mercedes", "corvette", "passpass", "test1234", "testtest", "qwertyqwerty", "1234567a", "12345qwert",
    "12345678a", "qwerty1!", "myspace1", "lovely123", "michelle", "matthew1", "danielle", "1234abcd",
    "йцукенгш", "пароль123", "qwertyuiop123",
  ]
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

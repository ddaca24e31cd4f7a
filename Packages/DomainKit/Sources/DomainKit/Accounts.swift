import Foundation

/// How an account signs in.
public enum CredentialKind: String, Sendable, Hashable, Codable, CaseIterable {
  /// Phone number plus a one-time SMS code.
  case phone
  /// Email address plus password.
  case email
}

/// A sign-in credential of an account (secrets are never part of the model).
public enum Credential: Sendable, Hashable, Codable {
  /// A phone number in E.164 form (`+380671234567`), verified by one-time codes.
  case phone(String)
  /// An email address, verified by a password stored hashed by the server.
  case email(String)

  /// Which kind of credential this is.
  public var kind: CredentialKind {
    switch self {
    case .phone: .phone
    case .email: .email
    }
  }

  private enum CodingKeys: String, CodingKey { case kind, value }

  /// A validated credential: the phone number normalized to E.164 (``PhoneNumber/normalize(_:)``), the email
  /// address checked and its domain lowercased (``EmailAddress/validate(_:)``).
  /// - Throws: ``CredentialError`` saying what is wrong.
  public static func validated(kind: CredentialKind, value: String) throws(CredentialError) -> Credential {
    switch kind {
    case .phone: .phone(try PhoneNumber.normalize(value))
    case .email: .email(try EmailAddress.validate(value))
    }
  }

  /// Decodes `{kind, value}` through ``validated(kind:value:)``, so a stored or sent credential is always a valid
  /// E.164 number or email address.
  /// - Throws: `DecodingError.dataCorrupted` naming `value` with the ``CredentialError`` message.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    let value = try c.decode(String.self, forKey: .value)
    let kind = try c.decode(CredentialKind.self, forKey: .kind)
    do {
      self = try Self.validated(kind: kind, value: value)
    } catch {
      throw DecodingError.dataCorruptedError(
        forKey: .value, in: c, debugDescription: "value: \(error.description)")
    }
  }

  /// Encodes `{kind, value}`.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(kind, forKey: .kind)
    switch self {
    case .phone(let value), .email(let value): try c.encode(value, forKey: .value)
    }
  }
}

/// A user account. Wire names: `id`, `createdAt` (UTC ms), `credentials`.
public struct Account: Sendable, Hashable, Codable, Identifiable {
  /// The account id.
  public var id: UserID
  /// Creation time, UTC milliseconds.
  public var createdAt: Int64
  /// The ways this account can sign in.
  public var credentials: [Credential]

  /// An account.
  public init(id: UserID, createdAt: Int64, credentials: [Credential]) {
    self.id = id
    self.createdAt = createdAt
    self.credentials = credentials
  }
}

/// A device that reports fixes for an account. Wire names: `id`, `ownerId`, `name`, `platform`, `createdAt`.
public struct Device: Sendable, Hashable, Codable, Identifiable {
  /// The device id (for OsmAnd/Traccar clients, the id they send).
  public var id: DeviceID
  /// The owning account.
  public var ownerID: UserID
  /// A human name ("Anna's iPhone").
  public var name: String
  /// Free-form platform (`ios`, `android`, `linux`, `osmand`, `owntracks`).
  public var platform: String
  /// Registration time, UTC milliseconds.
  public var createdAt: Int64

  /// A device.
  public init(id: DeviceID, ownerID: UserID, name: String, platform: String, createdAt: Int64) {
    self.id = id
    self.ownerID = ownerID
    self.name = name
    self.platform = platform
    self.createdAt = createdAt
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case ownerID = "ownerId"
    case name, platform, createdAt
  }
}

/// The fields of a profile, each with its own visibility. Raw values are the wire names.
public enum ProfileField: String, Sendable, Hashable, Codable, CaseIterable {
  /// Avatar image URL.
  case avatar
  /// Full name.
  case fullName
  /// Phone number.
  case phone
  /// Birthday.
  case birthday
  /// Gender.
  case gender
  /// Status text.
  case status
}

/// Who may see a profile field (in addition to what groups grant).
public enum FieldAudience: String, Sendable, Hashable, Codable, CaseIterable {
  /// Every signed-in user who is not blacklisted.
  case everyone
  /// Members of the owner's groups whose visibility includes the field.
  case groups
  /// Nobody but the owner.
  case nobody
}

/// A user's gender, as the user chose to state it.
public enum Gender: String, Sendable, Hashable, Codable, CaseIterable {
  /// Female.
  case female
  /// Male.
  case male
  /// Other or unspecified by choice.
  case other
}

/// A calendar day without a time zone (a birthday). Wire form: `"YYYY-MM-DD"`.
public struct CalendarDay: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
  /// Year.
  public var year: Int
  /// Month 1…12.
  public var month: Int
  /// Day 1…31.
  public var day: Int

  /// A day; returns nil for dates that do not exist (e.g. 2023-02-29).
  public init?(year: Int, month: Int, day: Int) {
    guard (1...12).contains(month), day >= 1, day <= Timestamp.daysInMonth(year: year, month: month) else {
      return nil
    }
    self.year = year
    self.month = month
    self.day = day
  }

  /// Parses `YYYY-MM-DD`.
  public init?(_ text: String) {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
      let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2])
    else { return nil }
    self.init(year: y, month: m, day: d)
  }

  /// The `YYYY-MM-DD` form, as `printf`'s `%04d-%02d-%02d` writes it (without Foundation's `String(format:)`,
  /// a third of the time it took to encode a year of daily statistics).
  public var description: String {
    func digits(_ value: Int, _ width: Int) -> String {
      let (sign, magnitude) = (value < 0 ? "-" : "", String(value.magnitude))
      return sign + String(repeating: "0", count: max(0, width - sign.count - magnitude.count)) + magnitude
    }
    return "\(digits(year, 4))-\(digits(month, 2))-\(digits(day, 2))"
  }

  /// Calendar order.
  public static func < (lhs: Self, rhs: Self) -> Bool {
    (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
  }

  /// Decodes a `YYYY-MM-DD` string, rejecting impossible dates.
  public init(from decoder: any Decoder) throws {
    let text = try decoder.singleValueContainer().decode(String.self)
    guard let day = CalendarDay(text) else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: decoder.codingPath, debugDescription: "\(QuotedValue.quote(text)) is not a YYYY-MM-DD date"))
    }
    self = day
  }

  /// Encodes the `YYYY-MM-DD` string.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.singleValueContainer()
    try c.encode(description)
  }
}

/// A user's profile: each field is optional and has its own audience (``FieldAudience``).
///
/// Wire names: `userId`, `avatar`, `fullName`, `phone`, `birthday` (`YYYY-MM-DD`), `gender`, `status`,
/// `audience` (an object from field name to `everyone`/`groups`/`nobody`).
public struct Profile: Sendable, Hashable, Codable {
  /// The owner.
  public var userID: UserID
  /// Avatar image URL.
  public var avatar: String?
  /// Full name.
  public var fullName: String?
  /// Phone number (E.164).
  public var phone: String?
  /// Birthday.
  public var birthday: CalendarDay?
  /// Gender.
  public var gender: Gender?
  /// Status text.
  public var status: String?
  /// Audience per field; a missing field means ``FieldAudience/groups``.
  public var audience: [ProfileField: FieldAudience]

  /// The rule of ``fullName``: one line of at most 200 characters (empty clears it).
  public static let fullNameRule = UserText.singleLine(maximumLength: 200, allowsEmpty: true)
  /// The rule of ``status``: at most 500 characters, on several lines (empty clears it).
  public static let statusRule = UserText.multiLine(maximumLength: 500)

  /// A profile; by default every field is visible to the groups that grant it.
  public init(
    userID: UserID, avatar: String? = nil, fullName: String? = nil, phone: String? = nil,
    birthday: CalendarDay? = nil, gender: Gender? = nil, status: String? = nil,
    audience: [ProfileField: FieldAudience] = [:]
  ) {
    self.userID = userID
    self.avatar = avatar
    self.fullName = fullName
    self.phone = phone
    self.birthday = birthday
    self.gender = gender
    self.status = status
    self.audience = audience
  }

  /// The audience of `field`.
  public func audience(of field: ProfileField) -> FieldAudience { audience[field] ?? .groups }

  /// A copy with every field the viewer may not see set to nil (see ``Sharing/canSee(_:field:of:)``).
  public func redacted(keeping visible: Set<ProfileField>) -> Profile {
    var copy = self
    if !visible.contains(.avatar) { copy.avatar = nil }
    if !visible.contains(.fullName) { copy.fullName = nil }
    if !visible.contains(.phone) { copy.phone = nil }
    if !visible.contains(.birthday) { copy.birthday = nil }
    if !visible.contains(.gender) { copy.gender = nil }
    if !visible.contains(.status) { copy.status = nil }
    copy.audience = audience.filter { visible.contains($0.key) }
    return copy
  }

  private enum CodingKeys: String, CodingKey {
    case userID = "userId"
    case avatar, fullName, phone, birthday, gender, status, audience
  }

  /// Decodes the documented wire names; `audience` keys must be ``ProfileField`` names.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    userID = try c.decode(UserID.self, forKey: .userID)
    avatar = try c.decodeIfPresent(String.self, forKey: .avatar)
    fullName = try c.decodeIfPresent(String.self, forKey: .fullName)
    phone = try c.decodeIfPresent(String.self, forKey: .phone)
    birthday = try c.decodeIfPresent(CalendarDay.self, forKey: .birthday)
    gender = try c.decodeIfPresent(Gender.self, forKey: .gender)
    status = try c.decodeIfPresent(String.self, forKey: .status)
    let raw = try c.decodeIfPresent([String: FieldAudience].self, forKey: .audience) ?? [:]
    var map: [ProfileField: FieldAudience] = [:]
    for (key, value) in raw {
      guard let field = ProfileField(rawValue: key) else {
        throw DecodingError.dataCorruptedError(
          forKey: .audience, in: c, debugDescription: "unknown profile field \(QuotedValue.quote(key))")
      }
      map[field] = value
    }
    audience = map
  }

  /// Encodes the documented wire names, `audience` as an object keyed by field name.
  public func encode(to encoder: any Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(userID, forKey: .userID)
    try c.encodeIfPresent(avatar, forKey: .avatar)
    try c.encodeIfPresent(fullName, forKey: .fullName)
    try c.encodeIfPresent(phone, forKey: .phone)
    try c.encodeIfPresent(birthday, forKey: .birthday)
    try c.encodeIfPresent(gender, forKey: .gender)
    try c.encodeIfPresent(status, forKey: .status)
    try c.encode(
      Dictionary(uniqueKeysWithValues: audience.map { ($0.key.rawValue, $0.value) }), forKey: .audience)
  }
}

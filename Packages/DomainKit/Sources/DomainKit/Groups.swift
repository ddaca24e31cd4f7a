import Foundation

/// The kind of a group: the three standard groups every user owns, or a custom one.
public enum GroupKind: String, Sendable, Hashable, Codable, CaseIterable {
  /// Standard "Family" group.
  case family
  /// Standard "Friends" group.
  case friends
  /// Standard "Blacklist" group: its members see nothing of the owner, whatever else says.
  case blacklist
  /// A user-created group.
  case custom

  /// Whether this is one of the three standard groups (not deletable, not renamable).
  public var isStandard: Bool { self != .custom }
}

/// What a group's members may see of the group's owner. Wire names: `location`, `fields`, `precision` (absent:
/// `exact`).
public struct GroupVisibility: Sendable, Hashable, Codable {
  /// Whether members may see the owner's location.
  public var location: Bool
  /// Profile fields members may see (subject to each field's ``FieldAudience``).
  public var fields: Set<ProfileField>
  /// How precisely members see the location when ``location`` is on (``LocationPrecision/hidden`` grants nothing).
  public var precision: LocationPrecision

  /// A visibility.
  public init(location: Bool, fields: Set<ProfileField>, precision: LocationPrecision = .exact) {
    self.location = location
    self.fields = fields
    self.precision = precision
  }

  private enum CodingKeys: String, CodingKey { case location, fields, precision }

  /// Decodes a visibility; a missing `precision` (groups saved before it existed) is `exact`.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    location = try c.decode(Bool.self, forKey: .location)
    fields = try c.decode(Set<ProfileField>.self, forKey: .fields)
    precision = try c.decodeIfPresent(LocationPrecision.self, forKey: .precision) ?? .exact
  }

  /// Whether the members see the location: ``location`` on and a precision other than ``LocationPrecision/hidden``.
  public var grantsLocation: Bool { location && precision != .hidden }

  /// Nothing visible.
  public static let nothing = GroupVisibility(location: false, fields: [])
  /// Location and every profile field.
  public static let everything = GroupVisibility(location: true, fields: Set(ProfileField.allCases))

  /// Whether `self` grants at least everything `other` grants: the location at least as precisely, and every field.
  public func includes(_ other: GroupVisibility) -> Bool {
    (!other.grantsLocation || (grantsLocation && precision.covers(other.precision)))
      && fields.isSuperset(of: other.fields)
  }
}

/// Why a group operation was refused.
public enum GroupError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Standard groups (Family, Friends, Blacklist) cannot be deleted.
  case cannotDeleteStandardGroup(GroupKind)
  /// Standard groups cannot be renamed.
  case cannotRenameStandardGroup(GroupKind)
  /// A group name breaks ``Group/nameRule``.
  case invalidName(UserText.Problem)
  /// Owners cannot be members of their own groups.
  case ownerCannotBeMember

  /// A sentence for the person managing their groups.
  public var description: String {
    switch self {
    case .cannotDeleteStandardGroup(let kind): "The \(kind.rawValue) group is a standard group and can't be deleted."
    case .cannotRenameStandardGroup(let kind): "The \(kind.rawValue) group is a standard group and can't be renamed."
    case .invalidName(let problem): problem.message(field: "name")
    case .ownerCannotBeMember: "You can't add yourself to your own group."
    }
  }
}

/// A group owned by a user. Wire names: `id`, `ownerId`, `kind`, `name`, `members`, `visibility`.
public struct Group: Sendable, Hashable, Codable, Identifiable {
  /// The group id.
  public var id: GroupID
  /// The owner; members see what ``visibility`` grants of this user.
  public var ownerID: UserID
  /// Standard or custom.
  public let kind: GroupKind
  /// Display name (fixed for standard groups).
  public private(set) var name: String
  /// Members.
  public var members: Set<UserID>
  /// What members may see of the owner (ignored for the Blacklist).
  public var visibility: GroupVisibility

  /// A custom group.
  /// - Throws: ``GroupError/invalidName(_:)`` for an empty or over-long name.
  public init(
    id: GroupID, ownerID: UserID, name: String, members: Set<UserID> = [], visibility: GroupVisibility = .nothing
  ) throws(GroupError) {
    self.id = id
    self.ownerID = ownerID
    self.kind = .custom
    self.name = try Self.validatedName(name)
    self.members = members
    self.visibility = visibility
  }

  /// A custom group as a store read it back, its name not checked again: the rules hold for what is written.
  public init(stored id: GroupID, ownerID: UserID, name: String, members: Set<UserID>, visibility: GroupVisibility) {
    self.init(id: id, ownerID: ownerID, kind: .custom, name: name, visibility: visibility)
    self.members = members
  }

  private init(id: GroupID, ownerID: UserID, kind: GroupKind, name: String, visibility: GroupVisibility) {
    self.id = id
    self.ownerID = ownerID
    self.kind = kind
    self.name = name
    self.members = []
    self.visibility = visibility
  }

  /// The three standard groups created at sign-up: Family (everything), Friends (location, name, avatar, status),
  /// Blacklist (nothing). Their ids are `<owner>.family`, `<owner>.friends`, `<owner>.blacklist`.
  public static func standardGroups(for owner: UserID) -> [Group] {
    [
      Group(
        id: GroupID("\(owner.rawValue).family"), ownerID: owner, kind: .family, name: "Family",
        visibility: .everything),
      Group(
        id: GroupID("\(owner.rawValue).friends"), ownerID: owner, kind: .friends, name: "Friends",
        visibility: GroupVisibility(location: true, fields: [.avatar, .fullName, .status])),
      Group(
        id: GroupID("\(owner.rawValue).blacklist"), ownerID: owner, kind: .blacklist, name: "Blacklist",
        visibility: .nothing),
    ]
  }

  /// Renames a custom group.
  /// - Throws: ``GroupError/cannotRenameStandardGroup(_:)`` for standard groups, ``GroupError/invalidName(_:)``.
  public mutating func rename(to newName: String) throws(GroupError) {
    guard !kind.isStandard else { throw .cannotRenameStandardGroup(kind) }
    name = try Self.validatedName(newName)
  }

  /// Checks that the group may be deleted.
  /// - Throws: ``GroupError/cannotDeleteStandardGroup(_:)`` for standard groups.
  public func checkDeletable() throws(GroupError) {
    guard !kind.isStandard else { throw .cannotDeleteStandardGroup(kind) }
  }

  /// Adds a member.
  /// - Throws: ``GroupError/ownerCannotBeMember`` when `user` is the owner.
  public mutating func add(_ user: UserID) throws(GroupError) {
    guard user != ownerID else { throw .ownerCannotBeMember }
    members.insert(user)
  }

  /// Removes a member (no error when absent).
  public mutating func remove(_ user: UserID) { members.remove(user) }

  /// The rule of a group's name: one line of 1…64 characters.
  public static let nameRule = UserText.singleLine(maximumLength: 64)

  static func validatedName(_ name: String) throws(GroupError) -> String {
    do { return try nameRule.validated(name) } catch { throw .invalidName(error) }
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case ownerID = "ownerId"
    case kind, name, members, visibility
  }

  /// Decodes a group with the same rules as ``init(id:ownerID:name:members:visibility:)``: a name of 1…64
  /// characters (trimmed), the owner not among the members, and standard groups keeping their standard name.
  /// - Throws: `DecodingError.dataCorrupted` naming `name` or `members`.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    id = try c.decode(GroupID.self, forKey: .id)
    ownerID = try c.decode(UserID.self, forKey: .ownerID)
    kind = try c.decode(GroupKind.self, forKey: .kind)
    let rawName = try c.decode(String.self, forKey: .name)
    do {
      name = try Self.validatedName(rawName)
    } catch {
      throw DecodingError.dataCorruptedError(forKey: .name, in: c, debugDescription: "name: \(error.description)")
    }
    if let standard = Self.standardName(of: kind), name != standard {
      throw DecodingError.dataCorruptedError(
        forKey: .name, in: c, debugDescription: "name: the \(kind.rawValue) group must be named '\(standard)'")
    }
    members = try c.decodeIfPresent(Set<UserID>.self, forKey: .members) ?? []
    guard !members.contains(ownerID) else {
      throw DecodingError.dataCorruptedError(
        forKey: .members, in: c, debugDescription: "members: \(GroupError.ownerCannotBeMember.description)")
    }
    visibility = try c.decode(GroupVisibility.self, forKey: .visibility)
  }

  static func standardName(of kind: GroupKind) -> String? {
    switch kind {
    case .family: "Family"
    case .friends: "Friends"
    case .blacklist: "Blacklist"
    case .custom: nil
    }
  }
}

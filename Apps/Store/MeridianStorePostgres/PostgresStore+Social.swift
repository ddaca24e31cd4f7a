import DomainKit
import Foundation
import Logging
import MeridianAPI
import MeridianStore
import PostgresNIO

extension PostgresStore: SocialStore {
  // MARK: Profiles

  public func profile(_ userID: UserID) async throws -> Profile? {
    try await client.withConnection { connection in try await Self.profile(userID, on: connection, self.logger) }
  }

  public func saveProfile(_ profile: Profile) async throws {
    let audience = try JSONColumn.encode(
      Dictionary(uniqueKeysWithValues: profile.audience.map { ($0.key.rawValue, $0.value.rawValue) }))
    try await execute(
      """
      UPDATE profiles SET avatar = \(profile.avatar), full_name = \(profile.fullName), phone = \(profile.phone),
        birthday = \(profile.birthday?.description), gender = \(profile.gender?.rawValue), status = \(profile.status),
        audience = \(audience)::jsonb
      WHERE user_id = \(profile.userID.rawValue)
      """)
  }

  /// Names match case-insensitively (`ILIKE`, as SQLite's `LIKE` for ASCII), `%` and `_` in `text` literally.
  public func searchProfiles(text: String, phone: String?, excluding: UserID, limit: Int) async throws -> [Profile] {
    let pattern =
      "%"
      + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
      .replacingOccurrences(of: "_", with: "\\_") + "%"
    return try await client.withConnection { connection in
      var profiles: [Profile] = []
      for id in try await Self.column(
        """
        SELECT user_id FROM profiles
        WHERE user_id <> \(excluding.rawValue)
          AND (full_name ILIKE \(pattern) ESCAPE '\\' OR (\(phone)::text IS NOT NULL AND phone = \(phone)))
        ORDER BY full_name COLLATE "C" NULLS FIRST, user_id COLLATE "C" LIMIT \(limit)
        """, on: connection, self.logger)
      {
        if let profile = try await Self.profile(UserID(id), on: connection, self.logger) { profiles.append(profile) }
      }
      return profiles
    }
  }

  // MARK: Groups and sharing

  public func groups(owner: UserID) async throws -> [Group] {
    try await client.withConnection { connection in try await Self.groups(owner: owner, on: connection, self.logger) }
  }

  public func group(_ id: GroupID) async throws -> Group? {
    try await client.withConnection { connection in
      guard
        let row = try await connection.query(
          "SELECT owner_id, id, kind, name, visibility::text FROM groups WHERE id = \(id.rawValue) LIMIT 1",
          logger: self.logger
        ).collect().first
      else { return nil }
      let owner = UserID(try row.decode(String.self))
      let members = try await Self.column(
        "SELECT user_id FROM group_members WHERE owner_id = \(owner.rawValue) AND group_id = \(id.rawValue)",
        on: connection, self.logger)
      return try Self.group(row, members: Set(members.map { UserID($0) }))
    }
  }

  public func saveGroup(_ group: Group) async throws {
    let now = self.now()
    try await transaction { connection in try await Self.save(group, on: connection, now: now, self.logger) }
  }

  public func deleteGroup(_ id: GroupID) async throws {
    try await execute("DELETE FROM groups WHERE id = \(id.rawValue)")
  }

  public func sharing(owner: UserID) async throws -> SharingState {
    try await client.withConnection { connection in try await Self.sharing(owner, on: connection, self.logger) }
  }

  public func saveSharing(_ state: SharingState, owner: UserID) async throws {
    let json = try JSONColumn.encode(state)
    try await execute(
      """
      INSERT INTO sharing(user_id, state) VALUES (\(owner.rawValue), \(json)::jsonb)
      ON CONFLICT (user_id) DO UPDATE SET state = excluded.state
      """)
  }

  public func privacySettings(owner: UserID) async throws -> PrivacySettings? {
    try await transaction { connection in
      guard let profile = try await Self.profile(owner, on: connection, self.logger) else { return nil }
      return PrivacySettings(
        owner: owner, groups: try await Self.groups(owner: owner, on: connection, self.logger),
        fieldAudience: profile.audience, sharing: try await Self.sharing(owner, on: connection, self.logger),
        zones: try await Self.privacyZones(owner, on: connection, self.logger))
    }
  }

  public func sharingCandidates(viewer: UserID) async throws -> [UserID] {
    // Direct grants live in the sharing state's JSON: the id as a JSON string finds them (canSee checks after).
    try await rows(
      """
      SELECT id FROM (
        SELECT m.owner_id FROM group_members m JOIN groups g ON g.owner_id = m.owner_id AND g.id = m.group_id
        WHERE m.user_id = \(viewer.rawValue) AND g.kind <> 'blacklist' AND m.owner_id <> \(viewer.rawValue)
        UNION
        SELECT user_id FROM sharing
        WHERE strpos(state::text, to_jsonb(\(viewer.rawValue)::text)::text) > 0 AND user_id <> \(viewer.rawValue)
      ) AS candidates(id)
      ORDER BY id COLLATE "C"
      """
    ).map { UserID(try $0.decode(String.self)) }
  }

  // MARK: Helpers

  static func column(_ query: PostgresQuery, on connection: PostgresConnection, _ logger: Logger) async throws
    -> [String]
  {
    try await connection.query(query, logger: logger).collect().map { try $0.decode(String.self) }
  }

  static func profile(_ userID: UserID, on connection: PostgresConnection, _ logger: Logger) async throws -> Profile? {
    guard
      let row = try await connection.query(
        """
        SELECT avatar, full_name, phone, birthday, gender, status, audience::text FROM profiles
        WHERE user_id = \(userID.rawValue)
        """, logger: logger
      ).collect().first
    else { return nil }
    let (avatar, fullName, phone, birthday, gender, status, audienceJSON) = try row.decode(
      (String?, String?, String?, String?, String?, String?, String).self)
    var audience: [ProfileField: FieldAudience] = [:]
    for (key, value) in try JSONColumn.decode([String: String].self, from: audienceJSON) {
      if let field = ProfileField(rawValue: key), let level = FieldAudience(rawValue: value) { audience[field] = level }
    }
    return Profile(
      userID: userID, avatar: avatar, fullName: fullName, phone: phone, birthday: birthday.flatMap { CalendarDay($0) },
      gender: gender.flatMap(Gender.init(rawValue:)), status: status, audience: audience)
  }

  static func groups(owner: UserID, on connection: PostgresConnection, _ logger: Logger) async throws -> [Group] {
    var members: [String: Set<UserID>] = [:]
    for row in try await connection.query(
      "SELECT group_id, user_id FROM group_members WHERE owner_id = \(owner.rawValue)", logger: logger
    ).collect() {
      let (group, member) = try row.decode((String, String).self)
      members[group, default: []].insert(UserID(member))
    }
    return try await connection.query(
      """
      SELECT owner_id, id, kind, name, visibility::text FROM groups WHERE owner_id = \(owner.rawValue)
      ORDER BY CASE kind WHEN 'family' THEN 0 WHEN 'friends' THEN 1 WHEN 'blacklist' THEN 2 ELSE 3 END,
        name COLLATE "C", id COLLATE "C"
      """, logger: logger
    ).collect().compactMap { row in try group(row, members: members[try row.decode((String, String).self).1] ?? []) }
  }

  /// A group from `owner_id, id, kind, name, visibility::text`.
  static func group(_ row: PostgresRow, members: Set<UserID>) throws -> Group? {
    let (owner, id, kindName, name, visibilityJSON) = try row.decode((String, String, String, String, String).self)
    let visibility = try JSONColumn.decode(GroupVisibility.self, from: visibilityJSON)
    guard let kind = GroupKind(rawValue: kindName) else { return nil }
    if kind.isStandard {
      guard var group = Group.standardGroups(for: UserID(owner)).first(where: { $0.kind == kind }) else { return nil }
      group.id = GroupID(id)
      group.members = members
      group.visibility = visibility
      return group
    }
    return Group(stored: GroupID(id), ownerID: UserID(owner), name: name, members: members, visibility: visibility)
  }

  static func save(_ group: Group, on connection: PostgresConnection, now: Int64, _ logger: Logger) async throws {
    let visibility = try JSONColumn.encode(group.visibility)
    let owner = group.ownerID.rawValue
    let id = group.id.rawValue
    _ = try await connection.query(
      """
      INSERT INTO groups(owner_id, id, kind, name, visibility, created_at)
      VALUES (\(owner), \(id), \(group.kind.rawValue), \(group.name), \(visibility)::jsonb, \(now))
      ON CONFLICT (owner_id, id) DO UPDATE SET name = excluded.name, visibility = excluded.visibility
      """, logger: logger
    ).collect()
    _ = try await connection.query(
      "DELETE FROM group_members WHERE owner_id = \(owner) AND group_id = \(id)", logger: logger
    ).collect()
    let members = group.members.map(\.rawValue).sorted()
    guard !members.isEmpty else { return }
    _ = try await connection.query(
      """
      INSERT INTO group_members(owner_id, group_id, user_id)
      SELECT \(owner), \(id), member FROM unnest(\(members)::text[]) AS m(member)
      """, logger: logger
    ).collect()
  }

  static func sharing(_ owner: UserID, on connection: PostgresConnection, _ logger: Logger) async throws
    -> SharingState
  {
    guard
      let json = try await column(
        "SELECT state::text FROM sharing WHERE user_id = \(owner.rawValue)", on: connection, logger
      ).first
    else { return SharingState() }
    return try JSONColumn.decode(SharingState.self, from: json)
  }
}

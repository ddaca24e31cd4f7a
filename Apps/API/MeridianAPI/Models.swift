import DomainKit
import Foundation

/// `GET /health`: liveness and a database round trip.
public struct HealthStatus: Sendable, Hashable, Codable {
  /// `ok` when the server and its database answer; `degraded` when they do but a link to another service (the MQTT
  /// broker) is down.
  public var status: String
  /// `ok`, or what the database check reported.
  public var database: String
  /// The link to the MQTT broker when one is configured: `ok`, or `down: ` and why (absent without a broker).
  public var mqtt: String?
  /// A status.
  public init(status: String, database: String, mqtt: String? = nil) {
    self.status = status
    self.database = database
    self.mqtt = mqtt
  }
}

/// `POST /v1/auth/otp/request`.
public struct OTPRequest: Sendable, Hashable, Codable {
  /// The phone number, international form (`+380…`); spaces and dashes are ignored.
  public var phone: String
  /// A request for a code sent to `phone`.
  public init(phone: String) { self.phone = phone }
}

/// `POST /v1/auth/otp/verify`.
public struct OTPVerification: Sendable, Hashable, Codable {
  /// The phone number the code was sent to.
  public var phone: String
  /// The 6-digit code.
  public var code: String
  /// A verification.
  public init(phone: String, code: String) {
    self.phone = phone
    self.code = code
  }
}

/// `POST /v1/auth/register` and `POST /v1/auth/login`.
public struct EmailCredentials: Sendable, Hashable, Codable {
  /// The email address.
  public var email: String
  /// The password (at least 8 characters).
  public var password: String
  /// Credentials.
  public init(email: String, password: String) {
    self.email = email
    self.password = password
  }
}

/// A signed-in session: the opaque bearer token and whose it is.
public struct AuthSession: Sendable, Hashable, Codable {
  /// The bearer token; send it as `Authorization: Bearer <token>`.
  public var token: String
  /// The signed-in user.
  public var userId: UserID
  /// When the token expires, UTC ms.
  public var expiresAt: Int64
  /// For OTP sign-in: whether the account was created by this sign-in.
  public var isNew: Bool?
  /// A session.
  public init(token: String, userId: UserID, expiresAt: Int64, isNew: Bool? = nil) {
    self.token = token
    self.userId = userId
    self.expiresAt = expiresAt
    self.isNew = isNew
  }
}

/// `GET /v1/me`: the caller's account, profile and sharing state.
public struct Me: Sendable, Hashable, Codable {
  /// The account with its credentials.
  public var account: Account
  /// The full profile with every field's audience.
  public var profile: Profile
  /// The sharing switches.
  public var sharing: SharingState
  /// The time of the caller's last fix (ms), absent while none is stored: a page asks for the caller's location only
  /// when it is present.
  public var lastFixAt: Int64?
  /// The account settings (`PATCH /v1/me/settings`).
  public var settings: AccountSettings
  /// The caller's data.
  public init(
    account: Account, profile: Profile, sharing: SharingState, lastFixAt: Int64? = nil,
    settings: AccountSettings = AccountSettings()
  ) {
    self.account = account
    self.profile = profile
    self.sharing = sharing
    self.lastFixAt = lastFixAt
    self.settings = settings
  }
}

/// `PATCH /v1/me/profile`: absent fields stay as they are; an empty string clears a text field.
public struct ProfileUpdate: Sendable, Hashable, Codable {
  /// Avatar image URL.
  public var avatar: String?
  /// Full name.
  public var fullName: String?
  /// Birthday (`YYYY-MM-DD`).
  public var birthday: CalendarDay?
  /// Gender.
  public var gender: Gender?
  /// Status text.
  public var status: String?
  /// New audiences for the listed fields (others unchanged).
  public var audience: [String: FieldAudience]?
  /// An update.
  public init(
    avatar: String? = nil, fullName: String? = nil, birthday: CalendarDay? = nil, gender: Gender? = nil,
    status: String? = nil, audience: [ProfileField: FieldAudience]? = nil
  ) {
    self.avatar = avatar
    self.fullName = fullName
    self.birthday = birthday
    self.gender = gender
    self.status = status
    self.audience = audience.map { Dictionary(uniqueKeysWithValues: $0.map { ($0.key.rawValue, $0.value) }) }
  }
}

/// `GET /v1/users/search`: profiles redacted to what the caller may see.
public struct UserSearchResult: Sendable, Hashable, Codable {
  /// Matching users (at most 50), blacklisting owners excluded.
  public var users: [Profile]
  /// A result.
  public init(users: [Profile]) { self.users = users }
}

/// `GET /v1/groups`.
public struct GroupList: Sendable, Hashable, Codable {
  /// The caller's groups: Family, Friends, Blacklist, then custom groups by name.
  public var groups: [Group]
  /// A list.
  public init(groups: [Group]) { self.groups = groups }
}

/// `POST /v1/groups`.
public struct NewGroup: Sendable, Hashable, Codable {
  /// The name, 1…64 characters.
  public var name: String
  /// What members may see; nothing by default.
  public var visibility: GroupVisibility?
  /// A new custom group.
  public init(name: String, visibility: GroupVisibility? = nil) {
    self.name = name
    self.visibility = visibility
  }
}

/// `PATCH /v1/groups/{id}`: absent fields stay as they are. Standard groups accept only `visibility`.
public struct GroupUpdate: Sendable, Hashable, Codable {
  /// A new name (custom groups only).
  public var name: String?
  /// A new visibility.
  public var visibility: GroupVisibility?
  /// An update.
  public init(name: String? = nil, visibility: GroupVisibility? = nil) {
    self.name = name
    self.visibility = visibility
  }
}

/// `POST /v1/sharing/until`: a deadline for all sharing, or for what one group sees.
public struct SharingUntil: Sendable, Hashable, Codable {
  /// Share the location until this instant (UTC ms, in the future).
  public var until: Int64
  /// One of the caller's groups (not Blacklist): only this group stops seeing the location at `until`; the rest of
  /// the sharing state stays as it is. Absent: everyone stops (and a pause ends).
  public var groupId: GroupID?
  /// A deadline, for everyone or for one group.
  public init(until: Int64, groupId: GroupID? = nil) {
    self.until = until
    self.groupId = groupId
  }
}

/// `GET /v1/sharing/visible`: the people whose location the caller may see now.
public struct VisibleUsers: Sendable, Hashable, Codable {
  /// One person.
  public struct Person: Sendable, Hashable, Codable {
    /// The account.
    public var userId: UserID
    /// The full name, when the caller may see it.
    public var fullName: String?
    /// The time of the person's last fix (ms), absent while no position is known (or the last one lies in a
    /// privacy zone they hide): a page asks `GET /v1/users/{id}/location` only when it is present, and hears the
    /// first fix live.
    public var lastFixAt: Int64?
    /// How precisely the caller sees the person (`exact`, `approximate`, `town`); absent means `exact`.
    public var precision: LocationPrecision?
    /// The live channel that carries the person's fixes as the caller may see them: `seen_<precision>:<userId>`
    /// (absent from servers before precision per audience, whose viewers subscribe to `user:<userId>`).
    public var channel: String?
    /// A person.
    public init(
      userId: UserID, fullName: String?, lastFixAt: Int64? = nil, precision: LocationPrecision? = nil,
      channel: String? = nil
    ) {
      self.userId = userId
      self.fullName = fullName
      self.lastFixAt = lastFixAt
      self.precision = precision
      self.channel = channel
    }
  }
  /// The people, by id.
  public var users: [Person]
  /// A list.
  public init(users: [Person]) { self.users = users }
}

/// `POST /v1/fixes`: 1…1000 fixes of one device. Each fix's own `deviceId` is replaced by the batch's.
public struct FixBatch: Sendable, Hashable, Codable {
  /// The reporting device.
  public var deviceId: DeviceID
  /// The fixes, validated by DomainKit's ``LocationFix`` rules.
  public var fixes: [LocationFix]
  /// A batch.
  public init(deviceId: DeviceID, fixes: [LocationFix]) {
    self.deviceId = deviceId
    self.fixes = fixes
  }
}

/// The answer to `POST /v1/fixes`, sent only after the fixes are durably committed.
public struct FixReceipt: Sendable, Hashable, Codable {
  /// Fixes stored by this request.
  public var accepted: Int
  /// Fixes already stored (same device and timestamp), not stored again.
  public var duplicates: Int
  /// Fixes inside one of the account's privacy zones that store nothing: received and dropped, never to be sent
  /// again; absent when none.
  public var withheld: Int?
  /// A receipt.
  public init(accepted: Int, duplicates: Int, withheld: Int? = nil) {
    self.accepted = accepted
    self.duplicates = duplicates
    self.withheld = withheld
  }
}

/// `GET /v1/users/{id}/location`: the last known fix of a user the caller may see.
public struct UserLocation: Sendable, Hashable, Codable {
  /// The user.
  public var userId: UserID
  /// The newest stored fix not dated in the future, as the caller may see it (DomainKit's `AudienceView`: exact,
  /// at the centre of its ~1 km cell, or at its town). For anyone but its owner, its `deviceId` is an opaque handle
  /// of the device (the one live events carry), never the device's id. Absent while the person is in one of their
  /// privacy zones (``privateZoneAt``).
  public var fix: LocationFix?
  /// How precisely the caller sees the fix; absent means `exact`.
  public var precision: LocationPrecision?
  /// The town the fix was placed at, for `precision: town` (absent where the gazetteer knows none).
  public var town: String?
  /// When the person was last seen, in one of their privacy zones (UTC ms): no position is shown.
  public var privateZoneAt: Int64?
  /// A location.
  public init(
    userId: UserID, fix: LocationFix?, precision: LocationPrecision? = nil, town: String? = nil,
    privateZoneAt: Int64? = nil
  ) {
    self.userId = userId
    self.fix = fix
    self.precision = precision
    self.town = town
    self.privateZoneAt = privateZoneAt
  }
}

/// `GET /v1/history`: one page of the caller's fixes, newest first.
public struct HistoryPage: Sendable, Hashable, Codable {
  /// The fixes, newest first.
  public var fixes: [LocationFix]
  /// Pass as `cursor` for the next (older) page; absent on the last page.
  public var nextCursor: String?
  /// A page.
  public init(fixes: [LocationFix], nextCursor: String?) {
    self.fixes = fixes
    self.nextCursor = nextCursor
  }
}

/// One geohash cell of `GET /v1/history/clusters`.
public struct HistoryCluster: Sendable, Hashable, Codable {
  /// The cell (as long as the requested precision).
  public var geohash: String
  /// Fixes in the cell.
  public var count: Int
  /// Mean latitude of those fixes.
  public var latitude: Double
  /// Mean longitude of those fixes.
  public var longitude: Double
  /// A cluster.
  public init(geohash: String, count: Int, latitude: Double, longitude: Double) {
    self.geohash = geohash
    self.count = count
    self.latitude = latitude
    self.longitude = longitude
  }
}

/// `GET /v1/history/clusters`.
public struct HistoryClusters: Sendable, Hashable, Codable {
  /// The precision the cells were grouped by.
  public var precision: Int
  /// The cells, most fixes first.
  public var clusters: [HistoryCluster]
  /// Clusters.
  public init(precision: Int, clusters: [HistoryCluster]) {
    self.precision = precision
    self.clusters = clusters
  }
}

/// `GET /v1/history/map`: the caller's history in a view, in bounded size whatever the history's — the tracks
/// simplified at the zoom's resolution when few enough, otherwise fixes counted per geohash cell.
public struct HistoryMap: Sendable, Hashable, Codable {
  /// The tracks in the view, oldest first (empty when the answer is cells).
  public var tracks: [HistoryMapTrack]
  /// The cells, most fixes first (empty when the answer is tracks).
  public var cells: [HistoryCluster]
  /// The geohash length of the cells, when the answer is cells.
  public var precision: Int?
  /// The tolerance in metres the tracks were simplified with (about a pixel or two at the zoom).
  public var tolerance: Double
  /// The fixes the answer stands for: the view's (tracks), or those of every cell that meets the view (cells) — not
  /// only the vertices or cells answered.
  public var fixes: Int
  /// A map answer.
  public init(tracks: [HistoryMapTrack], cells: [HistoryCluster], precision: Int?, tolerance: Double, fixes: Int) {
    self.tracks = tracks
    self.cells = cells
    self.precision = precision
    self.tolerance = tolerance
    self.fixes = fixes
  }
}

/// One stretch of a device's track inside the view, without time gaps: stored fixes the simplification kept.
public struct HistoryMapTrack: Sendable, Hashable, Codable {
  /// The device that recorded it, when known.
  public var deviceId: DeviceID?
  /// The kept fixes, oldest first.
  public var points: [HistoryMapPoint]
  /// A track.
  public init(deviceId: DeviceID?, points: [HistoryMapPoint]) {
    self.deviceId = deviceId
    self.points = points
  }
}

/// A vertex of a map track: a stored fix's position and time.
public struct HistoryMapPoint: Sendable, Hashable, Codable {
  /// Degrees.
  public var latitude: Double
  /// Degrees.
  public var longitude: Double
  /// UTC milliseconds.
  public var timestamp: Int64
  /// A vertex.
  public init(latitude: Double, longitude: Double, timestamp: Int64) {
    self.latitude = latitude
    self.longitude = longitude
    self.timestamp = timestamp
  }
}

/// The answer to `DELETE /v1/history`.
public struct HistoryDeletion: Sendable, Hashable, Codable {
  /// Fixes deleted.
  public var deleted: Int
  /// A result.
  public init(deleted: Int) { self.deleted = deleted }
}

/// The payload of a live event on `user:<id>` and `group:<id>` (`GET /ws`, subprotocol `meridian.v1`): fixes
/// just stored for a user, oldest first.
public struct LiveLocation: Sendable, Hashable, Codable {
  /// Whose fixes these are.
  public var userId: UserID
  /// The device that reported them, as an opaque handle (the same in every event of that device, for every
  /// viewer): never the device's id, which is what its owner's apps report with.
  public var deviceId: DeviceID
  /// The stored fixes, oldest first (their `deviceId`s are handles too), as the channel's audience may see them:
  /// coarsened on `seen_approximate`/`seen_town` and groups of that precision; none inside a privacy zone.
  public var fixes: [LocationFix]
  /// The channel's precision, when not `exact`.
  public var precision: LocationPrecision?
  /// The town of the newest fix, on a `town` channel.
  public var town: String?
  /// The time of the newest fix taken in one of the person's privacy zones shown as "private zone", when the batch
  /// had one: the person is in a private zone (no position).
  public var privateZoneAt: Int64?
  /// A live location event.
  public init(
    userId: UserID, deviceId: DeviceID, fixes: [LocationFix], precision: LocationPrecision? = nil,
    town: String? = nil, privateZoneAt: Int64? = nil
  ) {
    self.userId = userId
    self.deviceId = deviceId
    self.fixes = fixes
    self.precision = precision
    self.town = town
    self.privateZoneAt = privateZoneAt
  }
}

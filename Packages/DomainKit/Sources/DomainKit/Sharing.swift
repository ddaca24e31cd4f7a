import Foundation

/// How long a location share lasts.
public enum ShareDuration: String, Sendable, Hashable, Codable, CaseIterable {
  /// One hour from now.
  case oneHour
  /// Until the end of the current day in the user's time zone.
  case untilEndOfDay
  /// No expiry.
  case always

  /// The expiry for a share started at `now`, or nil for ``always``.
  public func expiry(from now: Date, timeZone: TimeZone) -> Date? {
    switch self {
    case .oneHour: return now.addingTimeInterval(3600)
    case .untilEndOfDay:
      var calendar = Calendar(identifier: .gregorian)
      calendar.timeZone = timeZone
      return calendar.dateInterval(of: .day, for: now)?.end
    case .always: return nil
    }
  }
}

/// An owner's location-sharing switches. Wire names: `paused`, `until` (UTC ms or absent), `groupUntil`,
/// `viewerGrants`.
///
/// - `paused`: nobody sees the location (profile fields are unaffected).
/// - `until`: the location is shared until this instant for everyone; absent means always.
/// - `groupUntil`: a per-group expiry; after it the group no longer grants location.
/// - `viewerGrants`: a direct share with one viewer until an instant (absent value: always), even without a
///   group — e.g. "share with Anna for 1 hour". Blacklist and pause still win.
public struct SharingState: Sendable, Hashable, Codable {
  /// Sharing paused by the owner.
  public var paused: Bool
  /// Global expiry, UTC milliseconds; nil means always.
  public var until: Int64?
  /// Per-group expiry, UTC milliseconds.
  public var groupUntil: [GroupID: Int64]
  /// Direct shares with single viewers: expiry in UTC milliseconds, or nil for always.
  public var viewerGrants: [UserID: Int64?]
  /// When the owner last came out of a pause or a passed global deadline, UTC milliseconds; nil if never. What they
  /// did before stays out of the tracks shown to people without an account (share links).
  public var resumedAt: Int64?

  /// A sharing state; by default sharing is on, forever, with no direct grants.
  public init(
    paused: Bool = false, until: Int64? = nil, groupUntil: [GroupID: Int64] = [:],
    viewerGrants: [UserID: Int64?] = [:], resumedAt: Int64? = nil
  ) {
    self.paused = paused
    self.until = until
    self.groupUntil = groupUntil
    self.viewerGrants = viewerGrants
    self.resumedAt = resumedAt
  }

  /// Resumes sharing for everyone for `duration` (1 hour, until the end of the day in `timeZone`, or always).
  public mutating func share(for duration: ShareDuration, now: Date, timeZone: TimeZone) {
    paused = false
    until = duration.expiry(from: now, timeZone: timeZone).map(Timestamp.milliseconds)
  }

  /// Shares with one viewer for `duration`, whatever their groups.
  public mutating func share(with viewer: UserID, for duration: ShareDuration, now: Date, timeZone: TimeZone) {
    viewerGrants[viewer] = .some(duration.expiry(from: now, timeZone: timeZone).map(Timestamp.milliseconds))
  }

  /// Ends a direct share with `viewer`.
  public mutating func stopSharing(with viewer: UserID) { viewerGrants[viewer] = nil }
}

/// What an owner controls about who sees them: their groups, profile field audiences, sharing switches and privacy
/// zones.
public struct PrivacySettings: Sendable, Hashable {
  /// The owner.
  public var owner: UserID
  /// The owner's groups (standard and custom).
  public var groups: [Group]
  /// Audience per profile field; missing means ``FieldAudience/groups``.
  public var fieldAudience: [ProfileField: FieldAudience]
  /// Pause, expiry and direct grants.
  public var sharing: SharingState
  /// The owner's privacy zones: where others never see them (``AudienceView``).
  public var zones: [PrivacyZone]

  /// Settings for `owner`.
  public init(
    owner: UserID, groups: [Group], fieldAudience: [ProfileField: FieldAudience] = [:],
    sharing: SharingState = SharingState(), zones: [PrivacyZone] = []
  ) {
    self.owner = owner
    self.groups = groups
    self.fieldAudience = fieldAudience
    self.sharing = sharing
    self.zones = zones
  }

  /// Whether `viewer` is in the owner's Blacklist.
  public func isBlacklisted(_ viewer: UserID) -> Bool {
    groups.contains { $0.kind == .blacklist && $0.members.contains(viewer) }
  }
}

/// What can be seen of a user.
public enum Visible: Sendable, Hashable {
  /// The user's location (last fix and live updates).
  case location
  /// One profile field.
  case field(ProfileField)
}

/// The visibility rules of location sharing, as pure functions.
public enum Sharing {
  /// Whether `viewer` may see `what` of the owner of `settings` at `now` (UTC ms).
  ///
  /// Rules, in order: the owner sees everything; a blacklisted viewer sees nothing (Blacklist overrides every
  /// group, grant and audience); the location needs sharing not paused, not past `until`, and either a group
  /// containing the viewer that grants location (and whose per-group expiry has not passed) or an unexpired
  /// direct grant; a profile field is visible when its audience is `everyone`, or `groups` and a group containing
  /// the viewer grants it; `nobody` hides it.
  public static func canSee(_ viewer: UserID, _ what: Visible, of settings: PrivacySettings, at now: Int64) -> Bool {
    if viewer == settings.owner { return true }
    if settings.isBlacklisted(viewer) { return false }
    let memberOf = settings.groups.filter { $0.kind != .blacklist && $0.members.contains(viewer) }
    switch what {
    case .location:
      let sharing = settings.sharing
      if sharing.paused { return false }
      if let until = sharing.until, now >= until { return false }
      if let grant = sharing.viewerGrants[viewer], grant.map({ now < $0 }) ?? true { return true }
      return !locationGroups(of: settings, containing: viewer, at: now).isEmpty
    case .field(let field):
      switch settings.fieldAudience[field] ?? .groups {
      case .everyone: return true
      case .nobody: return false
      case .groups: return memberOf.contains { $0.visibility.fields.contains(field) }
      }
    }
  }

  /// The precision `viewer` sees the owner's location at, at `now`: ``LocationPrecision/exact`` for the owner and
  /// for an unexpired direct grant (a share with one person is a share of the position), else the most precise
  /// precision of the viewer's groups granting location now (a person in two groups gets the better of the two);
  /// ``LocationPrecision/hidden`` whenever ``canSee(_:_:of:at:)`` refuses the location.
  public static func precision(for viewer: UserID, of settings: PrivacySettings, at now: Int64) -> LocationPrecision {
    if viewer == settings.owner { return .exact }
    guard canSee(viewer, .location, of: settings, at: now) else { return .hidden }
    if let grant = settings.sharing.viewerGrants[viewer], grant.map({ now < $0 }) ?? true { return .exact }
    return LocationPrecision.mostPrecise(
      locationGroups(of: settings, containing: viewer, at: now).map(\.visibility.precision))
  }

  /// The owner's groups other than the Blacklist that hold `viewer`, grant location and have not passed their
  /// per-group expiry at `now`.
  static func locationGroups(of settings: PrivacySettings, containing viewer: UserID, at now: Int64) -> [Group] {
    settings.groups.filter { group in
      group.kind != .blacklist && group.members.contains(viewer) && group.visibility.grantsLocation
        && (settings.sharing.groupUntil[group.id].map { now < $0 } ?? true)
    }
  }

  /// What `viewer` sees of the owner's `fix` now: ``AudienceView/of(_:precision:zones:town:)`` at the viewer's
  /// ``precision(for:of:at:)`` with the owner's zones; the owner sees the fix as is.
  public static func view(
    of fix: LocationFix, for viewer: UserID, of settings: PrivacySettings, at now: Int64, town: Town? = nil
  ) -> AudienceView {
    if viewer == settings.owner { return .shown(fix, town: nil) }
    return AudienceView.of(
      fix, precision: precision(for: viewer, of: settings, at: now), zones: settings.zones, town: town)
  }

  /// Whether `viewer` may see an event that places the owner at a point (a geofence entered or left): the owner
  /// always; anyone else only when they see the owner's location exactly and the point lies in none of the owner's
  /// privacy zones — such an event places the owner within the fence, finer than a cell or a town. An event without
  /// a point (a device's own report without its fix) counts as outside the zones.
  public static func maySeeEvent(
    _ viewer: UserID, latitude: Double?, longitude: Double?, of settings: PrivacySettings, at now: Int64
  ) -> Bool {
    if viewer == settings.owner { return true }
    guard precision(for: viewer, of: settings, at: now) == .exact else { return false }
    return !isInZone(latitude: latitude, longitude: longitude, of: settings)
  }

  /// Whether a point lies in one of the owner's privacy zones (no point: in none).
  public static func isInZone(latitude: Double?, longitude: Double?, of settings: PrivacySettings) -> Bool {
    guard let latitude, let longitude else { return false }
    return settings.zones.contains { $0.contains(latitude: latitude, longitude: longitude) }
  }

  /// The profile fields `viewer` may see.
  public static func visibleFields(to viewer: UserID, of settings: PrivacySettings, at now: Int64) -> Set<
    ProfileField
  > {
    Set(ProfileField.allCases.filter { canSee(viewer, .field($0), of: settings, at: now) })
  }

  /// The users among `candidates` who may see the owner's location now: the audience of a live location event.
  public static func locationAudience(
    of settings: PrivacySettings, among candidates: some Sequence<UserID>, at now: Int64
  ) -> Set<UserID> {
    Set(candidates.filter { canSee($0, .location, of: settings, at: now) })
  }
}

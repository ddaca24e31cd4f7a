import DomainKit
import Foundation
import MeridianStore

/// What people other than its owner see of a fix, for every path that shows one (REST, the live fan-out, OwnTracks
/// answers, share links): DomainKit's one rule, ``AudienceView``, with the town looked up in the gazetteer (cached
/// per ~1 km cell) only for the audiences that see towns.
struct FixAudience: Sendable {
  /// The gazetteer's towns.
  let gazetteer: GazetteerCache

  /// The towns of `fixes`, in order: the gazetteer's nearest town within ``GazetteerLabeler/maximumDistance``; nil
  /// where it knows none (or can't be read now: the rule then falls back to a coarse cell).
  func towns(of fixes: [LocationFix]) async -> [Town?] {
    guard let matches = try? await gazetteer.matches(for: fixes.map(\.coordinate)) else {
      return fixes.map { _ in nil }
    }
    return matches.map { match in
      guard let match, match.distance <= GazetteerLabeler.maximumDistance else { return nil }
      let place = match.locality
      return Town(name: place.name, latitude: place.latitude, longitude: place.longitude)
    }
  }

  /// What an audience seeing at `precision` sees of each of `fixes`, their owner having `zones`.
  func views(of fixes: [LocationFix], precision: LocationPrecision, zones: [PrivacyZone]) async -> [AudienceView] {
    let towns = precision == .town ? await towns(of: fixes) : fixes.map { _ in nil }
    return zip(fixes, towns).map { AudienceView.of($0, precision: precision, zones: zones, town: $1) }
  }

  /// What `viewer` sees of `fix` of the owner of `settings` at `now` (the owner: the fix).
  func view(of fix: LocationFix, for viewer: UserID, of settings: PrivacySettings, at now: Int64) async
    -> AudienceView
  {
    if viewer == settings.owner { return .shown(fix, town: nil) }
    let precision = Sharing.precision(for: viewer, of: settings, at: now)
    return await views(of: [fix], precision: precision, zones: settings.zones)[0]
  }

  /// What an audience seeing at `precision` sees of a batch of fixes (oldest first); nil when it sees nothing of it.
  func batch(_ fixes: [LocationFix], precision: LocationPrecision, zones: [PrivacyZone]) async -> SharedBatch? {
    SharedBatch(await views(of: fixes, precision: precision, zones: zones))
  }
}

/// What an audience sees of a batch of fixes: the fixes shown (coarsened to its precision), the town of the newest
/// one, and when the newest fix in a privacy zone shown as "private zone" was taken.
struct SharedBatch: Sendable, Hashable {
  /// The fixes shown, oldest first.
  var fixes: [LocationFix]
  /// The town of the newest fix shown, for a `town` audience.
  var town: String?
  /// The time of the newest fix in a private zone.
  var privateZoneAt: Int64?

  /// The batch of `views` (oldest first); nil when none shows anything.
  init?(_ views: [AudienceView]) {
    var fixes: [LocationFix] = []
    var town: String?
    var privateZoneAt: Int64?
    for view in views {
      switch view {
      case .shown(let fix, let name):
        fixes.append(fix)
        town = name
      case .inPrivateZone(let timestamp): privateZoneAt = max(privateZoneAt ?? timestamp, timestamp)
      case .hidden: break
      }
    }
    guard !fixes.isEmpty || privateZoneAt != nil else { return nil }
    self.fixes = fixes
    self.town = town
    self.privateZoneAt = privateZoneAt
  }
}

import DomainKit
import Foundation
import MeridianAPI

/// Which of a venue's promotions run now and to whom the special ones are offered: the one rule behind the venue's
/// listing (`GET /v1/venues/{id}/promotions`), redeeming, and the operator's figures
/// (`GET /v1/admin/venues/{id}/promotions/stats`, `meridian-admin promotions list|stats`).
///
/// A promotion runs when its advertiser has it running (not paused or ended) and the time lies in its validity and
/// daily window, in the venue's time zone. A special one is offered to whoever its own audience rule
/// (``PromotionSettings/eligibility``, DomainKit's `PromotionEligibility`) selects.
public struct PromotionAvailability: Sendable {
  /// The venue.
  public let place: Place
  /// Every promotion of the venue, by id.
  public let promotions: [Promotion]
  /// Their advertisers' settings (a promotion without settings runs, with the default rule).
  public let settings: [PromotionID: PromotionSettings]
  /// The time the answers are for, UTC ms.
  public let now: Int64
  let store: any MeridianStore

  /// The venue's promotions and settings from `store`, at `now`.
  public init(venue place: Place, store: any MeridianStore, now: Int64) async throws {
    self.place = place
    self.store = store
    self.now = now
    promotions = try await store.promotions(venue: place.id)
    settings = try await store.promotionSettings(venue: place.id)
  }

  /// Whether a promotion in `state` runs at `time`: running, and within its validity and daily window in
  /// `timeZone`.
  public static func isRunning(_ promotion: Promotion, state: PromotionState, at time: Int64, timeZone: TimeZone)
    -> Bool
  {
    state == .running && promotion.isActive(at: time, timeZone: timeZone)
  }

  /// The advertiser's state of `promotion`.
  public func state(of promotion: Promotion) -> PromotionState { settings[promotion.id]?.state ?? .running }

  /// The audience rule of `promotion`.
  public func rule(of promotion: Promotion) -> PromotionEligibility {
    settings[promotion.id]?.eligibility ?? PromotionEligibility()
  }

  /// Whether `promotion` runs now.
  public func isRunning(_ promotion: Promotion) -> Bool {
    Self.isRunning(promotion, state: state(of: promotion), at: now, timeZone: place.resolvedTimeZone)
  }

  /// The promotions running now, by id.
  public var running: [Promotion] { promotions.filter(isRunning) }

  /// The audience rules of the special promotions running now, each once.
  var specialRules: [PromotionEligibility] {
    var rules: [PromotionEligibility] = []
    for promotion in running where promotion.audience == .special && !rules.contains(rule(of: promotion)) {
      rules.append(rule(of: promotion))
    }
    return rules
  }

  /// What `viewer` is offered now: the running general promotions, then the running special ones whose rule selects
  /// the viewer (each rule checked once); `eligible` when some special one is.
  public func offers(to viewer: UserID) async throws -> (eligible: Bool, promotions: [Promotion]) {
    var selected: [PromotionEligibility: Bool] = [:]
    for rule in specialRules {
      selected[rule] = try await EligibleAudience(store: store, rule: rule).isEligible(viewer, for: place, now: now)
    }
    let shown =
      running.filter { $0.audience == .general }
      + running.filter { $0.audience == .special && selected[rule(of: $0)] == true }
    return (selected.values.contains(true), shown)
  }

  /// How many users would be offered a special promotion now: those some running special promotion's rule selects,
  /// each counted once (0 when none runs).
  public func eligibleCount() async throws -> Int {
    var users: Set<UserID> = []
    for rule in specialRules {
      users.formUnion(try await EligibleAudience(store: store, rule: rule).eligibleUsers(for: place, now: now))
    }
    return users.count
  }
}

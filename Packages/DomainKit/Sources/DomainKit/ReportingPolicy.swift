/// Whether the app runs in the foreground, in the background, or is closed (woken by significant changes).
public enum AppState: String, Sendable, Hashable, Codable, CaseIterable {
  /// Visible: every fix is sent.
  case foreground
  /// Running in the background: a fix is sent after moving 10 m.
  case background
  /// Not running: a fix is sent after moving 100 m (significant change).
  case closed

  /// The movement in metres needed before the next fix is sent.
  public var minimumDistance: Double {
    switch self {
    case .foreground: 0
    case .background: 10
    case .closed: 100
    }
  }
}

/// The accuracy/battery trade-off the device runs with.
public enum AccuracyProfile: String, Sendable, Hashable, Codable, CaseIterable {
  /// 1–10 m (GPS): fixes worse than 10 m are dropped.
  case high
  /// 10–1000 m: fixes worse than 1000 m are dropped.
  case medium
  /// 1–3 km (cell): fixes worse than 3000 m are dropped.
  case low
  /// Significant changes only: fixes worse than 3000 m are dropped and at least 500 m of movement is needed.
  case significant

  /// The desired accuracy range in metres.
  public var accuracyRange: ClosedRange<Double> {
    switch self {
    case .high: 1...10
    case .medium: 10...1000
    case .low: 1000...3000
    case .significant: 500...3000
    }
  }

  /// The worst horizontal accuracy (metres) a fix may have to be sent.
  public var worstAcceptedAccuracy: Double { accuracyRange.upperBound }

  /// Movement in metres the profile itself requires between sent fixes.
  public var minimumDistance: Double { self == .significant ? 500 : 0 }
}

/// Why a fix was not sent.
public enum SkipReason: Sendable, Hashable, CustomStringConvertible {
  /// The fix's accuracy is worse than the profile allows.
  case accuracyTooPoor(accuracy: Double, limit: Double)
  /// The fix has no horizontal accuracy, so it can't be shown to meet the profile's bound (`limit` metres).
  case accuracyUnknown(limit: Double)
  /// The device has not moved far enough since the last sent fix.
  case tooClose(distance: Double, required: Double)
  /// Less than the minimum interval passed since the last sent fix (milliseconds).
  case tooSoon(elapsed: Int64, required: Int64)
  /// The fix is not newer than the last sent fix.
  case outOfOrder

  /// Why the fix was skipped, for logs.
  public var description: String {
    switch self {
    case .accuracyTooPoor(let accuracy, let limit): "accuracy \(accuracy) m is worse than the profile's \(limit) m"
    case .accuracyUnknown(let limit): "accuracy unknown, the profile needs \(limit) m or better"
    case .tooClose(let distance, let required): "moved \(distance) m, needs \(required) m"
    case .tooSoon(let elapsed, let required): "\(elapsed) ms since the last fix, needs \(required) ms"
    case .outOfOrder: "not newer than the last sent fix"
    }
  }
}

/// The outcome of ``ReportingPolicy/decide(_:)``.
public enum ReportingDecision: Sendable, Hashable {
  /// Send (upload and publish) the fix.
  case send
  /// Keep the fix locally but don't send it.
  case skip(SkipReason)
}

/// The device reporting policy: which recorded fixes are sent to the server.
///
/// A stateful value: it remembers the last sent fix. Distances are measured from the last *sent* fix, so slow
/// drift eventually triggers a send. A fix without a horizontal accuracy passes the accuracy check only when the
/// profile has no accuracy bound (``AccuracyProfile/worstAcceptedAccuracy`` infinite); every current profile has
/// one, so such fixes are skipped with ``SkipReason/accuracyUnknown(limit:)``.
/// Rules, in order: newer than the last sent fix; accuracy within the profile; at least `minimumInterval` ms
/// since the last sent fix; moved at least max(app state distance, profile distance). The first fix is sent
/// when it passes the accuracy check.
public struct ReportingPolicy: Sendable, Hashable {
  /// Foreground, background or closed.
  public var appState: AppState
  /// The accuracy profile.
  public var profile: AccuracyProfile
  /// The minimum time between sent fixes, in milliseconds.
  public var minimumInterval: Int64
  /// The last fix that was sent.
  public private(set) var lastSent: LocationFix?

  /// A policy; the default minimum interval is one second.
  public init(
    appState: AppState = .foreground, profile: AccuracyProfile = .high, minimumInterval: Int64 = 1000,
    lastSent: LocationFix? = nil
  ) {
    self.appState = appState
    self.profile = profile
    self.minimumInterval = minimumInterval
    self.lastSent = lastSent
  }

  /// The movement required between sent fixes in the current state and profile.
  public var requiredDistance: Double { max(appState.minimumDistance, profile.minimumDistance) }

  /// Decides whether `fix` is sent, and remembers it when it is.
  public mutating func decide(_ fix: LocationFix) -> ReportingDecision {
    let decision = evaluate(fix)
    if decision == .send { lastSent = fix }
    return decision
  }

  /// The decision for `fix` without changing state.
  public func evaluate(_ fix: LocationFix) -> ReportingDecision {
    if let last = lastSent, fix.timestamp <= last.timestamp { return .skip(.outOfOrder) }
    let limit = profile.worstAcceptedAccuracy
    if let accuracy = fix.horizontalAccuracy {
      if accuracy > limit { return .skip(.accuracyTooPoor(accuracy: accuracy, limit: limit)) }
    } else if limit.isFinite {
      return .skip(.accuracyUnknown(limit: limit))
    }
    guard let last = lastSent else { return .send }
    let elapsed = fix.timestamp.saturatingDifference(last.timestamp)
    if elapsed < minimumInterval { return .skip(.tooSoon(elapsed: elapsed, required: minimumInterval)) }
    let required = requiredDistance
    if required > 0 {
      let moved = fix.distance(to: last)
      if moved < required { return .skip(.tooClose(distance: moved, required: required)) }
    }
    return .send
  }
}

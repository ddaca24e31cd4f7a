import GeoKit

extension IdentifierTags {
  /// Tag of ``GeofenceID``.
  public enum Geofence {}
}

/// Identifies a geofence.
public typealias GeofenceID = Identifier<IdentifierTags.Geofence>

/// What happened between a person and a geofence.
public enum GeofenceEventKind: String, Sendable, Hashable, Codable, CaseIterable {
  /// The person arrived (was outside, now inside).
  case enter
  /// The person left (was inside, now outside).
  case exit
  /// The person has been inside for the dwell time.
  case dwell
}

/// Where a person is, as far as the rules can tell.
public enum GeofencePresence: String, Sendable, Hashable, Codable, CaseIterable {
  /// Not known yet, or forgotten after a gap.
  case unknown
  /// Inside the fence.
  case inside
  /// Outside the fence.
  case outside
}

/// What the rules remember per (person, geofence) between fixes.
public struct GeofenceState: Sendable, Hashable, Codable {
  /// Where the person is.
  public var presence: GeofencePresence
  /// When ``presence`` was established (UTC ms), nil while unknown.
  public var since: Int64?
  /// The newest fix considered (UTC ms); older or equal fixes are ignored.
  public var lastFixAt: Int64?
  /// Consecutive fixes wholly outside (but within the hysteresis margin) while inside.
  public var outsideStreak: Int
  /// Whether the dwell of the current stay was already reported.
  public var dwellReported: Bool

  /// A state from its parts; the default is the state of a person never seen near the fence.
  public init(
    presence: GeofencePresence = .unknown, since: Int64? = nil, lastFixAt: Int64? = nil, outsideStreak: Int = 0,
    dwellReported: Bool = false
  ) {
    self.presence = presence
    self.since = since
    self.lastFixAt = lastFixAt
    self.outsideStreak = outsideStreak
    self.dwellReported = dwellReported
  }
}

/// One event produced by the rules: its kind and the time of the fix (or report) that decided it.
public struct GeofenceTransition: Sendable, Hashable, Codable {
  /// What happened.
  public var kind: GeofenceEventKind
  /// UTC ms of the deciding fix.
  public var timestamp: Int64

  /// A transition.
  public init(kind: GeofenceEventKind, timestamp: Int64) {
    self.kind = kind
    self.timestamp = timestamp
  }
}

/// Why a geofence's shape was refused.
public enum GeofenceShapeError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A circle's radius is outside the allowed range.
  case radiusOutOfRange(Double, allowed: ClosedRange<Double>)
  /// A polygon is not a simple area.
  case invalidPolygon(PolygonError)

  /// What was wrong and what is allowed.
  public var description: String {
    switch self {
    case .radiusOutOfRange(let radius, let allowed):
      "radius \(radius) m is outside \(Int(allowed.lowerBound))…\(Int(allowed.upperBound)) m"
    case .invalidPolygon(let error): error.description
    }
  }
}

/// The rules that turn fixes into `enter`, `exit` and `dwell` events without flapping. Pure: a fix, a fence and the
/// previous ``GeofenceState`` give the next state and the events.
///
/// - A fix decides only when its accuracy circle lies wholly on one side of the edge.
/// - `exit` needs the accuracy circle wholly outside by a margin (``hysteresisFraction`` of the fence's radius, at
///   least ``minimumHysteresis`` metres) or ``exitFixes`` consecutive fixes wholly outside.
/// - A fix not newer than the last one considered changes nothing (duplicates, out-of-order delivery).
/// - A gap longer than ``maximumGap`` forgets the presence: the next fix establishes it without an event.
public struct GeofenceRules: Sendable, Hashable, Codable {
  /// Time inside before `dwell`, ms (default 5 minutes).
  public var dwellTime: Int64
  /// Exit margin as a fraction of the fence's radius (default 0.2).
  public var hysteresisFraction: Double
  /// Smallest exit margin, metres (default 30).
  public var minimumHysteresis: Double
  /// Consecutive fixes wholly outside that make an exit without the margin (default 2).
  public var exitFixes: Int
  /// Longest gap between fixes that keeps the state, ms (default 2 hours).
  public var maximumGap: Int64
  /// Allowed circle radii, metres (default 25…50,000).
  public var radiusRange: ClosedRange<Double>
  /// Most vertices of a polygon (default 1,000).
  public var maximumVertices: Int

  /// Rules with the defaults above.
  public init(
    dwellTime: Int64 = 300_000, hysteresisFraction: Double = 0.2, minimumHysteresis: Double = 30, exitFixes: Int = 2,
    maximumGap: Int64 = 7_200_000, radiusRange: ClosedRange<Double> = 25...50_000, maximumVertices: Int = 1_000
  ) {
    self.dwellTime = dwellTime
    self.hysteresisFraction = hysteresisFraction
    self.minimumHysteresis = minimumHysteresis
    self.exitFixes = exitFixes
    self.maximumGap = maximumGap
    self.radiusRange = radiusRange
    self.maximumVertices = maximumVertices
  }

  /// Checks a fence's shape: a circle's radius within ``radiusRange``, a polygon simple with at most
  /// ``maximumVertices`` vertices.
  /// - Throws: ``GeofenceShapeError``.
  public func validate(_ shape: Geofence) throws(GeofenceShapeError) {
    switch shape {
    case .circle(_, let radius):
      guard radius.isFinite, radiusRange.contains(radius) else {
        throw .radiusOutOfRange(radius, allowed: radiusRange)
      }
    case .polygon(let polygon):
      do { try polygon.validate(maximumVertices: maximumVertices) } catch { throw .invalidPolygon(error) }
    }
  }

  /// The exit margin of `shape`, metres.
  public func hysteresis(of shape: Geofence) -> Double {
    max(hysteresisFraction * shape.equivalentRadius, minimumHysteresis)
  }

  /// The next state after `fix` and the events it decides (in order: `enter`, then possibly `dwell`; or `exit`).
  public func evaluate(_ fix: LocationFix, in shape: Geofence, state: GeofenceState) -> (
    state: GeofenceState, events: [GeofenceTransition]
  ) {
    evaluate(fix, signedDistance: shape.signedDistance(to: fix.coordinate), in: shape, state: state)
  }

  /// ``evaluate(_:in:state:)`` for a fence kept prepared and a fix's point prepared once for all its fences.
  public func evaluate(_ fix: LocationFix, at point: HaversinePoint, in fence: PreparedGeofence, state: GeofenceState)
    -> (state: GeofenceState, events: [GeofenceTransition])
  {
    evaluate(fix, signedDistance: fence.signedDistance(to: point), in: fence.shape, state: state)
  }

  /// The rules on `fix`, whose signed distance to the edge of `shape` (computed only when the fix is newer than the
  /// state's) is `signedDistance`.
  private func evaluate(
    _ fix: LocationFix, signedDistance: @autoclosure () -> Double, in shape: Geofence, state: GeofenceState
  ) -> (state: GeofenceState, events: [GeofenceTransition]) {
    let time = fix.timestamp
    if let last = state.lastFixAt, time <= last { return (state, []) }
    var next = state
    if let last = state.lastFixAt, time.saturatingDifference(last) > maximumGap { next = GeofenceState() }
    next.lastFixAt = time
    let distance = signedDistance()
    let accuracy = max(0, fix.horizontalAccuracy ?? 0)
    let whollyInside = distance <= -accuracy
    let whollyOutside = distance >= accuracy
    var events: [GeofenceTransition] = []
    switch next.presence {
    case .unknown:
      if whollyInside {
        next = GeofenceState(presence: .inside, since: time, lastFixAt: time)
      } else if whollyOutside {
        next = GeofenceState(presence: .outside, since: time, lastFixAt: time)
      }
    case .outside:
      if whollyInside {
        next = GeofenceState(presence: .inside, since: time, lastFixAt: time)
        events.append(GeofenceTransition(kind: .enter, timestamp: time))
      }
    case .inside:
      if whollyOutside {
        next.outsideStreak += 1
        if distance >= accuracy + hysteresis(of: shape) || next.outsideStreak >= exitFixes {
          next = GeofenceState(presence: .outside, since: time, lastFixAt: time)
          events.append(GeofenceTransition(kind: .exit, timestamp: time))
        }
      } else {
        next.outsideStreak = 0
      }
    }
    if next.presence == .inside, !next.dwellReported, let since = next.since,
      time.saturatingDifference(since) >= dwellTime
    {
      next.dwellReported = true
      events.append(GeofenceTransition(kind: .dwell, timestamp: time))
    }
    return (next, events)
  }

  /// Applies an `enter` or `exit` reported by the device itself (OwnTracks `transition`). It is recorded — and the
  /// state follows it, so the server's own evaluation does not report it again — unless the state already says so
  /// or changed after `timestamp`. A reported `dwell` changes nothing.
  public func applyReported(_ kind: GeofenceEventKind, at timestamp: Int64, to state: GeofenceState) -> (
    state: GeofenceState, recorded: Bool
  ) {
    let presence: GeofencePresence
    switch kind {
    case .enter: presence = .inside
    case .exit: presence = .outside
    case .dwell: return (state, false)
    }
    if state.presence == presence { return (state, false) }
    if state.presence != .unknown, let since = state.since, timestamp < since { return (state, false) }
    let last = max(state.lastFixAt ?? timestamp, timestamp)
    return (GeofenceState(presence: presence, since: timestamp, lastFixAt: last), true)
  }
}

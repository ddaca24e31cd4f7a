import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NetworkingKit

/// `/v1/geofences`: a person's geofences (circles and polygons, shared with nobody, a group or everyone allowed to
/// see their location), the fences others share with them, and the events of both.
struct GeofenceFeature: Sendable {
  let environment: ServerEnvironment
  let monitor: GeofenceMonitor
  var store: any MeridianStore { environment.store }
  var rules: GeofenceRules { monitor.rules }

  func register(on routes: RouteRegistrar) {
    routes.on(API.geofences) { call in GeofenceList(items: try await visibleGeofences(call.authenticated())) }
    routes.on(API.createGeofence, status: .created) { call in
      try await create(call.authenticated(), call.body, acceptLanguage: call.headers[.acceptLanguage])
    }
    routes.on(API.updateGeofence) { call in
      try await update(call.authenticated(), call.parameters.id, call.body)
    }
    routes.on(API.deleteGeofence, status: .noContent) { call in
      let fence = try await ownGeofence(call.authenticated(), call.parameters.id)
      _ = try await store.deleteGeofence(fence.id)
      await monitor.fencesChanged(owner: fence.ownerId)
      return NoContent()
    }
    routes.on(API.geofenceEvents) { call in try await events(call.authenticated(), call.parameters) }
  }

  /// The caller's fences and those others share with them, oldest first.
  func visibleGeofences(_ viewer: UserID) async throws -> [GeofenceItem] {
    let others = try await store.sharingCandidates(viewer: viewer).filter { $0 != viewer }
    let time = environment.now()
    var settings: [UserID: PrivacySettings] = [:]
    for owner in others { settings[owner] = try await store.privacySettings(owner: owner) }
    return try await store.geofences(owners: [viewer] + others).filter { fence in
      GeofenceMonitor.maySee(viewer, fence, ownerSettings: settings[fence.ownerId], at: time)
    }
  }

  func create(_ owner: UserID, _ body: NewGeofence, acceptLanguage: String? = nil) async throws -> GeofenceItem {
    let (name, shape) = try await nameAndShape(body, languages: AcceptLanguage(acceptLanguage).ranges)
    let time = environment.now()
    let fence = GeofenceItem(
      id: GeofenceID(Secrets.userID()), ownerId: owner, name: name, shape: shape,
      sharing: body.sharing ?? (body.groupId == nil ? .nobody : .group), groupId: body.groupId,
      alerts: try await validatedAlerts(body.alerts, owner: owner), createdAt: time, updatedAt: time)
    let checked = try await validated(fence)
    try await checkRoom(for: owner)
    try await store.createGeofence(checked)
    await monitor.fencesChanged(owner: owner)
    return checked
  }

  /// The body's name and shape, or, with `placeId`, a circle around the place's location named after it (in the first
  /// of `languages` it has, else English): `404` for an unknown place, `422 invalid_geofence` for one without a
  /// location or a body giving both a place and a shape.
  func nameAndShape(_ body: NewGeofence, languages: [String]) async throws -> (String, GeofenceShape) {
    guard let placeID = body.placeId else {
      guard let name = body.name, let shape = body.shape else {
        throw Self.invalid("A geofence needs 'name' and 'shape', or the 'placeId' of a place to surround.")
      }
      if body.radius != nil { throw Self.invalid("'radius' goes with 'placeId'; a circle's radius is in its shape.") }
      return (name, shape)
    }
    guard body.shape == nil else { throw Self.invalid("Give 'shape' or 'placeId', not both.") }
    try Identifier.check(placeID.rawValue, name: "placeId")
    guard let place = try await store.place(placeID)?.listing.record.place else {
      throw APIError.notFound("There is no such place.")
    }
    guard let center = place.location else {
      throw Self.invalid("This place has no location to put a geofence around.")
    }
    let name = body.name ?? place.name.resolved(for: languages) ?? placeID.rawValue
    return (
      String(name.prefix(GeofenceItem.maximumNameLength)),
      .circle(center: center, radius: body.radius ?? NewGeofence.defaultPlaceRadius)
    )
  }

  /// Throws `409 geofence_limit_reached` when `owner` has as many geofences as the operator allows.
  func checkRoom(for owner: UserID) async throws {
    let maximum = monitor.settings.maximumPerPerson
    guard try await store.geofences(owners: [owner]).count < maximum else {
      throw APIError(
        status: 409, code: .geofenceLimitReached,
        message: "You have \(maximum) geofences, as many as this server allows; delete one to make another.")
    }
  }

  func update(_ owner: UserID, _ id: GeofenceID, _ body: GeofenceUpdate) async throws -> GeofenceItem {
    var fence = try await ownGeofence(owner, id)
    if let name = body.name { fence.name = name }
    if let shape = body.shape { fence.shape = shape }
    if let sharing = body.sharing {
      fence.sharing = sharing
      if sharing != .group { fence.groupId = nil }
    }
    if let group = body.groupId { fence.groupId = group }
    // Only a rule in the body is checked: a person of the stored rule who stopped sharing since doesn't block a
    // rename (their events don't reach the owner anyway).
    if let alerts = body.alerts { fence.alerts = try await validatedAlerts(alerts, owner: owner) }
    fence.updatedAt = environment.now()
    let checked = try await validated(fence)
    guard try await store.updateGeofence(checked) else { throw APIError.notFound("There is no such geofence.") }
    await monitor.fencesChanged(owner: owner)
    return checked
  }

  /// The caller's own fence `id`; `404` for another person's (whether it exists is not revealed).
  func ownGeofence(_ owner: UserID, _ id: GeofenceID) async throws -> GeofenceItem {
    guard let fence = try await store.geofence(id), fence.ownerId == owner else {
      throw APIError.notFound("You have no geofence '\(echo(id.rawValue))'.")
    }
    return fence
  }

  /// `fence` with its name trimmed, once its name, shape and sharing are valid.
  /// - Throws: `422 invalid_geofence` naming what is wrong.
  func validated(_ fence: GeofenceItem) async throws -> GeofenceItem {
    var fence = fence
    fence.name = try GeofenceItem.nameRule.checked(fence.name, field: "name", status: 422, code: .invalidGeofence)
    do {
      try rules.validate(fence.shape.geofence)
    } catch {
      throw Self.invalid("The shape is not valid: \(error.description).")
    }
    if let id = fence.groupId { try Identifier.check(id.rawValue, name: "groupId") }
    if fence.sharing == .group {
      guard let id = fence.groupId, let group = try await store.group(id), group.ownerID == fence.ownerId,
        group.kind != .blacklist
      else {
        throw Self.invalid("Sharing with a group needs 'groupId', one of your groups other than the Blacklist.")
      }
    }
    return fence
  }

  /// `rule` as stored (nil when it allows everything), once valid: DomainKit's checks, and each of its `people` the
  /// owner or someone who shares their location with the owner (``SocialStore/sharingCandidates(viewer:)``: a group
  /// of theirs with the owner in it, or a direct grant).
  /// - Throws: `400 invalid_alert_rule`.
  func validatedAlerts(_ rule: GeofenceAlertRule?, owner: UserID) async throws -> GeofenceAlertRule? {
    guard let rule else { return nil }
    let checked: GeofenceAlertRule
    do {
      checked = try rule.validated()
    } catch {
      throw Self.invalidAlerts("The alert rule is not valid: \(error.description).")
    }
    if checked.allowsEverything { return nil }
    if let people = checked.people {
      for person in people { try Identifier.check(person.rawValue, name: "alerts.people") }
      let sharing = Set(try await store.sharingCandidates(viewer: owner))
      if let stranger = people.first(where: { $0 != owner && !sharing.contains($0) }) {
        throw Self.invalidAlerts(
          "'\(echo(stranger.rawValue))' in 'alerts.people' does not share their location with you; name yourself or "
            + "people who do.")
      }
    }
    return checked
  }

  static func invalidAlerts(_ message: String) -> APIError {
    APIError(status: 400, code: .invalidAlertRule, message: message)
  }

  static func invalid(_ message: String) -> APIError {
    APIError(status: 422, code: .invalidGeofence, message: message)
  }

  /// A page of events: the caller's own, those on the caller's fences and those of the caller's proximity rules
  /// (``ProximityFeature``), of people whose location they may see now exactly, outside their privacy zones (``Sharing/maySeeEvent(_:latitude:longitude:of:at:)``; others are left
  /// out of the page, so a page may hold fewer than `limit`).
  func events(_ viewer: UserID, _ parameters: GeofenceEventParameters) async throws -> GeofenceEventList {
    var cursor: HistoryCursor?
    if let text = parameters.cursor {
      guard let parsed = HistoryCursor(text: text) else {
        throw APIError.invalidRequest("'cursor' must be a nextCursor from an earlier page.")
      }
      cursor = parsed
    }
    let page = try await store.geofenceAndProximityEvents(
      GeofenceEventQuery(
        involving: viewer, geofence: parameters.geofence, user: parameters.user, kind: parameters.kind,
        from: parameters.from, to: parameters.to, cursor: cursor, limit: parameters.limit))
    let time = environment.now()
    var settings: [UserID: PrivacySettings?] = [:]
    var items: [GeofenceEventItem] = []
    for event in page.events {
      if event.userId == viewer {
        items.append(event)
        continue
      }
      if settings[event.userId] == nil { settings[event.userId] = try await store.privacySettings(owner: event.userId) }
      guard let person = settings[event.userId] ?? nil else { continue }
      if Sharing.maySeeEvent(viewer, latitude: event.lat, longitude: event.lon, of: person, at: time) {
        items.append(event)
      }
    }
    return GeofenceEventList(items: items, nextCursor: page.next?.text)
  }
}

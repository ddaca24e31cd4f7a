import DomainKit
import Foundation
import HTTPTypes
import Hummingbird
import MeridianAPI
import MeridianSecrets
import MeridianStore
import NIOCore
import NetworkingKit

/// `POST /v1/history/import`: a history file as the request body, merged into the caller's history as
/// `meridian-admin history import` does. The body is streamed (inflated on the fly when it is gzip) into a
/// temporary file (``ImportSpool``, written and read on NIO's thread pool), never held in memory; the file is read once to check every record (a bad one refuses the whole
/// file, nothing stored) and once more to store it in batches. The temporary file is unlinked as soon as it is
/// created, so nothing of it is left behind when the import ends, fails or the process is killed (`kill -9`). Its
/// size, on the wire and inflated, is bounded by ``maximumBytes`` (`MERIDIAN_MAX_HISTORY_IMPORT_BYTES`, 512 MiB by
/// default).
///
/// A file obeys the rules of the REST routes: its device ids are checked as `POST /v1/fixes` checks them, its fixes'
/// times as ingest does (none before 2000 or past ``ServerLimits/futureFixSeconds`` ahead), its new devices count
/// against ``ServerLimits/devicesPerAccount``, and its fixes against the account's import quota,
/// ``ServerLimits/importedFixesPerAccountPerDay`` (kept apart from the per-minute upload rate, which a history of
/// years could never pass).
struct HistoryImport: Sendable {
  let environment: ServerEnvironment
  /// The largest body accepted, on the wire and after gzip decompression.
  let maximumBytes: Int
  /// Fixes imported per account per day.
  let quota: RateLimiter
  /// Fixes stored per transaction.
  static let batch = 1000

  /// The route over `environment`, taking bodies up to `maximumBytes`.
  init(environment: ServerEnvironment, maximumBytes: Int) {
    self.environment = environment
    self.maximumBytes = maximumBytes
    quota = RateLimiter(
      limit: environment.limits.importedFixesPerAccountPerDay, window: 86_400_000,
      counters: .of(environment.store.sharedLimits, purpose: "imports.account"))
  }

  func register(on routes: RouteRegistrar) {
    let feature = self
    let jobs = HistoryImportJobs(importer: self)
    let limits = RouteRegistrar.BodyLimits(wire: maximumBytes, decompressed: maximumBytes)
    routes.onStream(API.importHistory, limits: limits) { call in
      let (user, spool, _) = try await feature.receive(call)
      return try RouteRegistrar.json(try await feature.importFile(spool, user: user))
    }
    routes.onStream(API.startHistoryImport, limits: limits) { call in
      let (user, spool, bytes) = try await feature.receive(call)
      let job = try await jobs.start(spool, bytes: bytes, user: user, logger: call.logger)
      return try RouteRegistrar.json(job, status: .accepted, headers: [.location: "/v1/history/imports/\(job.id)"])
    }
    routes.on(API.historyImportJob) { call in try await jobs.job(call.parameters.id, owner: call.authenticated()) }
    routes.on(API.historyImportJobs) { call in try await jobs.list(call.authenticated()) }
  }

  /// The caller and the upload's body, spooled to a temporary file; the body is not read for an account that keeps
  /// no history.
  func receive<Parameters>(_ call: StreamingRouteCall<Parameters>) async throws -> (UserID, ImportSpool, Int) {
    let user = try call.authenticated()
    if try await environment.store.isLiveOnly(user) { throw APIError.liveOnlyRefusesImport }
    let spool = try await ImportSpool.create()
    return (user, spool, try await spool.append(call.body))
  }

  /// How far an import has got, reported after every 64 KiB of the file read.
  struct Progress: Sendable {
    /// Whether the fixes are being stored (the second reading), else checked.
    var storing: Bool
    /// The file's format.
    var format: HistoryFileKind
    /// Bytes read by this reading.
    var bytesRead: Int
    /// Fixes read by this reading.
    var read: Int
    /// Fixes stored and found stored already, so far.
    var stored: Int
    var duplicates: Int
  }

  /// Checks the whole file, then stores it in batches; returns the summary. `progress` is told after every chunk.
  func importFile(
    _ file: ImportSpool, user: UserID, progress: @Sendable (Progress) async -> Void = { _ in }
  ) async throws -> HistoryImportSummary {
    let head = try await file.read(at: 0, upTo: 65_536)
    guard let format = HistoryFileKind(head: head) else {
      throw APIError(
        status: 415, code: .unsupportedMediaType,
        message: "The body is no GPX, CSV, GeoJSON or Google location history file (told by its content).")
    }
    let fallback = DeviceID("import-\(user.rawValue)")
    let limits = environment.limits
    let now = environment.now()
    // First reading: every record is checked (its time as ingest checks it) and the devices named, each checked as
    // the REST routes check a device id (keyed by the name in the file, valued by the id stored); nothing is stored.
    var read = 0
    var devices: [DeviceID: DeviceID] = [:]
    let checked: HistoryFileReading
    do {
      checked = try await Self.read(file, format) { fixes, bytesRead in
        let first = read
        read += fixes.count
        await progress(
          Progress(storing: false, format: format, bytesRead: bytesRead, read: read, stored: 0, duplicates: 0))
        try FixTimes.check(fixes, now: now, futureSeconds: limits.futureFixSeconds) { "fixes[\(first + $0)]" }
        for fix in fixes where devices.count <= 100 {
          let named = fix.deviceID ?? fallback
          if devices[named] == nil { devices[named] = try FixIngest.checkedDeviceID(named.rawValue) }
        }
      }
    } catch let error as FormatError {
      throw APIError.invalidRequest(
        "The \(format.rawValue) file is not valid: \(error.description). Nothing was imported.")
    } catch let error as APIError {
      throw APIError(
        status: error.status, code: error.code,
        message: "The \(format.rawValue) file is not valid: \(error.message) Nothing was imported.")
    }
    if read == 0 {
      throw APIError.invalidRequest(
        checked.skipped.isEmpty
          ? "The file holds no location. Nothing was imported."
          : "The file has no point with a time: \(checked.skipped). Nothing was imported.")
    }
    guard devices.count <= 100 else {
      throw APIError.invalidRequest("The file names more than 100 devices. Nothing was imported.")
    }
    let store = environment.store
    let fileDevices = Set(devices.values)
    for device in fileDevices {
      if let owner = try await store.deviceOwner(device), owner != user {
        throw APIError(
          status: 409, code: .deviceNotOwned,
          message: "Device '\(echo(device.rawValue))' in the file belongs to another account. Nothing was imported.")
      }
    }
    let maxDevices = ServerLimits.active(limits.devicesPerAccount)
    if let maxDevices {
      let owned = Set(try await store.devices(owner: user).map(\.id))
      let added = fileDevices.subtracting(owned).count
      guard owned.count + added <= maxDevices else {
        throw APIError(
          status: 409, code: .quotaExceeded,
          message: "The file names \(added) new devices and this account has \(owned.count); at most \(maxDevices) "
            + "are allowed. Nothing was imported.")
      }
    }
    if quota.limit > 0 {
      guard read <= quota.limit else {
        throw APIError(
          status: 409, code: .quotaExceeded,
          message: "The file holds \(read) fixes; an account may import at most \(quota.limit) a day. Split it and "
            + "import the parts on different days. Nothing was imported.")
      }
      if let wait = await quota.take(user.rawValue, cost: read, now: now) {
        throw APIError.rateLimited(
          "This file's \(read) fixes and what this account imported today pass the \(quota.limit) fixes a day "
            + "allowed; try again later. Nothing was imported.", retryAfterMilliseconds: wait)
      }
    }
    for device in fileDevices.sorted() {
      // Claimed with the quota, as ingest claims: another account or import may have claimed in the meantime.
      try FixIngest.check(
        try await store.claimDevice(device, owner: user, now: now, maxDevices: maxDevices), device: device)
    }
    // Second reading: stored in batches; a fix already stored is a duplicate.
    var writer = HistoryBatchWriter(
      store: store, user: user, now: now, batchSize: Self.batch,
      rowsPerSecond: ServerLimits.active(limits.importedFixesPerSecond)
    ) { [devices] in devices[$0.deviceID ?? fallback] ?? fallback }
    // The writer leaves out fixes inside a privacy zone that stores nothing.
    var handed = 0
    _ = try await Self.read(file, format) { fixes, bytesRead in
      try await writer.add(fixes)
      handed += fixes.count
      await progress(
        Progress(
          storing: true, format: format, bytesRead: bytesRead, read: handed, stored: writer.stored,
          duplicates: writer.duplicates))
    }
    try await writer.flush()
    return HistoryImportSummary(
      format: format.rawValue, read: read, stored: writer.stored, duplicates: writer.duplicates,
      skipped: checked.skipped.count,
      skippedLines: checked.skipped.lines, devices: fileDevices.sorted().map(\.rawValue), google: checked.google,
      withheld: writer.withheld > 0 ? writer.withheld : nil)
  }

  /// Reads the spooled file from its start as `format`, calling `body` with the fixes of each 64 KiB chunk and the
  /// bytes read so far.
  static func read(
    _ file: ImportSpool, _ format: HistoryFileKind, _ body: ([LocationFix], Int) async throws -> Void
  ) async throws -> HistoryFileReading {
    try await format.read(chunk: { try await file.read(at: $0, upTo: 65_536) }, body)
  }
}

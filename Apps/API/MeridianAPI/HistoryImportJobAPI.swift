import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: History import jobs

  /// `POST /v1/history/imports`: a history file as the body, as ``importHistory`` takes it, answered `202` with a
  /// ``HistoryImportJob`` (and `Location: /v1/history/imports/{id}`) as soon as the body is received; the import goes
  /// on and reports its progress through ``historyImportJob``. The same refusals before the body is read (`409
  /// live_only`, `413`).
  public static let startHistoryImport = Endpoint<Void, Data, HistoryImportJob>(
    .post, "/v1/history/imports", body: .raw(contentType: "application/octet-stream"))
  /// `GET /v1/history/imports/{id}`: the caller's import job now. `404 not_found` for a job that isn't the caller's.
  public static let historyImportJob = Endpoint<HistoryImportJobRef, NoBody, HistoryImportJob>(
    .get, "/v1/history/imports/\(\.id, "id")")
  /// `GET /v1/history/imports`: the caller's last import jobs (the server keeps 20), newest first.
  public static let historyImportJobs = Endpoint<Void, NoBody, HistoryImportJobList>(.get, "/v1/history/imports")

  /// The import-job endpoints, for ``all``.
  static let historyImportJobEndpoints: [EndpointDescriptor] = [
    startHistoryImport.descriptor, historyImportJob.descriptor, historyImportJobs.descriptor,
  ]
}

/// An import job's id in a path.
public struct HistoryImportJobRef: RouteParameters, Hashable {
  /// The job's id.
  public var id: String
  /// A reference.
  public init(id: String) { self.id = id }
  /// Reads `{id}`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = try path.required("id")
  }
}

/// A history import running on the server, or ended (`POST /v1/history/imports`).
public struct HistoryImportJob: Codable, Sendable, Hashable {
  /// Where an import is.
  public enum State: String, Codable, Sendable, Hashable, CaseIterable {
    /// Every record is being read and checked; nothing is stored yet.
    case checking
    /// The file is good and its fixes are being stored.
    case storing
    /// Every fix is stored (or was already): ``HistoryImportJob/summary`` says what was done.
    case done
    /// The file was refused or the import failed: ``HistoryImportJob/error`` says why (nothing was stored when it
    /// was refused while ``checking``).
    case failed
    /// The server stopped while the job ran (it has not reported for a minute). Uploading the same file again stores
    /// what is missing, each point once.
    case interrupted
  }

  /// The job's id.
  public var id: String
  /// Where it is.
  public var state: State
  /// `gpx`, `csv`, `geojson` or `google`, once told from the content.
  public var format: String?
  /// The file's size in bytes (as received, after decompression).
  public var bytes: Int
  /// Bytes of the file read by the current pass (checking, then storing).
  public var bytesRead: Int
  /// Fixes read so far (while checking: checked; while storing: handed to the store).
  public var read: Int
  /// New fixes stored so far.
  public var stored: Int
  /// Fixes the history held already.
  public var duplicates: Int
  /// When done: the import's summary, as `POST /v1/history/import` answers it.
  public var summary: HistoryImportSummary?
  /// When failed: why, as the error envelope's `code` and `message`.
  public var error: StandardErrorEnvelope.Detail?
  /// When the job was created and last reported, UTC ms.
  public var createdAt: Int64
  public var updatedAt: Int64

  /// A job.
  public init(
    id: String, state: State, format: String? = nil, bytes: Int, bytesRead: Int = 0, read: Int = 0, stored: Int = 0,
    duplicates: Int = 0, summary: HistoryImportSummary? = nil, error: StandardErrorEnvelope.Detail? = nil,
    createdAt: Int64, updatedAt: Int64
  ) {
    self.id = id
    self.state = state
    self.format = format
    self.bytes = bytes
    self.bytesRead = bytesRead
    self.read = read
    self.stored = stored
    self.duplicates = duplicates
    self.summary = summary
    self.error = error
    self.createdAt = createdAt
    self.updatedAt = updatedAt
  }
}

/// `GET /v1/history/imports`.
public struct HistoryImportJobList: Codable, Sendable, Hashable {
  /// The jobs, newest first.
  public var items: [HistoryImportJob]
  /// A list.
  public init(items: [HistoryImportJob]) { self.items = items }
}

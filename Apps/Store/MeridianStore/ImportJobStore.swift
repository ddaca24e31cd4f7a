import DomainKit

/// A history import job as the store keeps it (`POST /v1/history/imports`): the job's document as JSON, which the
/// server writes and reads (the store holds no rule about it), by id and owner. Any node answers for any job, so a
/// person behind a load balancer follows an import wherever it runs.
public struct ImportJobRecord: Sendable, Hashable {
  /// The job's id (random).
  public var id: String
  /// The person who uploaded the file.
  public var owner: UserID
  /// The job's state as the server describes it, JSON.
  public var document: String
  /// When the job was created and last written, UTC ms.
  public var createdAt: Int64
  public var updatedAt: Int64

  /// A record.
  public init(id: String, owner: UserID, document: String, createdAt: Int64, updatedAt: Int64) {
    self.id = id
    self.owner = owner
    self.document = document
    self.createdAt = createdAt
    self.updatedAt = updatedAt
  }
}

/// History import jobs: their state, written as the import goes.
public protocol ImportJobStore: Sendable {
  /// The jobs kept per person: creating one more deletes that person's oldest.
  static var importJobsKept: Int { get }
  /// Stores `record`: a new job (then the owner's oldest beyond ``importJobsKept`` are deleted), or the new state of
  /// the owner's job of that id (its `createdAt` is kept).
  func saveImportJob(_ record: ImportJobRecord) async throws
  /// The owner's job `id`; nil when there is none (or it is someone else's).
  func importJob(id: String, owner: UserID) async throws -> ImportJobRecord?
  /// The owner's newest jobs first, at most `limit`.
  func importJobs(owner: UserID, limit: Int) async throws -> [ImportJobRecord]
}

extension ImportJobStore {
  /// Twenty.
  public static var importJobsKept: Int { 20 }
}

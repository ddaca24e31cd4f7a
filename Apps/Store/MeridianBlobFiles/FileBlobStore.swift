import Foundation
import MeridianSecrets
import MeridianStore
import NIOPosix

/// Blobs as files in a directory (`<directory>/<first two hex digits>/<hash>`), written to a temporary name and
/// renamed, so a reader never sees half a file. The default next to a SQLite database (`./data/blobs`).
///
/// Every file system call runs on `threadPool` (NIO's blocking-I/O pool), never on the caller's executor: a slow
/// disk holds one of the pool's threads, not a thread of Swift's cooperative pool that every request shares.
public struct FileBlobStore: BlobStore {
  /// The directory.
  public let directory: URL
  /// The threads the file system calls block.
  public let threadPool: NIOThreadPool

  /// The store in `directory` (created on first write), doing its file I/O on `threadPool` (NIO's shared one by
  /// default).
  public init(directory: URL, threadPool: NIOThreadPool = .singleton) {
    self.directory = directory
    self.threadPool = threadPool
  }

  /// `work` run on ``threadPool``; throws when the pool is not running.
  private func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await threadPool.runIfActive(work)
  }

  private func url(_ hash: String) -> URL {
    directory.appendingPathComponent(String(hash.prefix(2)), isDirectory: true).appendingPathComponent(hash)
  }

  /// The last upload is the file's modification time.
  public func putBlob(_ data: Data, kind: BlobKind, now: Int64) async throws -> String {
    try await blocking { try self.write(data, now: now) }
  }

  private func write(_ data: Data, now: Int64) throws -> String {
    let hash = SecretHash.sha256(data)
    let target = url(hash)
    let uploaded = Date(timeIntervalSince1970: Double(now) / 1000)
    if FileManager.default.fileExists(atPath: target.path) {
      if let stored = try? modified(target), stored < uploaded {
        try FileManager.default.setAttributes([.modificationDate: uploaded], ofItemAtPath: target.path)
      }
      return hash
    }
    let folder = target.deletingLastPathComponent()
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let temporary = folder.appendingPathComponent(".\(hash).\(UUID().uuidString)")
    try data.write(to: temporary)
    try FileManager.default.setAttributes([.modificationDate: uploaded], ofItemAtPath: temporary.path)
    if rename(temporary.path, target.path) != 0 {
      try? FileManager.default.removeItem(at: temporary)
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: target.path])
    }
    return hash
  }

  public func blob(_ hash: String) async throws -> StoredBlob? {
    guard BlobKind.isHash(hash) else { return nil }
    let path = url(hash).path
    guard let data = try await blocking({ FileManager.default.contents(atPath: path) }),
      let kind = BlobKind(sniffing: data)
    else { return nil }
    return StoredBlob(hash: hash, kind: kind, data: data)
  }

  public func hasBlob(_ hash: String) async throws -> Bool {
    guard BlobKind.isHash(hash) else { return false }
    let path = url(hash).path
    return try await blocking { FileManager.default.fileExists(atPath: path) }
  }

  public func deleteBlob(_ hash: String) async throws -> Bool {
    guard BlobKind.isHash(hash) else { return false }
    return try await blocking { try self.delete(hash) }
  }

  private func delete(_ hash: String) throws -> Bool {
    do {
      try FileManager.default.removeItem(at: url(hash))
      return true
    } catch CocoaError.fileNoSuchFile {
      return false
    }
  }

  public func deleteBlob(_ hash: String, uploadedAtOrBefore cutoff: Int64) async throws -> Bool {
    guard BlobKind.isHash(hash) else { return false }
    return try await blocking {
      guard let stored = try? self.modified(self.url(hash)),
        stored <= Date(timeIntervalSince1970: Double(cutoff) / 1000)
      else { return false }
      return try self.delete(hash)
    }
  }

  /// Walks the two-digit folders in order; files being written (dot names) and foreign names are skipped.
  public func blobHashes(uploadedAtOrBefore cutoff: Int64, after: String?, limit: Int) async throws -> [String] {
    try await blocking { self.hashes(uploadedAtOrBefore: cutoff, after: after, limit: limit) }
  }

  private func hashes(uploadedAtOrBefore cutoff: Int64, after: String?, limit: Int) -> [String] {
    let manager = FileManager.default
    let limitDate = Date(timeIntervalSince1970: Double(cutoff) / 1000)
    guard let folders = try? manager.contentsOfDirectory(atPath: directory.path) else { return [] }
    let start = after.map { String($0.prefix(2)) } ?? ""
    var hashes: [String] = []
    for folder in folders.sorted() where folder.count == 2 && folder >= start {
      let path = directory.appendingPathComponent(folder, isDirectory: true)
      let names = ((try? manager.contentsOfDirectory(atPath: path.path)) ?? []).sorted()
      for name in names where BlobKind.isHash(name) && name.hasPrefix(folder) && name > (after ?? "") {
        guard let stored = try? modified(path.appendingPathComponent(name)), stored <= limitDate else { continue }
        hashes.append(name)
        if hashes.count >= limit { return hashes }
      }
    }
    return hashes
  }

  private func modified(_ url: URL) throws -> Date? {
    try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date
  }
}

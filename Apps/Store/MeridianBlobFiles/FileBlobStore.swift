import Foundation
import MeridianSecrets
import MeridianStore

/// Blobs as files in a directory (`<directory>/<first two hex digits>/<hash>`), written to a temporary name and
/// renamed, so a reader never sees half a file. The default next to a SQLite database (`./data/blobs`).
public struct FileBlobStore: BlobStore {
  /// The directory.
  public let directory: URL

  /// The store in `directory` (created on first write).
  public init(directory: URL) { self.directory = directory }

  private func url(_ hash: String) -> URL {
    directory.appendingPathComponent(String(hash.prefix(2)), isDirectory: true).appendingPathComponent(hash)
  }

  /// The last upload is the file's modification time.
  public func putBlob(_ data: Data, kind: BlobKind, now: Int64) async throws -> String {
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
    guard BlobKind.isHash(hash), let data = FileManager.default.contents(atPath: url(hash).path),
      let kind = BlobKind(sniffing: data)
    else { return nil }
    return StoredBlob(hash: hash, kind: kind, data: data)
  }

  public func hasBlob(_ hash: String) async throws -> Bool {
    BlobKind.isHash(hash) && FileManager.default.fileExists(atPath: url(hash).path)
  }

  public func deleteBlob(_ hash: String) async throws -> Bool {
    guard BlobKind.isHash(hash) else { return false }
    do {
      try FileManager.default.removeItem(at: url(hash))
      return true
    } catch CocoaError.fileNoSuchFile {
      return false
    }
  }

  public func deleteBlob(_ hash: String, uploadedAtOrBefore cutoff: Int64) async throws -> Bool {
    guard BlobKind.isHash(hash), let stored = try? modified(url(hash)),
      stored <= Date(timeIntervalSince1970: Double(cutoff) / 1000)
    else { return false }
    return try await deleteBlob(hash)
  }

  /// Walks the two-digit folders in order; files being written (dot names) and foreign names are skipped.
  public func blobHashes(uploadedAtOrBefore cutoff: Int64, after: String?, limit: Int) async throws -> [String] {
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

import Foundation

/// Images (poll options, profile photos) stored by content: the key is the SHA-256 of the bytes (64 lowercase hex
/// digits), so storing the same image twice stores it once and a key always names the same bytes.
///
/// Each blob remembers when it was last uploaded (`putBlob` of bytes already stored moves that time forward), so
/// clean-up can spare a blob uploaded for something not created yet: see ``BlobStore/deleteUnreferenced(_:in:now:gracePeriod:)``.
public protocol BlobStore: Sendable {
  /// Stores `data` (of `kind`) under its hash unless it is there already, and records `now` (milliseconds) as its
  /// last upload; returns the hash.
  func putBlob(_ data: Data, kind: BlobKind, now: Int64) async throws -> String
  /// The blob stored under `hash`, if any.
  func blob(_ hash: String) async throws -> StoredBlob?
  /// Whether a blob is stored under `hash` (without reading it).
  func hasBlob(_ hash: String) async throws -> Bool
  /// Deletes the blob under `hash`; returns false when there was none.
  func deleteBlob(_ hash: String) async throws -> Bool
  /// Deletes the blob under `hash` only when it was last uploaded at or before `cutoff` (milliseconds); returns false
  /// when there was none or it is newer.
  func deleteBlob(_ hash: String, uploadedAtOrBefore cutoff: Int64) async throws -> Bool
  /// The hashes of the blobs last uploaded at or before `cutoff` (milliseconds), in ascending order, the first
  /// `limit` of those after `after` (nil: from the start) — a page of ``BlobStore/sweepUnreferenced(in:now:gracePeriod:dryRun:pageSize:)``.
  func blobHashes(uploadedAtOrBefore cutoff: Int64, after: String?, limit: Int) async throws -> [String]
}

/// How long an uploaded blob is kept even when nothing refers to it: a person uploads an image and only then creates
/// the poll or sets the avatar that uses it, maybe just after the last other use of the same bytes went.
public enum BlobGracePeriod {
  /// 24 hours, in milliseconds.
  public static let `default`: Int64 = 24 * 60 * 60 * 1000
}

extension BlobStore {
  /// Whether `url`, a URL a person gave for an image, follows the one rule for such URLs: it is exactly
  /// `/v1/blobs/<hash>` (``BlobReference``) of a blob this store holds. A URL that only ends in a stored hash
  /// (`https://tracker.example/pixel/<hash>`, `javascript:…//<hash>`) is not.
  public func isUploadedImage(_ url: String) async throws -> Bool {
    guard let hash = BlobReference.hash(in: url) else { return false }
    return try await hasBlob(hash)
  }

  /// Deletes those of `hashes` that nothing in `store` refers to (see ``PollStore/unreferencedBlobs(_:)``) and that
  /// were last uploaded `gracePeriod` milliseconds or more before `now`; returns the hashes deleted, sorted.
  ///
  /// An upload never attached, or attached only after the last reference to the same bytes went, is kept for the
  /// grace period; ``sweepUnreferenced(in:now:gracePeriod:dryRun:pageSize:)`` finds it afterwards.
  public func deleteUnreferenced(
    _ hashes: [String], in store: any PollStore, now: Int64, gracePeriod: Int64 = BlobGracePeriod.default
  ) async throws -> [String] {
    var deleted: [String] = []
    for hash in try await store.unreferencedBlobs(hashes) {
      if try await deleteBlob(hash, uploadedAtOrBefore: now - gracePeriod) { deleted.append(hash) }
    }
    return deleted
  }

  /// Goes through every blob last uploaded `gracePeriod` or more before `now`, a page of `pageSize` at a time, and
  /// deletes those nothing in `store` refers to (or only counts them, `dryRun`): what a release missed — an upload
  /// never attached, or released while a newer upload of the same bytes kept it. Safe to run on several nodes at
  /// once and beside uploads (each deletion re-checks the upload time).
  public func sweepUnreferenced(
    in store: any PollStore, now: Int64, gracePeriod: Int64 = BlobGracePeriod.default, dryRun: Bool = false,
    pageSize: Int = 500
  ) async throws -> BlobSweep {
    let cutoff = now - gracePeriod
    var sweep = BlobSweep()
    var after: String?
    while true {
      let page = try await blobHashes(uploadedAtOrBefore: cutoff, after: after, limit: max(1, pageSize))
      guard let last = page.last else { break }
      after = last
      sweep.examined += page.count
      if dryRun {
        sweep.unreferenced += try await store.unreferencedBlobs(page)
      } else {
        sweep.unreferenced += try await deleteUnreferenced(page, in: store, now: now, gracePeriod: gracePeriod)
      }
      if page.count < pageSize { break }
    }
    return sweep
  }
}

/// What ``BlobStore/sweepUnreferenced(in:now:gracePeriod:dryRun:pageSize:)`` did.
public struct BlobSweep: Sendable, Hashable, Codable {
  /// Blobs old enough to be considered.
  public var examined = 0
  /// The hashes deleted (or, in a dry run, that would be), in ascending order.
  public var unreferenced: [String] = []

  /// Nothing examined yet.
  public init() {}
}

extension MeridianStore {
  /// The blob store inside this database, or nil (the default) when the server keeps blobs elsewhere (a
  /// ``FileBlobStore`` next to a SQLite file).
  public var databaseBlobs: (any BlobStore)? { self as? any BlobStore }
}

/// A stored image.
public struct StoredBlob: Sendable, Hashable {
  /// Its SHA-256, hex.
  public var hash: String
  /// Its type.
  public var kind: BlobKind
  /// The bytes.
  public var data: Data
  /// A blob.
  public init(hash: String, kind: BlobKind, data: Data) {
    self.hash = hash
    self.kind = kind
    self.data = data
  }
}

/// The image types the blob store takes, recognized by their magic bytes (never by what the client claims).
public enum BlobKind: String, Sendable, Hashable, Codable, CaseIterable {
  /// JPEG (`FF D8 FF`).
  case jpeg
  /// PNG (`89 50 4E 47 0D 0A 1A 0A`).
  case png
  /// WebP (`RIFF` … `WEBP`).
  case webp

  /// The `Content-Type` it is served with.
  public var contentType: String {
    switch self {
    case .jpeg: "image/jpeg"
    case .png: "image/png"
    case .webp: "image/webp"
    }
  }

  /// The type `data` starts like, or nil when it is none of them.
  public init?(sniffing data: Data) {
    let bytes = [UInt8](data.prefix(12))
    if bytes.count >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes[2] == 0xFF {
      self = .jpeg
    } else if bytes.count >= 8, bytes[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
      self = .png
    } else if bytes.count >= 12, bytes[0..<4].elementsEqual(Array("RIFF".utf8)),
      bytes[8..<12].elementsEqual(Array("WEBP".utf8))
    {
      self = .webp
    } else {
      return nil
    }
  }

  /// Whether `text` is a blob key: 64 lowercase hex digits.
  public static func isHash(_ text: some StringProtocol) -> Bool {
    text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
  }
}

import DomainKit
import Foundation
import MeridianStore
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The lookups a ``SQLiteStore`` remembers, one set per database pool: every store value opened on the same file in
/// this process (PersistenceKit gives them the same pool) sees the same entries, so a change made through one of them
/// is seen by all.
final class StoreCaches: Sendable {
  /// Bearer token hash → its user and expiry, for 2 seconds (every request looks its token up). Revoking, disabling
  /// and deleting through the store drop the entries at once, in this process and — through ``revocations`` — in
  /// every other one on the file; the lifetime bounds any other change made by another process.
  let tokens = LookupCache<String, (user: UserID, expiresAt: Int64)>(lifetime: 2_000)
  /// Device → owner, for a minute (a device never changes owner; deleting an account drops the entries).
  let devices = LookupCache<DeviceID, UserID>(lifetime: 60_000)
  /// The database's revocation marker; nil in memory (one process only).
  let revocations: RevocationMarker?

  private init(path: String?) {
    revocations = path.map { RevocationMarker(path: $0 + "-revocations") }
  }

  /// Announces to every process on the database (this one included) that tokens were revoked or an account was
  /// disabled or deleted: each drops what its caches remember at its next lookup.
  func announceRevocation() { revocations?.touch() }

  /// Drops every cached token and device owner when another process announced a revocation since the last look:
  /// one `stat` of the marker.
  func dropIfRevokedElsewhere() {
    guard revocations?.changed() == true else { return }
    tokens.removeAll { _ in true }
    devices.removeAll { _ in true }
  }

  private struct Entry {
    weak var pool: (any AnyObject & Sendable)?
    let caches: StoreCaches
  }

  /// The process-wide map from a pool to its caches (pools held weakly).
  private static let registry = Mutex<[ObjectIdentifier: Entry]>([:])

  /// The caches of `pool` (the database at `path`, nil in memory), created on first use.
  static func shared(for pool: any AnyObject & Sendable, path: String?) -> StoreCaches {
    registry.withLock { entries in
      if let entry = entries[ObjectIdentifier(pool)], entry.pool === pool { return entry.caches }
      entries = entries.filter { $0.value.pool != nil }
      let caches = StoreCaches(path: path)
      entries[ObjectIdentifier(pool)] = Entry(pool: pool, caches: caches)
      return caches
    }
  }
}

/// A small file next to a SQLite database (`<database>-revocations`) that carries revocations between the processes
/// using the database — the server and `meridian-admin` working on the file. After revoking tokens or disabling or
/// deleting an account, a process appends a byte to it; every process compares the file's size, modification time
/// and identity with what it last saw before it answers from its token cache, and drops the cache when they differ.
/// That costs one `stat` per lookup, where asking the database would cost a read: SQLite itself offers no cheap
/// signal for "another process changed these rows" (`PRAGMA data_version` changes with every commit, this process's
/// own fix writes included).
final class RevocationMarker: Sendable {
  /// The file's path.
  let path: String
  private let seen: Mutex<Stamp?>

  /// What identifies one state of the file.
  struct Stamp: Hashable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var seconds: Int
    var nanoseconds: Int
  }

  /// The marker at `path`, as it is now.
  init(path: String) {
    self.path = path
    seen = Mutex(Self.stamp(path))
  }

  /// The file's stamp, nil while there is none.
  static func stamp(_ path: String) -> Stamp? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    #if canImport(Darwin)
      let time = info.st_mtimespec
    #else
      let time = info.st_mtim
    #endif
    return Stamp(
      device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size), seconds: Int(time.tv_sec),
      nanoseconds: Int(time.tv_nsec))
  }

  /// Whether the file changed since the last call (or since it was opened), remembering its new state.
  func changed() -> Bool {
    let now = Self.stamp(path)
    return seen.withLock { seen in
      guard seen != now else { return false }
      seen = now
      return true
    }
  }

  /// Announces a revocation: appends a byte (starting the file over past 4 KiB, so it stays small). A marker that
  /// can't be written (a read-only directory) leaves the other processes to their caches' 2-second lifetime.
  func touch() {
    let large = (Self.stamp(path)?.size ?? 0) >= 4_096
    let descriptor = open(path, O_WRONLY | O_CREAT | (large ? O_TRUNC : O_APPEND), 0o644)
    guard descriptor >= 0 else { return }
    var byte: UInt8 = 0x0A
    _ = write(descriptor, &byte, 1)
    close(descriptor)
  }
}

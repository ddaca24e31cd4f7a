import Foundation
import MeridianAPI

/// What one account, client address or device may do, so that no single one can guess passwords, flood the
/// database or hold the server's resources. Every limit is per server process (several nodes each count their
/// own); `docs/security.md` explains each. A limit of 0 turns that limit off.
public struct ServerLimits: Sendable, Hashable {
  /// How far ahead of the server's clock a fix may be dated, in seconds (devices' clocks drift a little).
  public var futureFixSeconds = FixTimes.defaultFutureSeconds
  /// Fixes one account may upload per minute, every route together (a phone sends about 60).
  public var fixesPerAccountPerMinute = 30_000
  /// Fixes one account may import from history files per day (`POST /v1/history/import`), counted apart from the
  /// upload rate: a file is counted whole, duplicates included, before anything is stored, and one that doesn't fit
  /// is refused. The default takes about the largest file the import's size limit admits (decade-long Google exports
  /// hold a few million points).
  public var importedFixesPerAccountPerDay = 5_000_000
  /// Fixes one history import stores per second at most, so that a large import leaves the database to live
  /// uploads (0: as fast as the database takes them, the default).
  public var importedFixesPerSecond = 0
  /// OsmAnd reports per device identifier per minute.
  public var osmAndPerDevicePerMinute = 120
  /// OsmAnd reports per client address per minute, every identifier together (known or not).
  public var osmAndPerAddressPerMinute = 600
  /// Wrong passwords for one account before each further attempt waits (1 s, doubling up to 15 minutes).
  public var signInFailuresPerAccount = 5
  /// Wrong passwords from one client address, whatever the account, before each further attempt waits.
  public var signInFailuresPerAddress = 20
  /// The first wait after the free sign-in failures, in milliseconds; each further failure doubles it (to 15 min).
  public var signInFirstDelayMilliseconds: Int64 = 1_000
  /// User searches per account per minute.
  public var searchesPerAccountPerMinute = 30
  /// Custom groups per account (the three standard groups come on top).
  public var groupsPerAccount = 100
  /// Devices per account.
  public var devicesPerAccount = 20
  /// Unexpired tokens per account: signing in past it revokes the oldest session.
  public var tokensPerAccount = 50
  /// Live sockets (`GET /ws`) per account, on this node.
  public var socketsPerAccount = 20
  /// Polls one account may post per hour.
  public var pollsPerAccountPerHour = 20
  /// Poll comments one account may post per minute.
  public var commentsPerAccountPerMinute = 10
  /// Images (`POST /v1/blobs`, up to 1 MiB each) one account may upload per hour: a poll takes two, a profile one.
  public var blobsPerAccountPerHour = 60
  /// Webhook registrations per account.
  public var webhooksPerAccount = 20
  /// Test events (`POST /v1/webhooks/{id}/test`) one account may queue per minute, all its webhooks together.
  public var webhookTestsPerAccountPerMinute = 5
  /// Active share links per account (expired and revoked ones don't count).
  public var shareLinksPerAccount = 20
  /// Reads of one share link's view (`GET /v1/shared/{token}`) per minute, every reader together.
  public var sharedViewsPerLinkPerMinute = 120
  /// Reads of share links' views (`GET /v1/shared/{token}`) per minute from one address, whatever the links.
  public var sharedViewsPerAddressPerMinute = 300
  /// Live sockets signed in with one share link, per node (a link's viewers are one principal).
  public var shareViewersPerLink = 200
  /// Share links one account may make per hour (`POST /v1/share-links`), revoked ones included.
  public var shareLinksCreatedPerAccountPerHour = 60

  /// The defaults.
  public init() {}

  /// Every per-account, per-address and per-device limit off (benchmarks, trusted loads); fixes dated in the future
  /// are still refused.
  public static var unlimited: ServerLimits {
    var limits = ServerLimits()
    for (_, keyPath) in variables where keyPath != \.futureFixSeconds { limits[keyPath: keyPath] = 0 }
    return limits
  }

  /// The environment variable of each limit, with its key path.
  static var variables: [(name: String, keyPath: WritableKeyPath<ServerLimits, Int>)] {
    [
      ("MERIDIAN_LIMIT_FUTURE_FIX_SECONDS", \.futureFixSeconds),
      ("MERIDIAN_LIMIT_FIXES_PER_ACCOUNT_PER_MINUTE", \.fixesPerAccountPerMinute),
      ("MERIDIAN_LIMIT_IMPORTED_FIXES_PER_ACCOUNT_PER_DAY", \.importedFixesPerAccountPerDay),
      ("MERIDIAN_LIMIT_IMPORTED_FIXES_PER_SECOND", \.importedFixesPerSecond),
      ("MERIDIAN_LIMIT_OSMAND_PER_DEVICE_PER_MINUTE", \.osmAndPerDevicePerMinute),
      ("MERIDIAN_LIMIT_OSMAND_PER_ADDRESS_PER_MINUTE", \.osmAndPerAddressPerMinute),
      ("MERIDIAN_LIMIT_SIGN_IN_FAILURES_PER_ACCOUNT", \.signInFailuresPerAccount),
      ("MERIDIAN_LIMIT_SIGN_IN_FAILURES_PER_ADDRESS", \.signInFailuresPerAddress),
      ("MERIDIAN_LIMIT_SEARCHES_PER_ACCOUNT_PER_MINUTE", \.searchesPerAccountPerMinute),
      ("MERIDIAN_LIMIT_GROUPS_PER_ACCOUNT", \.groupsPerAccount),
      ("MERIDIAN_LIMIT_DEVICES_PER_ACCOUNT", \.devicesPerAccount),
      ("MERIDIAN_LIMIT_TOKENS_PER_ACCOUNT", \.tokensPerAccount),
      ("MERIDIAN_LIMIT_SOCKETS_PER_ACCOUNT", \.socketsPerAccount),
      ("MERIDIAN_LIMIT_POLLS_PER_ACCOUNT_PER_HOUR", \.pollsPerAccountPerHour),
      ("MERIDIAN_LIMIT_COMMENTS_PER_ACCOUNT_PER_MINUTE", \.commentsPerAccountPerMinute),
      ("MERIDIAN_LIMIT_BLOBS_PER_ACCOUNT_PER_HOUR", \.blobsPerAccountPerHour),
      ("MERIDIAN_LIMIT_WEBHOOKS_PER_ACCOUNT", \.webhooksPerAccount),
      ("MERIDIAN_LIMIT_WEBHOOK_TESTS_PER_ACCOUNT_PER_MINUTE", \.webhookTestsPerAccountPerMinute),
      ("MERIDIAN_LIMIT_SHARE_LINKS_PER_ACCOUNT", \.shareLinksPerAccount),
      ("MERIDIAN_LIMIT_SHARED_VIEWS_PER_LINK_PER_MINUTE", \.sharedViewsPerLinkPerMinute),
      ("MERIDIAN_LIMIT_SHARE_LINKS_CREATED_PER_ACCOUNT_PER_HOUR", \.shareLinksCreatedPerAccountPerHour),
      ("MERIDIAN_LIMIT_SHARED_VIEWS_PER_ADDRESS_PER_MINUTE", \.sharedViewsPerAddressPerMinute),
      ("MERIDIAN_LIMIT_SHARE_VIEWERS_PER_LINK", \.shareViewersPerLink),
    ]
  }

  /// Reads every `MERIDIAN_LIMIT_*` variable set in `environment`.
  /// - Throws: ``ConfigurationError`` for a value that is not a whole number ≥ 0.
  mutating func read(_ environment: [String: String]) throws(ConfigurationError) {
    for (name, keyPath) in Self.variables {
      guard let text = environment[name], !text.isEmpty else { continue }
      guard let value = Int(text), value >= 0 else {
        throw ConfigurationError(setting: name, value: text, reason: "must be a whole number ≥ 0 (0 turns it off)")
      }
      self[keyPath: keyPath] = value
    }
  }

  /// `limit`, or nil when it is 0 (off).
  static func active(_ limit: Int) -> Int? { limit > 0 ? limit : nil }
}

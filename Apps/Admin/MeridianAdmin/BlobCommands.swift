import ArgumentParser
import DomainKit
import Foundation
import MeridianStore

/// `meridian-admin blobs`: the stored images (poll options, photos, promotion images).
struct BlobsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "blobs", abstract: "Stored images: remove those nothing refers to.", subcommands: [Sweep.self])

  struct Sweep: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Delete every image nothing refers to that was last uploaded at least the grace period ago.",
      discussion: """
        The server sweeps on its own every MERIDIAN_BLOB_SWEEP_SECONDS (default 6 hours); this runs one sweep now. \
        The images are where the server keeps them (MERIDIAN_BLOB_DIR, the database on PostgreSQL, or `blobs` next \
        to the SQLite file).
        """)

    @OptionGroup var options: GlobalOptions

    @Option(
      help:
        "Keep unreferenced images uploaded less than this many seconds ago (MERIDIAN_BLOB_GRACE_SECONDS, default 86400)."
    )
    var graceSeconds: Int?

    @Flag(help: "Only count what would be deleted.")
    var dryRun = false

    func validate() throws {
      if let graceSeconds, graceSeconds < 0 { throw ValidationError("--grace-seconds must be 0 or more.") }
    }

    func run() async throws {
      let grace = try adminBlobGracePeriod(seconds: graceSeconds)
      let sweep = try await options.withDatabase { database in
        try await adminBlobStore(database).sweepUnreferenced(
          in: database.store, now: Timestamp.milliseconds(Date()), gracePeriod: grace, dryRun: dryRun)
      }
      try options.emit(sweep) {
        let verb = dryRun ? "would delete" : "deleted"
        return "Examined \(sweep.examined) image(s) older than the grace period; \(verb) \(sweep.unreferenced.count)."
      }
    }
  }
}

import DomainKit
import Foundation
import MeridianAPI
import MeridianBlobFiles
import MeridianStore
import MeridianStoreSQLite
import Testing

/// `polls`, `comments`, `coupons` and `points` on a SQLite database, through the built binary.
@Suite("meridian-admin polls, comments, coupons, points")
struct AdminPollCommandTests {
  func seeded(_ sandbox: AdminSandbox) async throws -> SQLiteStore {
    let store = try sandbox.store()
    for name in ["anna", "boris"] {
      _ = try await store.createAccount(
        id: UserID(name), credential: .email("\(name)@example.com"), passwordHash: nil, now: 1)
    }
    let hash = try await FileBlobStore(directory: sandbox.directory.appendingPathComponent("blobs")).putBlob(
      Data([0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3]), kind: .jpeg, now: 1)
    let poll = try Poll(
      id: "tea", authorID: "anna", title: "Tea or coffee?",
      first: PollOption(text: "Tea", imageURL: "/v1/blobs/\(hash)"),
      second: PollOption(text: "Coffee"), createdAt: 1_000)
    _ = try await store.createPoll(poll, closesAt: nil, reward: 10, now: 1_000)
    _ = try await store.vote("tea", user: "boris", choice: .second, reward: 1, now: 2_000)
    _ = try await store.addComment(
      try PollComment(id: "c1", pollID: "tea", authorID: "boris", text: "Coffee!", createdAt: 3_000))
    return store
  }

  @Test func pollsListShowHideAndDelete() async throws {
    let sandbox = try AdminSandbox()
    let store = try await seeded(sandbox)
    let list = try await sandbox.admin(["polls", "list", "--json"])
    #expect(list.status == 0, "\(list)")
    let polls = try #require(try list.json() as? [[String: Any]])
    #expect(polls.count == 1)
    let results = try #require(polls.first?["results"] as? [String: Any])
    #expect(results["counts"] as? [Int] == [0, 1] && results["percentages"] as? [Int] == [0, 100])

    let table = try await sandbox.admin(["polls", "show", "tea"])
    #expect(table.status == 0 && table.stdout.contains("Tea or coffee?") && table.stdout.contains("Coffee!"))

    let hidden = try await sandbox.admin(["polls", "hide", "tea"])
    #expect(hidden.status == 0, "\(hidden)")
    #expect(try await store.poll("tea", viewer: "boris") == nil)
    #expect(try await sandbox.admin(["polls", "list", "--json"]).json() is [[String: Any]])
    #expect(try await sandbox.admin(["polls", "show", "tea", "--json"]).object()["hidden"] as? Bool == true)
    _ = try await sandbox.admin(["polls", "hide", "tea", "--show"])
    #expect(try await store.poll("tea", viewer: "boris") != nil)

    #expect(try await sandbox.admin(["comments", "hide", "c1"]).status == 0)
    #expect(try await store.poll("tea", viewer: nil)?.comments == 0)
    #expect(try await sandbox.admin(["comments", "hide", "nope"]).status == 3)

    // Deleting the poll deletes its image: nothing else uses it.
    let blobs = sandbox.directory.appendingPathComponent("blobs")
    #expect(try FileManager.default.subpathsOfDirectory(atPath: blobs.path).contains { $0.count > 60 })
    let deleted = try await sandbox.admin(["polls", "delete", "tea", "--json"])
    #expect(deleted.status == 0, "\(deleted)")
    #expect(try deleted.object()["imagesDeleted"] as? String == "1")
    #expect(try await store.poll("tea", viewer: nil) == nil)
    #expect(try !FileManager.default.subpathsOfDirectory(atPath: blobs.path).contains { $0.count > 60 })
    #expect(try await sandbox.admin(["polls", "delete", "tea"]).status == 3)
  }

  @Test func blobsSweepDeletesOnlyOldImagesNothingUses() async throws {
    let sandbox = try AdminSandbox()
    _ = try await seeded(sandbox)  // the poll "tea" uses one image, uploaded long ago
    let files = FileBlobStore(directory: sandbox.directory.appendingPathComponent("blobs"))
    let orphan = try await files.putBlob(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 9]), kind: .png, now: 1)
    let fresh = try await files.putBlob(
      Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 8]), kind: .png, now: Timestamp.milliseconds(Date()))

    let dry = try await sandbox.admin(["blobs", "sweep", "--dry-run", "--json"])
    #expect(dry.status == 0, "\(dry)")
    #expect(try dry.object()["examined"] as? Int == 2)
    #expect(try dry.object()["unreferenced"] as? [String] == [orphan])
    #expect(try await files.hasBlob(orphan))

    let swept = try await sandbox.admin(["blobs", "sweep"])
    #expect(swept.status == 0, "\(swept)")
    #expect(swept.stdout.contains("deleted 1"), "\(swept.stdout)")
    #expect(try await !files.hasBlob(orphan))
    #expect(try await files.hasBlob(fresh))
    // With no grace period the fresh upload goes too; the poll's image never does.
    let all = try await sandbox.admin(["blobs", "sweep", "--grace-seconds", "0", "--json"])
    #expect(try all.object()["unreferenced"] as? [String] == [fresh])
    #expect(try await !files.hasBlob(fresh))
    #expect(try await sandbox.admin(["blobs", "sweep", "--grace-seconds", "-5"]).status != 0)
  }

  /// `polls delete` keeps a just-uploaded image for the grace period the server uses: MERIDIAN_BLOB_GRACE_SECONDS
  /// (here 0, so it goes at once) or `--grace-seconds`, else 24 hours.
  @Test func pollsDeleteUsesTheConfiguredGracePeriod() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    _ = try await store.createAccount(id: "anna", credential: .email("anna@example.com"), passwordHash: nil, now: 1)
    let files = FileBlobStore(directory: sandbox.directory.appendingPathComponent("blobs"))
    var images: [String] = []
    for (index, id) in ["fresh", "kept", "flag"].enumerated() {
      let image = try await files.putBlob(
        Data([0xFF, 0xD8, 0xFF, 0xE0, UInt8(index)]), kind: .jpeg, now: Timestamp.milliseconds(Date()))
      images.append(image)
      let poll = try Poll(
        id: PollID(id), authorID: "anna", title: "Tea or coffee?",
        first: PollOption(text: "Tea", imageURL: "/v1/blobs/\(image)"), second: PollOption(text: "Coffee"),
        createdAt: 1_000)
      _ = try await store.createPoll(poll, closesAt: nil, reward: 0, now: 1_000)
    }
    let configured = try await sandbox.admin(
      ["polls", "delete", "fresh", "--json"], environment: ["MERIDIAN_BLOB_GRACE_SECONDS": "0"])
    #expect(configured.status == 0, "\(configured)")
    #expect(try configured.object()["imagesDeleted"] as? String == "1")
    #expect(try await !files.hasBlob(images[0]))
    // Without the variable, the 24-hour default keeps an image uploaded just now; the option overrides both.
    let unset = try await sandbox.admin(["polls", "delete", "kept", "--json"])
    #expect(try unset.object()["imagesDeleted"] as? String == "0")
    #expect(try await files.hasBlob(images[1]))
    let option = try await sandbox.admin(
      ["polls", "delete", "flag", "--grace-seconds", "0", "--json"],
      environment: ["MERIDIAN_BLOB_GRACE_SECONDS": "86400"])
    #expect(try option.object()["imagesDeleted"] as? String == "1")
    let wrong = try await sandbox.admin(
      ["polls", "delete", "nope"], environment: ["MERIDIAN_BLOB_GRACE_SECONDS": "soon"])
    #expect(wrong.status == 2 && wrong.stderr.contains("MERIDIAN_BLOB_GRACE_SECONDS"), "\(wrong)")
  }

  /// The title in `coupons create --help`'s own example starts with "-", and is taken as the title.
  @Test func aCouponTitleMayStartWithADash() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()  // creates the database
    // The help as one line (it wraps at the terminal's width).
    let help = try await sandbox.admin(["coupons", "create", "--help"]).stdout
      .split(whereSeparator: \.isWhitespace).joined(separator: " ")
    let example = try #require(help.firstRange(of: #/e\.g\. "([^"]+)"/#).map { String(help[$0]) })
    let title = try #require(example.split(separator: "\"").dropFirst().first.map(String.init))
    #expect(title == "-20 % on coffee")
    let created = try await sandbox.admin([
      "coupons", "create", "--id", "coffee", "--shop", "Lviv Coffee", "--title", title, "--description",
      "-5 % more on Mondays", "--price", "5", "--stock", "3", "--json",
    ])
    #expect(created.status == 0, "\(created)")
    let offers = try await store.couponOffers(validAt: 0)
    #expect(offers.first?.offer.title == "-20 % on coffee")
    #expect(offers.first?.description == "-5 % more on Mondays")
  }

  @Test func couponsAndPoints() async throws {
    let sandbox = try AdminSandbox()
    let store = try await seeded(sandbox)
    let created = try await sandbox.admin([
      "coupons", "create", "--id", "latte", "--shop", "Lviv Coffee", "--title", "Free latte", "--price", "5",
      "--stock", "3", "--json",
    ])
    #expect(created.status == 0, "\(created)")
    #expect(try created.object()["remaining"] as? Int == 3)
    #expect(
      try await sandbox.admin(["coupons", "create", "--shop", "S", "--title", "T", "--price", "0", "--stock", "1"])
        .status == 2)

    // Anna has 10 points for her poll; an operator grants 5 and takes back 3; more than she has is refused.
    let granted = try await sandbox.admin(["points", "grant", "anna@example.com", "5", "--reason", "welcome", "--json"])
    #expect(granted.status == 0, "\(granted)")
    #expect(try granted.object()["balance"] as? Int == 15)
    let takeBack = try await sandbox.admin(
      ["points", "grant", "anna", "--reason", "correction", "--database", sandbox.database, "--", "-3"], database: nil)
    #expect(takeBack.status == 0, "\(takeBack)")
    let overdraw = try await sandbox.admin(
      ["points", "grant", "anna", "--reason", "too much", "--database", sandbox.database, "--", "-13"], database: nil)
    #expect(overdraw.status == 1 && overdraw.stderr.contains("Not enough points"), "\(overdraw)")
    let shown = try await sandbox.admin(["points", "show", "anna"])
    #expect(shown.status == 0 && shown.stdout.contains("Balance: 12 points"), "\(shown)")

    _ = try await store.purchaseCoupon(
      "latte", user: "anna", couponID: "k1", code: "AAAA-BBBB-CCCC", requestKey: nil, now: 5)
    let stats = try await sandbox.admin(["coupons", "stats", "--json"])
    let rows = try #require(try stats.json() as? [[String: Any]])
    #expect(rows.first?["bought"] as? Int == 1 && rows.first?["stock"] as? Int == 3)
    let list = try await sandbox.admin(["coupons", "list"])
    #expect(list.stdout.contains("latte") && list.stdout.contains("Lviv Coffee"))
  }

  /// `users delete` removes the images of the account's avatar and polls that nothing else uses; `--json` everywhere.
  @Test func deletingAUserReleasesTheirImages() async throws {
    let sandbox = try AdminSandbox()
    let store = try await seeded(sandbox)
    let blobs = FileBlobStore(directory: sandbox.directory.appendingPathComponent("blobs"))
    let pollImage = try #require(
      BlobReference.hash(in: try await store.poll("tea", viewer: nil)?.poll.options[0].imageURL))
    let avatar = try await blobs.putBlob(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 9]), kind: .png, now: 1)
    let shared = try await blobs.putBlob(Data([0xFF, 0xD8, 0xFF, 0xE0, 9, 9]), kind: .jpeg, now: 1)
    var anna = try #require(try await store.profile("anna"))
    anna.avatar = "/v1/blobs/\(avatar)"
    try await store.saveProfile(anna)
    var boris = try #require(try await store.profile("boris"))
    boris.avatar = "/v1/blobs/\(shared)"
    try await store.saveProfile(boris)
    let second = try Poll(
      id: "juice", authorID: "anna", title: "Juice?", first: PollOption(text: "Apple", imageURL: "/v1/blobs/\(shared)"),
      second: PollOption(text: "Orange"), createdAt: 4_000)
    _ = try await store.createPoll(second, closesAt: nil, reward: 0, now: 4_000)

    let counted = try await sandbox.admin(["users", "delete", "anna", "--dry-run", "--json"])
    #expect(counted.status == 0, "\(counted)")
    #expect(try counted.object()["dryRun"] as? Bool == true)
    #expect(try await blobs.hasBlob(avatar))
    #expect(try await blobs.hasBlob(pollImage))
    let deleted = try await sandbox.admin(["users", "delete", "anna", "--yes", "--json"])
    #expect(deleted.status == 0, "\(deleted)")
    #expect(try await !blobs.hasBlob(avatar))
    #expect(try await !blobs.hasBlob(pollImage))
    #expect(try await blobs.hasBlob(shared))  // boris's avatar

    let points = try await sandbox.admin(["points", "show", "boris", "--json"])
    #expect(try points.object()["balance"] as? Int == 1, "\(points)")
    #expect(try await sandbox.admin(["coupons", "list", "--json"]).json() is [Any])
    let hidden = try await sandbox.admin(["polls", "list", "--json"])
    #expect(try #require(try hidden.json() as? [Any]).isEmpty, "\(hidden)")
  }

  /// Counts in tables follow CLDR plural rules in the operator's language (`MERIDIAN_LANG` or `LANG`).
  @Test func countsArePluralizedInRussianAndUkrainian() async throws {
    let sandbox = try AdminSandbox()
    let store = try await seeded(sandbox)
    // Anna: 10 for her poll. Grants bring her to 21, 22, 25, 11 points in turn.
    var seen: [String] = []
    for (grant, language) in [(11, "ru"), (1, "ru"), (3, "ru"), (0, "uk"), (-14, "uk"), (0, "en")] {
      if grant != 0 { _ = try await store.grantPoints(grant, to: "anna", note: "test", now: 10) }
      let run = try await sandbox.admin(["points", "show", "anna"], environment: ["MERIDIAN_LANG": language])
      seen.append(try #require(run.stdout.split(separator: "\n").first.map(String.init)))
    }
    #expect(
      seen == [
        "Balance: 21 балл", "Balance: 22 балла", "Balance: 25 баллов", "Balance: 25 балів", "Balance: 11 балів",
        "Balance: 11 points",
      ])
    let ukrainian = try await sandbox.admin(["polls", "list"], environment: ["LANG": "uk_UA.UTF-8"])
    #expect(ukrainian.stdout.contains("0 голосів / 1 голос") && ukrainian.stdout.contains("1 коментар"), "\(ukrainian)")
    let russian = try await sandbox.admin(["polls", "list"], environment: ["MERIDIAN_LANG": "ru"])
    #expect(russian.stdout.contains("0 голосов / 1 голос") && russian.stdout.contains("1 комментарий"), "\(russian)")
  }
}

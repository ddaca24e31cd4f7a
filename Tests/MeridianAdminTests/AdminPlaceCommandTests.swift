import DomainKit
import Foundation
import MeridianAPI
import MeridianStore
import MeridianStoreSQLite
import Testing

/// `places`, `reviews` and `news` on a SQLite database, through the built binary.
@Suite("meridian-admin places, reviews, news")
struct AdminPlaceCommandTests {
  static let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Tools/examples/tomsk-universities.json").path

  @Test func importTheSampleThenListShowMoveAndDelete() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()  // the database, migrated
    let imported = try await sandbox.admin(["places", "import", Self.sample, "--json"])
    #expect(imported.status == 0, "\(imported)")
    #expect(try imported.object()["imported"] as? Int == 28)
    let roots = try #require(try await sandbox.admin(["places", "list", "--json"]).json() as? [[String: Any]])
    #expect(roots.compactMap { ($0["place"] as? [String: Any])?["id"] as? String } == ["tsu", "tpu", "ssmu", "tusur"])
    let found = try await sandbox.admin(["places", "list", "--query", "ТГУ"])
    #expect(found.status == 0 && found.stdout.contains("Tomsk State University"), "\(found)")
    let show = try await sandbox.admin(["places", "show", "tsu-mm-math"])
    #expect(show.stdout.contains("in: Tomsk State University › Faculty of Mechanics and Mathematics"), "\(show)")
    #expect(show.stdout.contains("code=01.03.01"), "\(show)")

    // A review moves with its programme: the old university loses it, the new one gains it.
    _ = try await store.createAccount(id: "ann", credential: .email("ann@example.com"), passwordHash: nil, now: 1)
    let (review, _) = try await store.saveReview(
      try Review(id: "r1", placeID: "tsu-law-b", authorID: "ann", grade: 4, createdAt: 1), now: 1)
    #expect(try await sandbox.admin(["places", "move", "tsu-law", "--to", "tpu"]).status == 0)
    #expect(try await store.place("tsu")?.listing.rating.subtree == RatingAggregate())
    #expect(try await store.place("tpu")?.listing.rating.subtree == RatingAggregate(sum: 4, count: 1))
    let cycle = try await sandbox.admin(["places", "move", "tpu", "--to", "tsu-law-b"])
    #expect(cycle.status == 1 && cycle.stderr.contains("under itself or one of its descendants"), "\(cycle)")
    #expect(try await sandbox.admin(["reviews", "hide", review.id.rawValue]).status == 0)
    #expect(try await store.place("tpu")?.listing.rating.subtree == RatingAggregate())
    #expect(try await sandbox.admin(["reviews", "hide", "nothing"]).status == 3)

    let news = try await sandbox.admin([
      "news", "add", "--place", "tsu", "--title", "en=Open day", "--image", "/v1/blobs/open-day.jpg", "--json",
    ])
    let id = try #require(try news.object()["id"] as? String, "\(news)")
    #expect(try await store.news(NewsQuery()).items.first?.imageURL == "/v1/blobs/open-day.jpg")
    #expect(try await sandbox.admin(["news", "list"]).stdout.contains("Open day"))
    #expect(try await sandbox.admin(["news", "delete", id]).status == 0)
    #expect(try await sandbox.admin(["news", "delete", id]).status == 3)

    let parent = try await sandbox.admin(["places", "delete", "tsu"])
    #expect(parent.status == 1 && parent.stderr.contains("has children"), "\(parent)")
    #expect(try await sandbox.admin(["places", "delete", "tsu-phys-b"]).status == 0)
    #expect(try await sandbox.admin(["places", "delete", "tsu-phys-b"]).status == 3)
  }

  /// The OpenAPI's example (`kind=programme&city=Tomsk&max.passingScore=240`) and the questionnaire's filter
  /// (`passingScore` at most the exam total, `form` the preferred one) find programmes of the shipped sample.
  @Test func theDocumentedProgrammeFilterFindsProgrammesOfTheSample() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    #expect(try await sandbox.admin(["places", "import", Self.sample]).status == 0)
    let found = try await store.places(
      PlaceQuery(
        kinds: [.programme], city: "Tomsk",
        attributes: [
          PlaceAttributeFilter(name: "passingScore", maximum: 240),
          PlaceAttributeFilter(name: "form", equals: "full-time"),
        ], limit: 100))
    #expect(
      Set(found.items.map(\.record.place.id.rawValue)) == [
        "tsu-phys-b", "tsu-mm-math", "tsu-mm-mech", "tsu-ggf-geol", "tsu-ggf-geo", "tpu-nuclear-b", "tpu-earth-oil",
        "tusur-rtf-re", "tusur-fsu-ie",
      ])
  }

  /// CSV attribute columns keep the case of their names (`attr.passingScore` is `passingScore`, which filters name);
  /// other column names are case-insensitive.
  @Test func csvAttributeNamesKeepTheirCase() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let file = sandbox.path("programmes.csv")
    try """
    ID,Kind,Title.EN,City,attr.passingScore,ATTR.durationYears,attr.form
    law,programme,Law,Tomsk,236,4,full-time
    """.write(toFile: file, atomically: true, encoding: .utf8)
    let imported = try await sandbox.admin(["places", "import", file])
    #expect(imported.status == 0, "\(imported)")
    let record = try #require(try await store.place("law")).listing.record
    #expect(
      record.attributes == ["passingScore": .number(236), "durationYears": .number(4), "form": .text("full-time")])
    #expect(record.place.name.values["en"] == "Law")
    let found = try await store.places(
      PlaceQuery(kinds: [.programme], attributes: [PlaceAttributeFilter(name: "passingScore", maximum: 240)]))
    #expect(found.items.map(\.record.place.id) == ["law"])
  }

  @Test func csvImagesAndVenuesArePlaces() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()  // the database, migrated
    let file = sandbox.path("places.csv")
    try """
    id,kind,title.en,image,venue_type,lat,lon
    tsu,university,Tomsk State University,/v1/blobs/abc.png,,56.469,84.948
    cafe,venue,Main Building Cafe,,cafe,56.4691,84.9481
    """.write(toFile: file, atomically: true, encoding: .utf8)
    let imported = try await sandbox.admin(["places", "import", file])
    #expect(imported.status == 0, "\(imported)")
    #expect(try await store.place("tsu")?.listing.record.place.logoURL == "/v1/blobs/abc.png")
    // A place of kind venue is a venue: the venue list and the promotions product see it.
    #expect(try await store.venue("cafe", language: nil)?.type == "cafe")
    // And `venues import` writes places: found by the directory's search.
    let venues = sandbox.path("venues.csv")
    try "id,name_en,type,latitude,longitude\nbar,Corner Bar,bar,56.47,84.95\n".write(
      toFile: venues, atomically: true, encoding: .utf8)
    #expect(try await sandbox.admin(["venues", "import", venues]).status == 0)
    let found = try await sandbox.admin(["places", "list", "--query", "corner", "--json"])
    #expect(found.stdout.contains("\"bar\""), "\(found)")
    // A venue id taken by another kind of place is refused, naming it; nothing is imported.
    try "id,name_en,type,latitude,longitude\nnew,New,bar,56.47,84.95\ntsu,TSU Cafe,cafe,56.47,84.95\n".write(
      toFile: venues, atomically: true, encoding: .utf8)
    let clash = try await sandbox.admin(["venues", "import", venues])
    #expect(clash.status == 1 && clash.stderr.contains("tsu") && clash.stderr.contains("university"), "\(clash)")
    #expect(try await store.place("new") == nil)
  }

  @Test func aBadFileIsRefusedWholeNamingItsLine() async throws {
    let sandbox = try AdminSandbox()
    _ = try sandbox.store()  // the database, migrated
    let cases: [(String, String, String)] = [
      (
        "bad.csv", "id,parent,kind,title.en,lat,lon\nu1,,university,One,56.4,84.9\np1,u1,programme,Two,91,84.9\n",
        "line 3: 'lat' and 'lon'"
      ),
      (
        "orphan.csv", "id,parent,kind,title.en\nu1,,university,One\np1,nowhere,programme,Two\n",
        "line 3: Place 'p1' names parent 'nowhere'"
      ),
      ("loop.csv", "id,parent,kind,title.en\na,b,university,A\nb,a,faculty,B\n", "is its own ancestor"),
      ("twice.csv", "id,kind,title.en\na,university,A\na,faculty,B\n", "line 3: 'a' is also line 2"),
      (
        "bad.json", #"[{"id":"a","kind":"university","title":{"en":"A"}},{"id":"b","kind":"faculty","title":"B"}]"#,
        "item 2, title:"
      ),
      ("untitled.json", #"[{"id":"a","kind":"university","title":{}}]"#, "item 1: Place 'a': a title is required"),
    ]
    for (name, text, message) in cases {
      let file = sandbox.path(name)
      try text.write(toFile: file, atomically: true, encoding: .utf8)
      let run = try await sandbox.admin(["places", "import", file])
      #expect(run.status == 1 && run.stderr.contains(message) && run.stderr.contains("Nothing was imported"), "\(run)")
    }
    let list = try await sandbox.admin(["places", "list", "--json"])
    #expect((try list.json() as? [Any])?.isEmpty == true, "\(list)")
  }
}

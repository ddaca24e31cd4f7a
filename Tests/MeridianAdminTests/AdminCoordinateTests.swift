import Foundation
import Testing

/// `places import` and `venues import` follow GeoKit's coordinate rule (issue 33): a longitude of 181 was wrapped
/// and stored as -179; now the file is refused naming its line, and nothing is stored.
@Suite("meridian-admin refuses coordinates off the globe")
struct AdminCoordinateTests {
  @Test func placeAndVenueImportsRefuseALongitudeOutsideItsRange() async throws {
    let sandbox = try AdminSandbox()
    _ = try sandbox.store()  // the database, migrated
    let cases: [(command: String, name: String, text: String, message: String)] = [
      (
        "places", "east.csv", "id,kind,title.en,lat,lon\nu1,university,One,56.4,84.9\nu2,university,Two,56.4,181\n",
        "line 3"
      ),
      ("places", "west.csv", "id,kind,title.en,lat,lon\nu1,university,One,56.4,-180.5\n", "line 2"),
      ("venues", "venues.csv", "id,name_en,type,latitude,longitude\nbar,Corner Bar,bar,56.47,181\n", "181"),
    ]
    for (command, name, text, message) in cases {
      let file = sandbox.path(name)
      try text.write(toFile: file, atomically: true, encoding: .utf8)
      let run = try await sandbox.admin([command, "import", file])
      #expect(run.status == 1 && run.stderr.contains(message), "\(run)")
    }
    let places = try await sandbox.admin(["places", "list", "--json"])
    #expect((try places.json() as? [Any])?.isEmpty == true, "\(places)")
  }
}

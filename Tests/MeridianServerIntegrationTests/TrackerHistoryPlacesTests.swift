import DomainKit
import Foundation
import MeridianAPI
import MeridianTestSupport
import Testing

/// `meridian-tracker history places`: the built binary asks the server where the signed-in person has been.
@Suite("meridian-tracker history places")
struct TrackerHistoryPlacesTests {
  @Test func townsWithTheirRegionsAndCountriesInTheLanguageAsked() async throws {
    let executable = try #require(builtExecutable("meridian-tracker"))
    try await TestServer.with { server in
      let tracker = try await TrackerReplayTests.tracker(server, "anna")
      func places(_ arguments: [String]) async throws -> (status: Int32, stdout: String, output: String) {
        let child = try ChildProcess(executable, ["history", "places", "--state", tracker.state.path] + arguments)
        let status = await child.wait()
        return (status, child.standardOutput.value, child.output.value)
      }
      // Tomsk twice, Kyiv once; before the gazetteer is loaded the stays have no names.
      let stays = try HistoryGeoTests.stays([(56.49, 84.95), (50.45, 30.52), (56.51, 84.99)])
      _ = try await tracker.client.send(API.postFixes, body: FixBatch(deviceId: "phone", fixes: stays))
      let unnamed = try await places([])
      #expect(unnamed.status == 0, "\(unnamed.output)")
      #expect(unnamed.stdout.contains("3 stays, but the server has no place names"), "\(unnamed.output)")

      try await HistoryGeoTests.loadGazetteer(server.app.environment.store)
      let towns = try await places(["--level", "locality", "--language", "ru"])
      #expect(towns.status == 0, "\(towns.output)")
      let lines = towns.stdout.split(separator: "\n").map(String.init)
      #expect(lines.count == 2, "\(towns.output)")
      #expect(lines.first?.hasSuffix("Россия › Томская область › Томский район › Томск") == true, "\(lines)")
      #expect(lines.first?.contains("2 stays") == true, "\(lines)")
      #expect(lines.last?.hasSuffix("Украина › Kyiv City › Киев") == true, "\(lines)")

      let json = try await places(["--level", "country", "--language", "en", "--json"])
      #expect(json.status == 0, "\(json.output)")
      let answer = try JSONDecoder().decode(HistoryPlaces.self, from: Data(json.stdout.utf8))
      #expect(answer.places.map(\.area.name) == ["Russia", "Ukraine"])
      #expect(answer.places.map(\.visits) == [2, 1])

      // Only the period asked: the two days of the stays, then a day without any.
      let day = try await places(["--from", "2023-11-14T00:00:00Z", "--to", "2023-11-16T00:00:00Z", "--json"])
      #expect(try JSONDecoder().decode(HistoryPlaces.self, from: Data(day.stdout.utf8)).visits == 3)
      let none = try await places(["--from", "2024-01-01T00:00:00Z", "--to", "2024-01-02T00:00:00Z"])
      #expect(none.stdout.contains("No stays in this period."), "\(none.output)")

      let wrong = try await places(["--level", "planet"])
      #expect(wrong.status != 0)
      #expect(wrong.output.contains("--level must be one of"), "\(wrong.output)")
    }
  }
}

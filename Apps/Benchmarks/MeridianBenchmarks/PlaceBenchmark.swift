import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore
import NetworkingKit
import NetworkingKitAsyncHTTPClient

/// The places phase of `meridian-server-bench`, over `BENCH_PLACES` places (100,000 by default: universities in ten
/// cities, five faculties each, nine programmes per faculty, all with a location) stored through `store`:
/// - `places.seed_rows_per_s`: the places written through `upsertPlaces`, a hundred universities (5,100 places)
///   per call, as a directory import writes them (the statistics refreshed after them, as the import ends, are not
///   counted; the queries below follow them, also at the 102,000 places' pause);
/// - `places.search.p99_ms` (and `p50_ms`): one client, `GET /v1/places?q=<prefix>` pages of 10 for a random
///   3…6-letter prefix of a subject or a university's name (every word of the query a prefix, ranked);
/// - `places.nearby.p99_ms` (and `p50_ms`): `GET /v1/places?lat&lon&radius=1000&sort=distance`, random centres in
///   a city;
/// - `places.filter.p99_ms` (and `p50_ms`): `GET /v1/places?city=&min.passingScore=&max.passingScore=&sort=rating`,
///   a random city and a random 20-point range of programmes' passing scores (an attribute range in SQL, read
///   through `places_passing_score`), pages of 10, over the first 102,000 places (the size its issue names: the
///   seed pauses there) or all of them when fewer; `places.filter_all.p99_ms` (and `p50_ms`) the same over all of
///   them when more;
/// - `places.review.requests_per_s` (and `p99_ms`): 32 signed-in clients writing and rewriting reviews of random
///   programmes (`PUT /v1/places/{id}/reviews/me`), each changing the sums of the programme and its two ancestors.
func placeFigures(
  port: Int, transport: AsyncHTTPClientTransport, configuration: NetworkClient.Configuration,
  store: any MeridianStore, phase: Duration
) async throws {
  let count = Int(ProcessInfo.processInfo.environment["BENCH_PLACES"] ?? "") ?? 100_000
  let subjects = [
    "Physics", "Mathematics", "Chemistry", "Biology", "History", "Geography", "Geology", "Economics", "Law",
    "Philosophy", "Linguistics", "Medicine", "Architecture", "Informatics", "Journalism", "Psychology",
  ]
  let names = ["Siberian", "Northern", "Polytechnic", "Pedagogical", "Agrarian", "Medical", "Technical", "Classical"]
  let cities = (0..<10).map { (name: "City \($0)", latitude: 50.0 + Double($0), longitude: 30.0 + Double($0) * 2) }
  let perUniversity = 1 + 5 + 5 * 9
  let universities = max(1, count / perUniversity)
  var random = SystemRandomNumberGenerator()
  let anonymous = try makeClient(port: port, token: nil, transport: transport, configuration: configuration)
  /// Pages of programmes in a random city within a random range of passing scores, best rated first: p50 and p99.
  func filterFigures() async throws -> (p50: Double, p99: Double) {
    var filtered: [Duration] = []
    for _ in 0..<1000 {
      let city = cities.randomElement(using: &random) ?? cities[0]
      let lowest = Double(Int.random(in: 150...280, using: &random))
      let begin = ContinuousClock.now
      let page = try await anonymous.send(
        API.places,
        parameters: PlacesParameters(
          city: city.name, sort: "rating",
          attributes: [PlaceAttributeFilter(name: "passingScore", minimum: lowest, maximum: lowest + 20)]))
      filtered.append(ContinuousClock.now - begin)
      guard !page.items.isEmpty || universities < cities.count else { fatalError("no programme in \(city.name)") }
    }
    filtered.sort()
    return (quantile(filtered, 0.5), quantile(filtered, 0.99))
  }
  let filterSize = 100_000
  var filterAtSize: (p50: Double, p99: Double)?
  var programmes: [PlaceID] = []
  var records: [PlaceRecord] = []
  var seeding = Duration.zero
  var seedStart = ContinuousClock.now
  for university in 0..<universities {
    let city = cities[university % cities.count]
    let location = try Coordinate(
      latitude: city.latitude + Double.random(in: -0.1...0.1, using: &random),
      longitude: city.longitude + Double.random(in: -0.15...0.15, using: &random))
    let id = "u\(university)"
    records.append(
      PlaceRecord(
        place: try Place(
          id: PlaceID(id), kind: .university,
          name: LocalizedText(["en": "\(names[university % names.count]) University \(university)"]),
          location: location, city: city.name)))
    for faculty in 0..<5 {
      let subject = subjects[(university + faculty) % subjects.count]
      records.append(
        PlaceRecord(
          place: try Place(
            id: PlaceID("\(id)-f\(faculty)"), parentID: PlaceID(id), kind: .faculty,
            name: LocalizedText(["en": "Faculty of \(subject)"]), location: location, city: city.name)))
      for programme in 0..<9 {
        let programmeID = PlaceID("\(id)-f\(faculty)-p\(programme)")
        programmes.append(programmeID)
        records.append(
          PlaceRecord(
            place: try Place(
              id: programmeID, parentID: PlaceID("\(id)-f\(faculty)"), kind: .programme,
              name: LocalizedText(["en": "\(subject) \(programme + 1)"]), location: location, city: city.name),
            attributes: ["passingScore": .number(Double(150 + (university * 7 + programme * 13) % 150))]))
      }
    }
    if (university + 1) % 100 == 0 || university == universities - 1 {
      try await store.upsertPlaces(records, now: 1)
      records.removeAll(keepingCapacity: true)
      // At 100,000 places (102,000), unless they are all there is.
      if filterAtSize == nil && (university + 1) * perUniversity >= filterSize && university < universities - 1 {
        seeding += ContinuousClock.now - seedStart
        try await store.refreshPlannerStatistics(after: .places)
        filterAtSize = try await filterFigures()
        seedStart = ContinuousClock.now
      }
    }
  }
  seeding += ContinuousClock.now - seedStart
  // As `meridian-admin places import` ends: the planner's statistics at the new size, before the queries.
  try await store.refreshPlannerStatistics(after: .places)
  emit("places.seed_rows_per_s", Double(universities * perUniversity) / seconds(seeding), "rows/s")

  let words = subjects + names
  var searches: [Duration] = []
  for _ in 0..<1000 {
    let word = words.randomElement(using: &random) ?? "Physics"
    let prefix = String(word.prefix(Int.random(in: 3...min(6, word.count), using: &random)))
    let begin = ContinuousClock.now
    let page = try await anonymous.send(API.places, parameters: PlacesParameters(q: prefix))
    searches.append(ContinuousClock.now - begin)
    guard !page.items.isEmpty else { fatalError("no place matches '\(prefix)'") }
  }
  searches.sort()
  emit("places.search.p50_ms", quantile(searches, 0.5), "ms")
  emit("places.search.p99_ms", quantile(searches, 0.99), "ms")

  var nearby: [Duration] = []
  for _ in 0..<1000 {
    let city = cities.randomElement(using: &random) ?? cities[0]
    let center = try Coordinate(
      latitude: city.latitude + Double.random(in: -0.1...0.1, using: &random),
      longitude: city.longitude + Double.random(in: -0.15...0.15, using: &random))
    let begin = ContinuousClock.now
    _ = try await anonymous.send(
      API.places, parameters: PlacesParameters(center: center, radius: 1_000, sort: "distance"))
    nearby.append(ContinuousClock.now - begin)
  }
  nearby.sort()
  emit("places.nearby.p50_ms", quantile(nearby, 0.5), "ms")
  emit("places.nearby.p99_ms", quantile(nearby, 0.99), "ms")

  let all = try await filterFigures()
  emit("places.filter.p50_ms", (filterAtSize ?? all).p50, "ms")
  emit("places.filter.p99_ms", (filterAtSize ?? all).p99, "ms")
  if filterAtSize != nil {
    emit("places.filter_all.p50_ms", all.p50, "ms")
    emit("places.filter_all.p99_ms", all.p99, "ms")
  }

  var reviewers: [NetworkClient] = []
  for index in 0..<clients {
    let session = try await anonymous.send(
      API.register, body: EmailCredentials(email: "reviewer\(index)@example.com", password: "benchmark password"))
    reviewers.append(
      try makeClient(port: port, token: session.token, transport: transport, configuration: configuration))
  }
  let writers = reviewers
  let targets = programmes
  let reviews = try await load(for: phase) { task, iteration in
    let place = targets[(task * 7_919 + iteration * 104_729) % targets.count]
    _ = try await writers[task].send(
      API.saveReview, parameters: PlaceRef(id: place), body: NewReview(grade: 1 + iteration % 5, text: "Review"))
  }
  emit("places.review.requests_per_s", reviews.requestsPerSecond, "requests/s")
  emit("places.review.p99_ms", quantile(reviews.sortedLatencies, 0.99), "ms")
}

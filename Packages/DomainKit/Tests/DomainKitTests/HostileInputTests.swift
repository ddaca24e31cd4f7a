import Foundation
import GeoKit
import Testing

@testable import DomainKit

/// Inputs that trapped before (overflow or out-of-range conversion); now they throw a `FormatError` naming the
/// field, or are clamped.
@Suite struct HostileFormatInputTests {
  func osmandError(_ timestamp: String) -> FormatError? {
    do {
      _ = try OsmAnd.parse(query: "id=1&lat=1&lon=2&timestamp=\(timestamp)", receivedAt: 0)
      return nil
    } catch {
      return error as? FormatError
    }
  }

  @Test(arguments: [
    "99999999999999999999",  // 20 digits: not an Int64, and × 1000 as a Double does not fit either
    "1e300",  // seconds × 1000 far beyond Int64
    "-9223372036854775808",  // Int64.min seconds × 1000 overflows
    "9223372036854775807",  // Int64.max taken as ms: year 292 million
    "99999999999",  // seconds × 1000 fits, but is the year 5138
    "-1",  // before 1970
    "2201-01-01T00:00:00Z",
  ])
  func osmandTimestampOutOfRange(text: String) {
    let error = osmandError(text)
    #expect(error?.field == "timestamp")
    #expect(OsmAnd.parseTime(text) == nil)
  }

  @Test func osmandTimestampRangeEnds() {
    #expect(OsmAnd.parseTime("0") == 0)
    #expect(OsmAnd.parseTime("2200-12-31T23:59:59.999Z") == Timestamp.plausibleRange.upperBound)
    #expect(OsmAnd.parseTime("7289654399.999") == Timestamp.plausibleRange.upperBound)
  }

  @Test func traccarJSONTimestampOutOfRange() {
    let body =
      #"{"device_id":"d","location":{"timestamp":"9999-01-01T00:00:00Z","coords":{"latitude":1,"longitude":2}}}"#
    #expect(throws: FormatError.self) { try OsmAnd.parse(json: Data(body.utf8)) }
  }

  func ownTracksError(_ json: String) -> FormatError? {
    do {
      for case .location(let location) in try OwnTracks.decode(Data(json.utf8)) { _ = try location.fix() }
      return nil
    } catch {
      return error as? FormatError
    }
  }

  @Test func ownTracksTstOverflow() throws {
    // tst × 1000 overflowed Int64.
    #expect(ownTracksError(#"{"_type":"location","lat":1,"lon":2,"tst":9223372036854775807}"#)?.field == "tst")
    // Fits the decoder, × 1000 fits Int64, but it is the year 3 million.
    #expect(ownTracksError(#"{"_type":"location","lat":1,"lon":2,"tst":99999999999999}"#)?.field == "tst")
    #expect(ownTracksError(#"{"_type":"location","lat":1,"lon":2,"tst":-5}"#)?.field == "tst")
    // Built directly, bypassing the decoder.
    #expect(throws: FormatError(.owntracks, field: "tst", "\(Int64.max) is not epoch seconds between 1970 and 2200")) {
      try OwnTracks.Location(lat: 1, lon: 2, tst: .max).fix()
    }
  }

  @Test func ownTracksHugeIntegersAreRejected() {
    #expect(ownTracksError(#"{"_type":"location","lat":1,"lon":2,"tst":1,"acc":9223372036854775807}"#)?.field == "acc")
  }

  @Test func ownTracksEncodingHugeFixValuesDoesNotTrap() throws {
    let fix = try LocationFix(
      timestamp: 0, latitude: 1, longitude: 2, horizontalAccuracy: 1e300, altitude: -1e300, speed: 1e300)
    let message = OwnTracks.Location(fix)
    #expect(message.acc == nil && message.alt == nil && message.vel == nil)
  }

  @Test func geoJSONHugeFloor() throws {
    let text =
      #"{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"time":"2024-01-01T00:00:00Z","floor":1e300}}"#
    do {
      _ = try GeoJSON.read(data: Data(text.utf8))
      Issue.record("expected an error")
    } catch let error as FormatError {
      #expect(error.field?.hasSuffix("floor") == true)
    } catch {
      Issue.record("unexpected \(error)")
    }
    let fine = text.replacingOccurrences(of: "1e300", with: "2")
    #expect(try GeoJSON.read(data: Data(fine.utf8)).first?.floor == 2)
  }

  @Test func deeplyNestedJSONIsRejected() {
    let depth = 200_000
    let text =
      #"{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"time":1,"x":"#
      + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}}]}"
    #expect(throws: FormatError.self) { try GeoJSON.read(data: Data(text.utf8)) }
  }

  @Test func absurdDatesSaturate() {
    #expect(Timestamp.milliseconds(Date(timeIntervalSince1970: 1e300)) == .max)
    #expect(Timestamp.milliseconds(Date(timeIntervalSince1970: -1e300)) == .min)
  }
}

@Suite struct HostileRuleInputTests {
  @Test func pageRequestDecodingClamps() throws {
    func decode(_ json: String) throws -> PageRequest {
      try JSONDecoder().decode(PageRequest.self, from: Data(json.utf8))
    }
    #expect(try decode(#"{"page":0,"pageSize":10}"#) == PageRequest(page: 1))
    #expect(try decode(#"{"page":-7,"pageSize":-5}"#) == PageRequest(page: 1, pageSize: 1))
    #expect(try decode(#"{"page":2,"pageSize":100000}"#).pageSize == 100)
    #expect(try decode("{}") == PageRequest())
    let huge = try decode(#"{"page":9223372036854775807,"pageSize":100}"#)
    #expect(huge.page == PageRequest.maximumPage)
    let page = Page(Array(0..<25), request: huge)
    #expect(page.items.isEmpty && !page.hasMore && page.total == 25)
  }

  @Test func pageClampsMutatedRequests() {
    var request = PageRequest(page: 2, pageSize: 10)
    request.page = -3
    request.pageSize = -5
    #expect(request.offset == 0)
    let first = Page(Array(0..<25), request: request)
    #expect(first.items == [0] && first.page == 1 && first.pageSize == 1 && first.hasMore)
    request.page = .max
    request.pageSize = .max
    #expect(request.offset == .max)
    #expect(Page(Array(0..<25), request: request).items.isEmpty)
  }

  @Test func pollPercentagesWithHugeCounts() {
    let results = PollResults(counts: [.max, .max])
    #expect(results.percentages == [50, 50] && results.total == .max)
    #expect(PollResults.largestRemainder([.max, 1]).reduce(0, +) == 100)
  }

  @Test func ledgerBalanceSaturates() throws {
    var ledger = PointsLedger(userID: "u")
    try ledger.earn(.max, reason: .adjustment, id: "a", at: 0)
    try ledger.earn(.max, reason: .adjustment, id: "b", at: 1)
    #expect(ledger.balance == .max)
  }

  @Test func visitDurationWithHostileTimes() throws {
    let visit = Visit(
      location: Coordinate(uncheckedLatitude: 0, longitude: 0), arrival: .min, departure: .max, fixCount: 2)
    #expect(visit.duration == .max)
    let fixes = try [Int64.min, Int64.max].map { try LocationFix(timestamp: $0, latitude: 0, longitude: 0) }
    #expect(VisitDetector().visits(in: fixes).count == 1)
  }

  @Test func timeOfDayWindowHugeHours() {
    #expect(throws: FixValidationError.self) { try TimeOfDayWindow(from: (.max, 0), to: (1, 0)) }
    #expect(throws: FixValidationError.self) { try TimeOfDayWindow(from: (1, 0), to: (0, .min)) }
    #expect(throws: FixValidationError.self) { try TimeOfDayWindow(from: (24, 0), to: (1, 0)) }
    #expect(throws: Never.self) { try TimeOfDayWindow(from: (23, 59), to: (0, 0)) }
  }
}

/// Decoding runs the same validation as the validating initialisers.
@Suite struct ValidatingDecodingTests {
  /// The `debugDescription` of the `dataCorrupted` error decoding `json` as `T`, or nil when it decodes.
  func corruption<T: Decodable>(_ type: T.Type, _ json: String) -> String? {
    do {
      _ = try JSONDecoder().decode(T.self, from: Data(json.utf8))
      return nil
    } catch DecodingError.dataCorrupted(let context) {
      return context.debugDescription
    } catch {
      return "unexpected \(error)"
    }
  }

  @Test func group() throws {
    let valid =
      #"{"id":"g","ownerId":"o","kind":"custom","name":"Climbing","members":["a"],"visibility":{"location":true,"fields":[]}}"#
    #expect(corruption(Group.self, valid) == nil)
    let group = try JSONDecoder().decode(Group.self, from: Data(valid.utf8))
    #expect(try JSONDecoder().decode(Group.self, from: JSONEncoder().encode(group)) == group)
    for standard in Group.standardGroups(for: "o") {
      #expect(try JSONDecoder().decode(Group.self, from: JSONEncoder().encode(standard)) == standard)
    }
    #expect(
      corruption(Group.self, valid.replacingOccurrences(of: "Climbing", with: "   "))?.hasPrefix("name:") == true)
    let long = String(repeating: "x", count: 65)
    #expect(corruption(Group.self, valid.replacingOccurrences(of: "Climbing", with: long))?.hasPrefix("name:") == true)
    #expect(
      corruption(Group.self, valid.replacingOccurrences(of: #"["a"]"#, with: #"["o"]"#))?.hasPrefix("members:") == true)
    let renamedFamily = valid.replacingOccurrences(of: "custom", with: "family")
    #expect(corruption(Group.self, renamedFamily)?.contains("'Family'") == true)
  }

  @Test func poll() {
    let valid =
      #"{"id":"p","authorId":"a","title":"Tea or coffee?","description":"","options":[{"text":"Tea"},{"text":"Coffee"}],"createdAt":1}"#
    #expect(corruption(Poll.self, valid) == nil)
    #expect(
      corruption(Poll.self, valid.replacingOccurrences(of: #",{"text":"Coffee"}"#, with: ""))?.hasPrefix("options:")
        == true)
    #expect(
      corruption(
        Poll.self, valid.replacingOccurrences(of: #"{"text":"Tea"}"#, with: #"{"text":"Tea"},{"text":"Milk"}"#))?
        .hasPrefix("options:") == true)
    #expect(
      corruption(Poll.self, valid.replacingOccurrences(of: "Tea or coffee?", with: " "))?.hasPrefix("title:") == true)
    #expect(
      corruption(Poll.self, valid.replacingOccurrences(of: "Tea or coffee?", with: String(repeating: "t", count: 256)))?
        .hasPrefix("title:") == true)
    #expect(
      corruption(
        Poll.self,
        valid.replacingOccurrences(
          of: #""description":"""#, with: #""description":"\#(String(repeating: "d", count: 501))""#))?
        .hasPrefix("description:") == true)
    #expect(corruption(Poll.self, valid.replacingOccurrences(of: "Coffee", with: ""))?.hasPrefix("options:") == true)
  }

  @Test func timeOfDayWindow() {
    #expect(corruption(TimeOfDayWindow.self, #"{"start":1320,"end":120}"#) == nil)
    #expect(corruption(TimeOfDayWindow.self, #"{"start":-1,"end":120}"#)?.hasPrefix("start") == true)
    #expect(corruption(TimeOfDayWindow.self, #"{"start":0,"end":1440}"#)?.hasPrefix("end") == true)
  }

  @Test func credential() throws {
    #expect(corruption(Credential.self, #"{"kind":"phone","value":"+380671234567"}"#) == nil)
    let spaced = try JSONDecoder().decode(
      Credential.self, from: Data(#"{"kind":"phone","value":"+380 67 123 4567"}"#.utf8))
    #expect(spaced == .phone("+380671234567"))
    #expect(corruption(Credential.self, #"{"kind":"phone","value":"12345"}"#)?.hasPrefix("value:") == true)
    #expect(corruption(Credential.self, #"{"kind":"email","value":"no-at-sign"}"#)?.hasPrefix("value:") == true)
    #expect(corruption(Credential.self, #"{"kind":"email","value":"a@b"}"#)?.hasPrefix("value:") == true)
  }

  @Test func datePresetCustom() {
    #expect(corruption(DatePreset.self, #"{"preset":"custom","from":1,"to":2}"#) == nil)
    #expect(corruption(DatePreset.self, #"{"preset":"custom","from":5,"to":2}"#)?.contains("'to'") == true)
    #expect(corruption(DatePreset.self, #"{"preset":"sometime"}"#)?.contains("sometime") == true)
    #expect(throws: DecodingError.self) {
      try JSONDecoder().decode(DatePreset.self, from: Data(#"{"preset":"custom","to":2}"#.utf8))
    }
  }

  @Test func placeTimeZone() throws {
    #expect(throws: PlaceError.unknownTimeZone("Mars/Olympus")) {
      try Place(id: "p", kind: .venue, name: LocalizedText(["en": "P"]), timeZone: "Mars/Olympus")
    }
    var place = try Place(id: "p", kind: .venue, name: LocalizedText(["en": "P"]), timeZone: "Europe/Kyiv")
    #expect(place.resolvedTimeZone.identifier == "Europe/Kyiv")
    #expect(throws: PlaceError.self) { try place.setTimeZone("Nowhere/Land") }
    #expect(place.timeZone == "Europe/Kyiv")
    try place.setTimeZone(nil)
    #expect(place.resolvedTimeZone == .gmt)
    let json = #"{"id":"p","kind":"venue","name":{"en":"P"},"timeZone":"Mars/Olympus"}"#
    #expect(corruption(Place.self, json)?.hasPrefix("timeZone:") == true)
  }

  @Test func review() {
    let valid = #"{"id":"r","placeId":"p","authorId":"a","grade":5,"grades":{"teaching":4},"text":"","createdAt":1}"#
    #expect(corruption(Review.self, valid) == nil)
    #expect(
      corruption(Review.self, valid.replacingOccurrences(of: #""grade":5"#, with: #""grade":0"#))?.hasPrefix("grade ")
        == true)
    #expect(
      corruption(Review.self, valid.replacingOccurrences(of: #""teaching":4"#, with: #""teaching":9"#))?.hasPrefix(
        "grades.teaching") == true)
  }

  @Test func ballotRejectsVotesForAnotherPoll() throws {
    var ballot = Ballot(pollID: "p1")
    #expect(throws: PollError.wrongPoll("p2")) {
      try ballot.cast(Vote(pollID: "p2", userID: "u", choice: .first, createdAt: 0))
    }
    #expect(ballot.votes.isEmpty)
    try ballot.cast(Vote(pollID: "p1", userID: "u", choice: .first, createdAt: 0))
    #expect(ballot.results.counts == [1, 0])
  }
}

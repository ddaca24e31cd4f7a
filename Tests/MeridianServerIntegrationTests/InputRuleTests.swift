import DomainKit
import Foundation
import GeoKit
import HTTPTypes
import MeridianAPI
import MeridianStore
import NetworkingKit
import Testing

/// The rules every route holds for what a person sends, on every engine: one rule for text a person writes
/// (DomainKit's `UserText`) and one for the image URLs a person gives (`/v1/blobs/<hash>` of a stored blob).
@Suite("Input rules on every route", .inProcess)
struct InputRuleTests {
  /// The server's answer to `body`, which must fail with an envelope.
  static func refusal(_ body: () async throws -> some Any) async -> ServerError? {
    do {
      _ = try await body()
      return nil
    } catch let error as NetworkingError {
      return error.serverError
    } catch {
      return nil
    }
  }

  /// Expects `body` to fail with `status` `code` and a message naming `field`.
  static func expectRefused(
    _ code: APIErrorCode, _ status: Int, naming field: String, _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> some Any
  ) async {
    let error = await refusal(body)
    #expect(error?.code == code.rawValue, "\(what): \(String(describing: error))", sourceLocation: sourceLocation)
    #expect(error?.status.code == status, "\(what): \(String(describing: error))", sourceLocation: sourceLocation)
    #expect(
      error?.message?.contains(field) == true, "\(what): \(String(describing: error))", sourceLocation: sourceLocation)
  }

  static let physics = PlaceRef(id: "tsu-ff-phys")

  @Test(arguments: PollTests.engines)
  func textAPersonWritesFollowsOneRuleOnEveryRoute(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      try await PlaceTests.seed(server.app.environment.store)
      let (session, anna) = try await server.signUp("anna")
      let images = [
        try await anna.send(API.uploadBlob, body: PollTests.png(100)).url,
        try await anna.send(API.uploadBlob, body: PollTests.png(100, seed: 2)).url,
      ]
      let poll = try await anna.send(API.createPoll, body: PollTests.newPoll("Tea?", images: images)).poll
      func newPoll(title: String = "Tea?", description: String = "", caption: String = "Tea") -> NewPoll {
        NewPoll(
          title: title, description: description,
          options: [PollOption(text: caption, imageURL: images[0]), PollOption(text: "Coffee", imageURL: images[1])])
      }
      let group = try await anna.send(API.createGroup, body: NewGroup(name: "Climbing"))
      let circle = GeofenceShape.circle(center: try Coordinate(latitude: 50, longitude: 30), radius: 100)

      // NUL, BEL, an escape sequence that clears a terminal, and a C1 control (CSI), in the middle of each text.
      for bad in ["a\u{0}b", "a\u{7}b", "a\u{1B}[2Jb", "a\u{9B}b"] {
        let what = bad.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
        await Self.expectRefused(.invalidPoll, 422, naming: "title", what) {
          try await anna.send(API.createPoll, body: newPoll(title: bad))
        }
        await Self.expectRefused(.invalidPoll, 422, naming: "description", what) {
          try await anna.send(API.createPoll, body: newPoll(description: bad))
        }
        await Self.expectRefused(.invalidPoll, 422, naming: "options[0].text", what) {
          try await anna.send(API.createPoll, body: newPoll(caption: bad))
        }
        await Self.expectRefused(.invalidComment, 422, naming: "text", what) {
          try await anna.send(API.addPollComment, parameters: PollRef(id: poll.id), body: NewPollComment(text: bad))
        }
        await Self.expectRefused(.invalidReview, 422, naming: "text", what) {
          try await anna.send(API.saveReview, parameters: Self.physics, body: NewReview(grade: 4, text: bad))
        }
        await Self.expectRefused(.invalidReview, 422, naming: "grades", what) {
          try await anna.send(API.saveReview, parameters: Self.physics, body: NewReview(grade: 4, grades: [bad: 4]))
        }
        await Self.expectRefused(.invalidRequest, 400, naming: "fullName", what) {
          try await anna.send(API.updateProfile, body: ProfileUpdate(fullName: bad))
        }
        await Self.expectRefused(.invalidRequest, 400, naming: "status", what) {
          try await anna.send(API.updateProfile, body: ProfileUpdate(status: bad))
        }
        await Self.expectRefused(.invalidGroupName, 400, naming: "name", what) {
          try await anna.send(API.createGroup, body: NewGroup(name: bad))
        }
        await Self.expectRefused(.invalidGroupName, 400, naming: "name", what) {
          try await anna.send(API.updateGroup, parameters: GroupRef(id: group.id), body: GroupUpdate(name: bad))
        }
        await Self.expectRefused(.invalidAchievement, 422, naming: "title", what) {
          try await anna.send(API.addAchievement, body: NewAchievement(kind: "sport", title: bad))
        }
        await Self.expectRefused(.invalidAchievement, 422, naming: "description", what) {
          try await anna.send(API.addAchievement, body: NewAchievement(kind: "sport", title: "Ski", description: bad))
        }
        await Self.expectRefused(.invalidGeofence, 422, naming: "name", what) {
          try await anna.send(API.createGeofence, body: NewGeofence(name: bad, shape: circle))
        }
        await Self.expectRefused(.invalidRequest, 400, naming: "note", what) {
          try await anna.send(API.claimVenue, body: VenueClaimRequest(venueID: "tsu", note: bad))
        }
      }
      // Ids in bodies follow the identifier rule (no control characters), never reaching an engine that can't store
      // them.
      for (what, body) in [
        (
          "groupId",
          {
            try await anna.send(
              API.createGeofence, body: NewGeofence(name: "Home", shape: circle, sharing: .group, groupId: "a\u{0}b"))
          }
        ),
        ("placeId", { try await anna.send(API.createGeofence, body: NewGeofence(placeId: "a\u{0}b")) }),
        ("venueId", { try await anna.send(API.claimVenue, body: VenueClaimRequest(venueID: "a\u{0}b")) }),
      ] as [(String, () async throws -> Any)] {
        let error = await Self.refusal(body)
        #expect((400..<500).contains(error?.status.code ?? 0), "\(what): \(String(describing: error))")
      }
      // One-line texts take no tab or line break; a caption has a limit (it had none).
      await Self.expectRefused(.invalidPoll, 422, naming: "title", "a line break in a title") {
        try await anna.send(API.createPoll, body: newPoll(title: "Tea\nor coffee?"))
      }
      await Self.expectRefused(.invalidRequest, 400, naming: "fullName", "a tab in a name") {
        try await anna.send(API.updateProfile, body: ProfileUpdate(fullName: "Anna\tK"))
      }
      await Self.expectRefused(.invalidPoll, 422, naming: "options[0].text", "a caption of 100,000 characters") {
        try await anna.send(API.createPoll, body: newPoll(caption: String(repeating: "x", count: 100_000)))
      }
      await Self.expectRefused(.invalidPoll, 422, naming: "options[1].text", "an empty caption") {
        try await anna.send(
          API.createPoll,
          body: NewPoll(
            title: "t",
            options: [PollOption(text: "Tea", imageURL: images[0]), PollOption(text: " ", imageURL: images[1])]))
      }

      // Nothing refused was stored.
      #expect(try await anna.send(API.polls, parameters: PollFeedParameters()).items.map(\.poll.id) == [poll.id])
      #expect(try await anna.send(API.pollComments, parameters: PollCommentsParameters(id: poll.id)).items.isEmpty)
      #expect(try await anna.send(API.me).profile.fullName == "Anna")
      #expect(try await anna.send(API.groups).groups.map(\.name).contains("Climbing"))
      #expect(try await anna.send(API.achievements).items.isEmpty)
      #expect(try await anna.send(API.geofences).items.isEmpty)
      _ = session

      // What the rule allows is stored as written on every engine: tabs and line breaks in a multi-line text, any
      // script and emoji, and the longest caption.
      let comment = "Line one\n\tline two — ü, я, 🇺🇦"
      let added = try await anna.send(
        API.addPollComment, parameters: PollRef(id: poll.id), body: NewPollComment(text: "  \(comment)\n"))
      #expect(added.comment.text == comment)
      #expect(
        try await anna.send(API.pollComments, parameters: PollCommentsParameters(id: poll.id)).items.map(
          \.comment.text) == [comment])
      let longest = String(repeating: "я", count: PollOption.maximumTextLength)
      let created = try await anna.send(API.createPoll, body: newPoll(title: "Long", caption: longest))
      #expect(try await anna.send(API.poll, parameters: PollRef(id: created.poll.id)).poll.options[0].text == longest)
      let review = try await anna.send(
        API.saveReview, parameters: Self.physics, body: NewReview(grade: 4, grades: ["teaching": 5], text: comment))
      #expect(review.text == comment)
      let page = try await server.client().send(API.placeReviews, parameters: PlacePageParameters(id: "tsu-ff-phys"))
      #expect(page.items.map(\.text) == [comment])
    }
  }

  @Test(arguments: PollTests.engines)
  func imageURLsAreExactlyAStoredBlob(_ engine: String) async throws {
    try await PollTests.withServer(engine) { server in
      let (_, anna) = try await server.signUp("anna")
      let stored = try await anna.send(API.uploadBlob, body: PollTests.png(100))
      let other = try await anna.send(API.uploadBlob, body: PollTests.png(100, seed: 9)).url
      let notStored = "/v1/blobs/" + String(repeating: "a", count: 64)
      // Each ends in a stored hash, or names one loosely: none is an uploaded image.
      let forged = [
        "https://tracker.example/pixel/\(stored.hash)", "javascript:alert(1)//\(stored.hash)", stored.hash,
        "/v1/blobs/\(stored.hash)?track=1", "/v1/blobs/\(stored.hash)/", "//evil.example/v1/blobs/\(stored.hash)",
        "/x/v1/blobs/\(stored.hash)", notStored,
      ]
      for url in forged {
        await Self.expectRefused(.invalidPoll, 422, naming: "options[0].imageUrl", url) {
          try await anna.send(
            API.createPoll,
            body: NewPoll(
              title: "t", options: [PollOption(text: "a", imageURL: url), PollOption(text: "b", imageURL: other)]))
        }
        await Self.expectRefused(.invalidRequest, 400, naming: "avatar", url) {
          try await anna.send(API.updateProfile, body: ProfileUpdate(avatar: url))
        }
      }
      for url in ["javascript:alert(1)", "https://example.com/me.png", "data:image/png;base64,iVBORw0KGgo="] {
        await Self.expectRefused(.invalidRequest, 400, naming: "avatar", url) {
          try await anna.send(API.updateProfile, body: ProfileUpdate(avatar: url))
        }
      }
      #expect(try await anna.send(API.me).profile.avatar == nil)
      #expect(try await anna.send(API.updateProfile, body: ProfileUpdate(avatar: stored.url)).avatar == stored.url)
      #expect(try await anna.send(API.updateProfile, body: ProfileUpdate(avatar: "")).avatar == nil)
      let poll = try await anna.send(
        API.createPoll,
        body: NewPoll(
          title: "t", options: [PollOption(text: "a", imageURL: stored.url), PollOption(text: "b", imageURL: other)]))
      #expect(poll.poll.options.map(\.imageURL) == [stored.url, other])
    }
  }
}

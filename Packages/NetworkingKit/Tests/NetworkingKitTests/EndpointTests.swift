import Foundation
import HTTPTypes
import NetworkingKit
import NetworkingKitTestSupport
import Testing

typealias Profile = SampleProfile
typealias Fix = SampleFix
typealias FixBatch = SampleFixBatch
typealias Receipt = SampleReceipt

struct UserRef: Sendable {
  var id: String
}

struct Search: Sendable {
  var query: String
  var page: Int?
}

enum API {
  static let profile = Endpoint<UserRef, NoBody, Profile>(.get, "/v1/users/\(\.id, "id")/profile")
  static let search = Endpoint<Search, NoBody, [Profile]>(
    .get, "/v1/users/search", query: { [QueryItem("q", $0.query), QueryItem("page", $0.page)] })
  static let postFixes = SampleAPI.postFixes
  static let plainPost = SampleAPI.plainPost
  static let me = SampleAPI.me
  static let login = Endpoint<Void, [String: String], Receipt>(
    .post, "/v1/auth/login", body: .formURLEncoded, authentication: .none)
  static let member = Endpoint<(group: String, user: String), NoBody, NoContent>(
    .put, "/v1/groups/\(\.group, "id")/members/\(\.user, "userId")", body: .none, response: .empty)
}

@Suite struct EndpointTests {
  @Test func pathTemplateRendersAndNamesParameters() {
    #expect(API.profile.pathTemplate == "/v1/users/{id}/profile")
    #expect(API.profile.path.parameterNames == ["id"])
    #expect(API.profile.path.render(UserRef(id: "42")) == "/v1/users/42/profile")
    #expect(API.profile.path.render(UserRef(id: "a b/c?")) == "/v1/users/a%20b%2Fc%3F/profile")
    #expect(API.member.pathTemplate == "/v1/groups/{id}/members/{userId}")
    #expect(API.member.path.render((group: "g1", user: "u2")) == "/v1/groups/g1/members/u2")
  }

  @Test func pathTemplateMatchesConcretePaths() {
    #expect(API.profile.path.match("/v1/users/42/profile") == ["id": "42"])
    #expect(API.profile.path.match("/v1/users/a%20b/profile") == ["id": "a b"])
    #expect(API.profile.path.match("/v1/users/42/profile/extra") == nil)
    #expect(API.profile.path.match("/v1/users//profile") == nil)
    #expect(API.member.path.match("/v1/groups/g1/members/u2") == ["id": "g1", "userId": "u2"])
  }

  @Test func descriptorCarriesWhatAServerRegisters() {
    let descriptors = [API.profile.descriptor, API.postFixes.descriptor, API.member.descriptor]
    #expect(
      descriptors.map(\.description) == [
        "GET /v1/users/{id}/profile", "POST /v1/fixes", "PUT /v1/groups/{id}/members/{userId}",
      ])
    #expect(API.member.descriptor.colonPathTemplate == "/v1/groups/:id/members/:userId")
    #expect(ObjectIdentifier(API.postFixes.descriptor.bodyType) == ObjectIdentifier(FixBatch.self))
    #expect(ObjectIdentifier(API.postFixes.descriptor.responseType) == ObjectIdentifier(Receipt.self))
    #expect(API.postFixes.descriptor.bodyContentType == "application/json")
    #expect(ObjectIdentifier(API.profile.descriptor.errorEnvelopeType) == ObjectIdentifier(StandardErrorEnvelope.self))
    #expect(API.login.descriptor.authentication == .none)
  }

  @Test func jsonBodiesAreTheSameBytesForTheSameValue() throws {
    struct Reading: Encodable, Sendable {
      var zeta = 1
      var alpha = "a"
      var nested = ["m": 2, "b": 3, "x": 4, "c": 5]
    }
    let coding = RequestBodyCoding<Reading>.json()
    let first = try #require(try coding.encode(Reading()))
    #expect(String(decoding: first, as: UTF8.self) == #"{"alpha":"a","nested":{"b":3,"c":5,"m":2,"x":4},"zeta":1}"#)
    for _ in 0..<20 { #expect(try coding.encode(Reading()) == first) }
  }

  @Test func jsonResponsesTryTheCommonFormReaderFirst() throws {
    /// Reads only the exact bytes `{"n":<digit>}`, and says so in the value.
    struct Count: CommonFormDecodable, Equatable, Sendable {
      var n: Int
      var readFast = false
      enum CodingKeys: String, CodingKey { case n }
      static func decodeCommonForm(_ data: Data) -> Count? {
        let bytes = Array(data)
        guard bytes.count == 7, bytes.starts(with: Array(#"{"n":"#.utf8)), bytes[6] == UInt8(ascii: "}") else {
          return nil
        }
        return Count(n: Int(bytes[5]) - 48, readFast: true)
      }
    }
    let decoding = ResponseDecoding<Count>.json()
    #expect(try decoding.decode(Data(#"{"n":7}"#.utf8)) == Count(n: 7, readFast: true))
    #expect(try decoding.decode(Data(#"{ "n": 42 }"#.utf8)) == Count(n: 42, readFast: false))
    #expect(throws: DecodingError.self) { try decoding.decode(Data(#"{"m":1}"#.utf8)) }
  }

  @Test func retryabilityFollowsMethodAndKey() {
    #expect(API.profile.isRetryable)
    #expect(API.member.isRetryable)  // PUT is idempotent
    #expect(!API.plainPost.isRetryable)
    #expect(API.postFixes.isRetryable)
  }

  @Test func factoryBuildsTheRequest() throws {
    let factory = try RequestFactory(
      baseURL: URL(string: "https://api.example.com:8443/api/")!, defaultHeaderFields: [.userAgent: "test"])
    let request = try factory.makeRequest(
      API.search, parameters: Search(query: "Анна & Co", page: 2), body: NoBody(), bearerToken: "tok")
    #expect(request.head.method == .get)
    #expect(request.head.scheme == "https")
    #expect(request.head.authority == "api.example.com:8443")
    #expect(request.head.path == "/api/v1/users/search?q=%D0%90%D0%BD%D0%BD%D0%B0%20%26%20Co&page=2")
    #expect(request.head.headerFields[.authorization] == "Bearer tok")
    #expect(request.head.headerFields[.userAgent] == "test")
    #expect(request.head.headerFields[.accept] == "application/json")
    #expect(request.body == nil)

    let noPage = try factory.makeRequest(API.search, parameters: Search(query: "x", page: nil), body: NoBody())
    #expect(noPage.head.path == "/api/v1/users/search?q=x&page")
  }

  @Test func factoryEncodesBodiesAndKeys() throws {
    let factory = try RequestFactory(baseURL: URL(string: "http://127.0.0.1:8080")!)
    let batch = FixBatch(deviceId: "d1", fixes: [Fix(lat: 1.5, lon: 2)])
    let post = try factory.makeRequest(API.postFixes, parameters: (), body: batch, idempotencyKey: "k-1")
    #expect(post.head.headerFields[.contentType] == "application/json")
    #expect(post.head.headerFields[.idempotencyKey] == "k-1")
    #expect(try JSONDecoder().decode(FixBatch.self, from: post.body ?? Data()) == batch)

    let login = try factory.makeRequest(
      API.login, parameters: (), body: ["email": "a+b@example.com", "password": "p w"], bearerToken: "ignored")
    #expect(login.head.headerFields[.contentType] == "application/x-www-form-urlencoded")
    #expect(login.head.headerFields[.authorization] == nil)
    #expect(String(decoding: login.body ?? Data(), as: UTF8.self) == "email=a%2Bb%40example.com&password=p%20w")
  }

  @Test func formEncodingRejectsNestedValues() throws {
    let nested = Endpoint<Void, FixBatch, Receipt>(.post, "/x", body: .formURLEncoded)
    let factory = try RequestFactory(baseURL: URL(string: "http://localhost")!)
    #expect(throws: NetworkingError.self) {
      try factory.makeRequest(nested, parameters: (), body: FixBatch(deviceId: "d", fixes: [Fix(lat: 1, lon: 2)]))
    }
  }

  @Test func badBaseURLIsAClearError() {
    #expect(throws: NetworkingError.self) { try RequestFactory(baseURL: URL(string: "ftp://example.com")!) }
  }
}

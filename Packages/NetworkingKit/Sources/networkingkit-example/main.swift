// The README's complete client: `swift run --package-path Packages/NetworkingKit networkingkit-example`.
import Foundation
import NetworkingKit
import NetworkingKitAsyncHTTPClient

struct UserRef: Sendable { var id: String }
struct Profile: Codable, Sendable {
  var id: String
  var name: String
}
struct Fix: Codable, Sendable {
  var lat: Double
  var lon: Double
}
struct FixBatch: Codable, Sendable {
  var deviceId: String
  var fixes: [Fix]
}
struct Receipt: Codable, Sendable {
  var accepted: Int
  var duplicates: Int
}

enum API {
  static let profile = Endpoint<UserRef, NoBody, Profile>(.get, "/v1/users/\(\.id, "id")/profile")
  static let postFixes = Endpoint<Void, FixBatch, Receipt>(.post, "/v1/fixes", idempotency: .key)
}

let transport = AsyncHTTPClientTransport()  // URLSessionTransport() in an Apple app
let credentials = BearerTokenCredentials(token: ProcessInfo.processInfo.environment["MERIDIAN_TOKEN"]) { _ in
  nil  // no refresh token here: a rejected token becomes NetworkingError.unauthorized → sign in again
}
let client = try NetworkClient(
  baseURL: URL(string: "http://127.0.0.1:8080")!, transport: transport, credentials: credentials)
do {
  let profile = try await client.send(API.profile, parameters: UserRef(id: "42"))
  let batch = FixBatch(deviceId: "phone-1", fixes: [Fix(lat: 52.52, lon: 13.405)])
  let receipt = try await client.send(API.postFixes, body: batch)  // one Idempotency-Key for every attempt
  print(profile.name, receipt.accepted)
} catch let error as NetworkingError where error.transportError?.isUnreachable == true {
  print("No connection to the server")  // refused / no network: told at once, not retried
}
try await transport.shutdown()

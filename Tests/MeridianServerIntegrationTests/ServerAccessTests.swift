import Foundation
import MeridianAPI
import MeridianStoreTesting
import MeridianTestSupport
import NetworkingKit
import Testing

/// The test harness's two ways to a server: a client in process (``ServerAccess/router``) answers as one over the
/// socket does, on the same store and writer, so a suite may move to it without testing anything else.
@Suite("Test servers in process and over the socket")
struct ServerAccessTests {
  @Test func aClientInProcessIsAnsweredAsOneOverTheSocket() async throws {
    try await TestServer.with { socketServer in
      var routerServer = socketServer
      routerServer.access = .router
      // An account made in process signs in over the socket, and the other way round.
      let (made, inProcess) = try await routerServer.signUp("anna")
      let (_, overSocket) = try await socketServer.signUp("bob")
      #expect(try await socketServer.client(token: made.token).send(API.me).profile.fullName == "Anna")
      #expect(try await inProcess.send(API.me).profile.fullName == "Anna")
      #expect(try await overSocket.send(API.me).profile.fullName == "Bob")

      // Fixes posted in process (above the compression threshold: a gzip body) go through the running writer.
      let batch = FixBatch(deviceId: "anna-phone", fixes: try makeFixes(count: 100))
      #expect(try await inProcess.send(API.postFixes, body: batch) == FixReceipt(accepted: 100, duplicates: 0))
      let anna = try socketServer.client(token: made.token)
      #expect(try await anna.send(API.history, parameters: HistoryQuery()).fixes.count == 100)

      // Refusals carry the same envelope either way.
      for server in [socketServer, routerServer] {
        await expectAPIError(.tokenInvalid, status: 401) {
          try await server.client(token: "not-a-token").send(API.me)
        }
        await expectAPIError(.invalidJSON, status: 400) {
          try await server.client(token: made.token).send(RawAPI.postFixes, body: Data("{".utf8))
        }
        await expectAPIError(.routeNotFound, status: 404) { try await server.client().send(RawAPI.unknownRoute) }
      }
    }
  }
}

/// ``Trait/inProcess`` on a suite sends its tests' servers in process; ``Trait/overSocket`` on one of its tests
/// keeps that one on the socket.
@Suite("The in-process trait", .inProcess)
struct ServerAccessTraitTests {
  @Test func aSuiteMarkedInProcessStartsItsServersInProcess() {
    #expect(ServerAccess.current == .router)
  }

  @Test(.overSocket) func aTestMarkedOverSocketKeepsTheSocket() {
    #expect(ServerAccess.current == .socket)
  }
}

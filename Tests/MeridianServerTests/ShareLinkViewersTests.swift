import MeridianStore
import Testing

@testable import MeridianServer

/// The count of pages open on share links across nodes: what a node says, and what it makes of what the others said.
@Suite("Share-link viewers across nodes")
struct ShareLinkViewersTests {
  @Test func aNodeSaysChangesAtOnceAndEverythingAgainWhileAnyPageIsOpen() {
    let viewers = ShareLinkViewers(node: "a")
    #expect(viewers.toSay([:], at: 0) == nil)
    #expect(viewers.toSay(["x": 2], at: 1_000) == ["x": 2])
    #expect(viewers.toSay(["x": 2], at: 2_000) == nil)
    #expect(viewers.toSay(["x": 1, "y": 1], at: 3_000) == ["x": 1, "y": 1])
    // Every count again once repeatEvery has passed since everything was said.
    #expect(viewers.toSay(["x": 1, "y": 1], at: 1_000 + ShareLinkViewers.repeatEvery) == ["x": 1, "y": 1])
    // A link whose pages all closed is said as 0, once.
    #expect(viewers.toSay(["y": 1], at: 12_000) == ["x": 0])
    #expect(viewers.toSay([:], at: 13_000) == ["y": 0])
    #expect(viewers.toSay([:], at: 60_000) == nil)
  }

  @Test func theOtherNodesCountsAddUpUntilTheyAreNotSaidAgain() {
    let viewers = ShareLinkViewers(node: "a")
    viewers.heard(node: "b", counts: ["x": 2, "y": 1], at: 0)
    viewers.heard(node: "c", counts: ["x": 3], at: 10_000)
    // Its own signals, heard back from the log, are not counted twice.
    viewers.heard(node: "a", counts: ["x": 50], at: 10_000)
    #expect(viewers.elsewhere(["x", "y", "z"], at: 10_000) == ["x": 5, "y": 1])
    viewers.heard(node: "b", counts: ["y": 0], at: 20_000)
    #expect(viewers.elsewhere(["x", "y"], at: 20_000) == ["x": 5])
    // Node b stopped saying its count of x: forgotten lifetime after it was last said.
    #expect(viewers.elsewhere(["x"], at: ShareLinkViewers.lifetime) == ["x": 3])
    #expect(viewers.elsewhere(["x"], at: 10_000 + ShareLinkViewers.lifetime).isEmpty)
  }

  @Test func manyLinksAreSplitIntoSignalsUnderTheNotifyLimit() {
    let viewers = ShareLinkViewers(node: "a")
    let counts = Dictionary(
      uniqueKeysWithValues: (0..<1_000).map { ("link-\($0)-" + String(repeating: "x", count: 20), $0) })
    let batches = viewers.batches(counts)
    #expect(batches.count > 1)
    #expect(batches.reduce(into: [String: Int]()) { $0.merge($1) { a, _ in a } } == counts)
    for batch in batches {
      #expect(LiveSignal.shareViewers(node: viewers.node, counts: batch).text.utf8.count < 7_900)
    }
  }
}

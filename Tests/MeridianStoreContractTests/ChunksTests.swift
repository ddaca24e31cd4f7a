import MeridianStore
import Testing

@Suite("Chunks of a collection")
struct ChunksTests {
  @Test func everyElementOnceInOrderAndNoChunkLongerThanAsked() {
    #expect([Int]().chunks(of: 3).isEmpty)
    #expect(Array(1...7).chunks(of: 3).map(Array.init) == [[1, 2, 3], [4, 5, 6], [7]])
    #expect(Array(1...6).chunks(of: 3).map(Array.init) == [[1, 2, 3], [4, 5, 6]])
    #expect(Array(1...2).chunks(of: 1_000).map(Array.init) == [[1, 2]])
    // Slices keep their base's indices: a chunk of a slice reads the right elements.
    #expect(Array(1...10)[4...].chunks(of: 4).map(Array.init) == [[5, 6, 7, 8], [9, 10]])
  }
}

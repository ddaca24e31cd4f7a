import Foundation
import NetworkingKit
import NetworkingKitTestSupport
import Testing

/// The streaming inflater: any cut of the input gives the same output, concatenated members are read, and corrupt,
/// truncated and oversized input fail without holding the output.
@Suite("GzipInflater")
struct GzipInflaterTests {
  /// 1 MiB of text-like bytes that compress well but not trivially.
  static let original: Data = {
    var generator = SystemRandomNumberGenerator()
    let words = (0..<200).map { _ in
      String((0..<Int.random(in: 2...9, using: &generator)).map { _ in "abcdefgh".randomElement()! })
    }
    var text = ""
    while text.utf8.count < 1 << 20 { text += words.randomElement(using: &generator)! + " " }
    return Data(text.utf8)
  }()

  static func inflate(_ compressed: Data, chunk: Int, limit: Int = .max) throws -> Data {
    let inflater = try GzipInflater(limit: limit)
    var output = Data()
    var start = 0
    while start < compressed.count {
      let end = min(start + chunk, compressed.count)
      try inflater.feed(compressed[start..<end]) { output.append(contentsOf: $0) }
      start = end
    }
    try inflater.finish()
    return output
  }

  @Test(arguments: [1, 7, 4_096, 1 << 22])
  func anyCutGivesTheOriginal(_ chunk: Int) throws {
    let compressed = try Gzip.compress(Self.original)
    #expect(compressed.count < Self.original.count / 2)
    let inflated = try Self.inflate(compressed, chunk: chunk)
    #expect(inflated == Self.original)
  }

  @Test func concatenatedMembersAreReadInTurn() throws {
    let first = Data("one, ".utf8)
    let second = Data("two".utf8)
    let joined = try Gzip.compress(first) + Gzip.compress(second)
    #expect(try Self.inflate(joined, chunk: 5) == first + second)
  }

  @Test func truncatedCorruptAndOversizedInputFail() throws {
    let compressed = try Gzip.compress(Self.original)
    #expect(throws: Gzip.Failure.self) { try Self.inflate(compressed.prefix(compressed.count - 9), chunk: 4_096) }
    #expect(throws: Gzip.Failure.self) { try Self.inflate(Data("not gzip at all".utf8), chunk: 4) }
    var damaged = compressed
    damaged[damaged.count / 2] ^= 0xFF
    #expect(throws: Gzip.Failure.self) { try Self.inflate(damaged, chunk: 4_096) }

    // A bomb of 64 MiB stops at the limit, having handed on at most the limit in pieces of at most 64 KiB.
    let bomb = Data(GzipBomb.make(megabytes: 64))
    let inflater = try GzipInflater(limit: 1 << 20)
    var largest = 0
    var total = 0
    let error = #expect(throws: Gzip.Failure.self) {
      try inflater.feed(bomb) { piece in
        largest = max(largest, piece.count)
        total += piece.count
      }
    }
    #expect(error == .limitExceeded(limit: 1 << 20))
    #expect(total <= 1 << 20 && largest <= 64 * 1024 && inflater.produced == total)
  }
}

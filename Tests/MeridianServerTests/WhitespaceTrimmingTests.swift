import Foundation
import MeridianStore
import MeridianStoreSQLite
import Testing

@testable import MeridianServer

/// The server's fast trim gives exactly what `trimmingCharacters(in: .whitespaces)` gives.
@Suite struct WhitespaceTrimmingTests {
  @Test func agreesWithFoundation() {
    let samples = [
      "", " ", "\t", "device-1", " device-1", "device-1 ", "\tdevice 1\t", "\u{00A0}id\u{3000}", "id\u{2003}",
      "\nid\n", "\n", "é", " é ", "👩‍💻", " 👩‍💻", "a\u{0301}", "\u{0301}", "x\u{200B}", "~", "\u{7F}",
    ]
    for sample in samples {
      #expect(
        sample.trimmedOfWhitespace == sample.trimmingCharacters(in: .whitespaces), "\(Array(sample.unicodeScalars))")
    }
  }
}

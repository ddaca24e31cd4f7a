import Foundation
import Testing

@testable import DomainKit

/// Inputs that crashed, hung or leaked a reader (found by hand or by the fuzzers in `Tools/fuzz/`). Each must now be
/// refused with a `FormatError` naming the line, or read, within a moment.
@Suite struct FuzzRegressionTests {
  func gpxError(_ bytes: [UInt8]) -> FormatError? {
    do {
      _ = try GPX.readWithSkipped(data: Data(bytes))
      return nil
    } catch {
      return error as? FormatError
    }
  }

  /// Foundation's `XMLParser` on Linux trapped on these (SIGILL: a force unwrap of a name it could not decode, and
  /// SIGSEGV: a processing instruction's missing data read as a C string).
  @Test func gpxInputsThatCrashedXMLParser() {
    let comment = Array(#"<gpx version="1.1"><!-- "#.utf8) + [0xFF] + Array(" --></gpx>".utf8)
    #expect(comment.count == 35)
    #expect(gpxError(comment)?.message.hasPrefix("malformed XML") == true)
    #expect(gpxError(comment)?.line == 1)
    #expect(gpxError([0x3C, 0xEF, 0x20, 0x20, 0x20]) != nil)
    #expect(gpxError(Array("<gpx>\n<".utf8) + [0xFF] + Array("a/></gpx>".utf8))?.line == 2)
    let attribute = Array("<gpx version=\"1.1\">\n<wpt ".utf8) + [0xC3, 0x28] + Array("=\"1\"/></gpx>".utf8)
    #expect(gpxError(attribute)?.line == 2)
    #expect(gpxError(Array("<?m?>".utf8)) != nil)
    // A processing instruction without data inside a valid document is allowed and ignored.
    let pi =
      "<?xml version=\"1.0\"?><?m?><gpx><?n?><wpt lat=\"1\" lon=\"2\"><time>2024-01-01T00:00:00Z</time></wpt></gpx>"
    #expect(gpxError(Array(pi.utf8)) == nil)
  }

  /// libxml2 2.9.14 crashed (SIGSEGV in xmlSwitchToEncoding) switching to UCS-4 or EBCDIC; the reader now decides
  /// the encoding itself and refuses those (found by `Tools/fuzz/run gpx`, minimized to 4 bytes).
  @Test func gpxEncodingsThatCrashedLibxml2AreRefused() {
    #expect(gpxError([0x3C, 0x00, 0x00, 0x00])?.field == "encoding")
    #expect(gpxError([0x00, 0x00, 0x00, 0x3C])?.field == "encoding")
    #expect(gpxError([0x4C, 0x6F, 0xA7, 0x94, 0x40])?.message.contains("EBCDIC") == true)
    let ebcdic = "<?xml version='1.0' encoding='EBCDIC-US'?>\n<gpx/>"
    #expect(gpxError(Array(ebcdic.utf8))?.message.hasPrefix("the encoding 'EBCDIC-US' is not supported") == true)
    let utf7 = "<?xml version='1.0' encoding='UTF-7' standalone='yes' ?>\n<gpx version=\"1.1\"/>"
    #expect(gpxError(Array(utf7.utf8))?.line == 1)
  }

  @Test func gpxDTDEntitiesAreNeverExpandedNorLoaded() {
    let laughs = """
      <?xml version="1.0"?>
      <!DOCTYPE gpx [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
      <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>
      <gpx><wpt lat="1" lon="2"><name>&d;</name><time>2024-01-01T00:00:00Z</time></wpt></gpx>
      """
    #expect(gpxError(Array(laughs.utf8))?.line == 4)
    let external = """
      <?xml version="1.0"?>
      <!DOCTYPE gpx [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
      <gpx><wpt lat="1" lon="2"><name>&secret;</name><time>2024-01-01T00:00:00Z</time></wpt></gpx>
      """
    #expect(gpxError(Array(external.utf8)) != nil)
  }

  /// The JSON value builder copied an array on every append: a 20,000-point LineString (656 KB) took 7 s and a
  /// 32,000-element array in 64 KB about 10 s. Both are read in a moment now (`geojson.read.points_per_s` in
  /// domainkit-bench measures the rate on 1,000,000 points).
  @Test func longGeoJSONArraysAreRead() throws {
    let count = 20_000
    var fixes: [LocationFix] = []
    for index in 0..<count {
      fixes.append(try LocationFix(timestamp: Int64(index) * 1000, latitude: 50, longitude: 30 + Double(index) * 1e-6))
    }
    let line = GeoJSON.lineCollection([GPXTrack(segments: [fixes])])
    #expect(try GeoJSON.read(data: Data(line.utf8)).count == count)
    let array =
      #"{"type":"Feature","geometry":null,"properties":{"a":["# + String(repeating: "0,", count: 32_000) + "0]}}"
    #expect(array.utf8.count < 65_536)
    #expect(try GeoJSON.read(data: Data(array.utf8)).isEmpty)
  }

  /// XMLParser kept ~72 bytes per libxml2 error; a 64 KiB malformed file leaked ~3.4 MB per parse.
  @Test func malformedGPXDoesNotLeak() throws {
    #if os(Linux)
      var text = "<gpx version=\"1.1\">\n"
      while text.utf8.count < 65_536 { text += "<wpt lat=\"1\" lon=\"2\" lat=\"3\"/>&undefined;<a b='1' b='2'/>\n" }
      let bytes = Array(text.utf8)
      func residentBytes() throws -> Int {
        let statm = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return (Int(statm[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
      }
      for _ in 0..<20 { _ = gpxError(bytes) }
      let before = try residentBytes()
      for _ in 0..<200 { #expect(gpxError(bytes) != nil) }
      #expect(try residentBytes() - before < 32 << 20)
    #endif
  }
}

import DomainKit
import Foundation
import GeoKit
import RealtimeKit

/// One decoder under test: it must never trap, hang or blow up on any bytes, and the properties it checks (the
/// same result however the input is cut into chunks, what it writes reads back) must hold.
struct Harness: Sendable {
  /// The name given on the command line (and the corpus folder's name).
  let name: String
  /// Runs the decoder on one input.
  let run: @Sendable (UnsafeRawBufferPointer) -> Void

  static func named(_ name: String) -> Harness? { all.first { $0.name == name } }

  static let all: [Harness] = [
    Harness(name: "gpx") { bytes in _ = try? GPX.readWithSkipped(data: Data(bytes)) },
    Harness(name: "csv") { chunksDoNotMatter($0, CSVReader()) },
    Harness(name: "geojson") { chunksDoNotMatter($0, GeoJSONReader()) },
    Harness(name: "takeout") { chunksDoNotMatter($0, TakeoutReader()) },
    Harness(name: "google") { chunksDoNotMatter($0, GoogleTimelineReader(), summary: { "\($0.summary)" }) },
    Harness(name: "owntracks", run: ownTracks),
    Harness(name: "osmand", run: osmAnd),
    Harness(name: "realtime", run: realtime),
    Harness(name: "polyline", run: polyline),
    Harness(name: "geohash", run: geohash),
  ]
}

/// Traps with `message` when `condition` is false; libFuzzer saves the input.
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError(message()) }
}

/// What a streaming reader made of an input: the fixes (counted and hashed, so that two readings never hold all
/// their fixes at once), the skipped points, or the error.
struct Outcome: Equatable {
  var count = 0
  var digest = 0
  var skipped = SkippedRecords()
  var summary = ""
  var error: String?
}

/// Reads `bytes` whole, and cut in two where the first byte says: the same fixes and skipped points, or the same
/// error. (The fixes before an error may differ: a chunk's fixes are returned before a later chunk fails, and any
/// error refuses the file.) `summary` describes what else the reader counted, which must match too.
func chunksDoNotMatter<Reader: StreamingFixReader>(
  _ bytes: UnsafeRawBufferPointer, _ reader: Reader, summary: (Reader) -> String = { _ in "" }
) {
  func read(_ chunks: [UnsafeRawBufferPointer]) -> Outcome {
    var reader = reader
    var outcome = Outcome()
    var hasher = Hasher()
    func add(_ fixes: [LocationFix]) {
      outcome.count += fixes.count
      for fix in fixes { hasher.combine(fix) }
    }
    do {
      for chunk in chunks { add(try reader.feed(chunk)) }
      add(try reader.finish())
      outcome.skipped = reader.skipped
      outcome.summary = summary(reader)
    } catch {
      return Outcome(error: "\(error)")
    }
    outcome.digest = hasher.finalize()
    return outcome
  }
  let whole = read([bytes])
  guard let first = bytes.first else { return }
  let cut = Int(first) * bytes.count / 256
  let split = read([UnsafeRawBufferPointer(rebasing: bytes[..<cut]), UnsafeRawBufferPointer(rebasing: bytes[cut...])])
  check(
    whole == split,
    "read whole and in two at \(cut): \(whole.count) / \(split.count) fixes (same: \(whole.digest == split.digest)), "
      + "skipped \(whole.skipped) / \(split.skipped), summaries \(whole.summary) / \(split.summary), errors \(whole.error ?? "none") / \(split.error ?? "none")"
  )
}

/// OwnTracks messages: what decodes converts to fixes or says why not, and encodes and decodes back the same.
func ownTracks(_ bytes: UnsafeRawBufferPointer) {
  guard let messages = try? OwnTracks.decode(Data(bytes)) else { return }
  for case .location(let location) in messages { _ = try? location.fix() }
  guard let encoded = try? OwnTracks.encode(messages) else {
    return check(false, "decoded messages do not encode: \(messages)")
  }
  let again = try? OwnTracks.decode(encoded)
  check(again == messages, "round trip: \(messages) → \(String(decoding: encoded, as: UTF8.self)) → \(again as Any)")
}

/// OsmAnd / Traccar: the query string and the JSON body; a query the reader accepts is written back and read again.
func osmAnd(_ bytes: UnsafeRawBufferPointer) {
  _ = try? OsmAnd.parse(json: Data(bytes))
  let text = String(decoding: bytes, as: UTF8.self)
  guard let report = try? OsmAnd.parse(query: text, receivedAt: 1_700_000_000_000) else { return }
  let query = OsmAnd.query(deviceID: report.deviceID, fix: report.fix)
  do {
    _ = try OsmAnd.parse(query: query, receivedAt: 0)
  } catch {
    check(false, "\(text) was read, but what it writes back, \(query), is refused: \(error)")
  }
}

/// Realtime frames, client and server: what the codec writes it reads back, and after one round trip the frame is
/// stable. (The first round may change a payload number's case: 1e18 decodes as a double, is written as an
/// integer and reads back as one.)
func realtime(_ bytes: UnsafeRawBufferPointer) {
  let text = String(decoding: bytes, as: UTF8.self)
  func stable<Frame: Equatable>(
    _ name: String, _ decode: (String) throws -> Frame, _ encode: (Frame) -> String
  ) {
    guard let frame = try? decode(text) else { return }
    let once = encode(frame)
    guard let again = try? decode(once) else { return check(false, "\(name) \(text) → \(once), which is refused") }
    let twice = encode(again)
    check((try? decode(twice)) == again, "\(name) round trip: \(text) → \(once) → \(twice)")
  }
  stable("client frame", { try RealtimeCodec.decodeClientFrame($0, maxBytes: .max) }, RealtimeCodec.encode)
  stable("server frame", { try RealtimeCodec.decodeServerFrame($0, maxBytes: .max) }, RealtimeCodec.encode)
}

/// Encoded polylines at precisions 5 and 6: a line that decodes encodes and decodes back the same.
func polyline(_ bytes: UnsafeRawBufferPointer) {
  let text = String(decoding: bytes, as: UTF8.self)
  for precision in [5, 6] {
    guard let points = try? Polyline.decode(text, precision: precision) else { continue }
    let encoded = Polyline.encode(points, precision: precision)
    let again = try? Polyline.decode(encoded, precision: precision)
    check(again == points, "precision \(precision): \(text) → \(encoded)")
  }
}

/// Geohash strings: decode, validate, neighbours and the 64-bit cell; a cell that parses prints and parses back.
func geohash(_ bytes: UnsafeRawBufferPointer) {
  let text = String(decoding: bytes, as: UTF8.self)
  _ = try? Geohash.decode(text)
  _ = try? Geohash.validate(text)
  _ = try? Geohash.neighbors(of: text)
  guard let cell = try? GeohashCell(text) else { return }
  _ = cell.neighbors
  _ = cell.box
  if let string = cell.string {
    check((try? GeohashCell(string)) == cell, "\(text) → \(cell) → \(string)")
  }
}

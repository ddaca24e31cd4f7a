/// A point, row or feature that a reader skipped instead of refusing the file: it has no time, and a
/// ``LocationFix`` needs one (GPX makes `<time>` optional; CSV cells and GeoJSON properties can be empty).
public struct SkippedRecord: Sendable, Hashable, Codable {
  /// 1-based line where the record starts, when the format has lines.
  public var line: Int?
  /// Where in the document, when a line is not enough (a GeoJSON path such as `features[3]`).
  public var path: String?
  /// How many points it stood for (a GeoJSON `LineString` without times skips all its positions).
  public var points: Int
  /// Why it was skipped, for a person.
  public var reason: String

  /// A skipped record.
  public init(line: Int?, path: String? = nil, points: Int = 1, reason: String) {
    self.line = line
    self.path = path
    self.points = points
    self.reason = reason
  }
}

/// The points a reader skipped: how many, and the first ``examplesKept`` records with their lines, so that memory
/// stays bounded however many there are.
public struct SkippedRecords: Sendable, Hashable, Codable, CustomStringConvertible {
  /// How many skipped records are kept as examples.
  public static let examplesKept = 5

  /// The number of points skipped.
  public private(set) var count = 0
  /// The first skipped records, in document order (at most ``examplesKept``).
  public private(set) var examples: [SkippedRecord] = []

  /// No skipped points.
  public init() {}

  /// Whether nothing was skipped.
  public var isEmpty: Bool { count == 0 }

  /// The lines of the first skipped records.
  public var lines: [Int] { examples.compactMap(\.line) }

  /// Counts `record` and keeps it when it is one of the first few.
  public mutating func append(_ record: SkippedRecord) {
    count = count.addingReportingOverflow(max(record.points, 0)).overflow ? .max : count + max(record.points, 0)
    if examples.count < Self.examplesKept { examples.append(record) }
  }

  /// Adds another reader's skipped points (examples in order, up to ``examplesKept``).
  public mutating func append(contentsOf other: SkippedRecords) {
    count = count.addingReportingOverflow(other.count).overflow ? .max : count + other.count
    examples.append(contentsOf: other.examples.prefix(Self.examplesKept - examples.count))
  }

  /// `2 points without a time skipped (lines 33, 57)`; `…, first lines 33, 57, 80, 81, 90)` when there are more;
  /// empty when nothing was skipped.
  public var description: String {
    guard count > 0 else { return "" }
    var text = count == 1 ? "1 point without a time skipped" : "\(count) points without a time skipped"
    let lines = self.lines
    if !lines.isEmpty {
      let more = count > examples.reduce(0) { $0 + $1.points }
      text += " (\(more ? "first " : "")line\(lines.count == 1 ? "" : "s") "
      text += lines.map(String.init).joined(separator: ", ") + ")"
    } else if let path = examples.first?.path {
      text += " (\(path)\(count > 1 ? ", …" : ""))"
    }
    return text
  }
}

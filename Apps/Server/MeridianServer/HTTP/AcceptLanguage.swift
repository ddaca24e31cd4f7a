import Foundation

/// The language ranges of an `Accept-Language` header (RFC 9110 §12.5.4), most preferred first: by weight (`q=`,
/// 1 when absent or unreadable), equal weights in the header's order; `*` and ranges weighted `q=0` are left out.
///
/// ```swift
/// AcceptLanguage("de-DE,ru;q=0.8,en;q=0.7").ranges     // ["de-DE", "ru", "en"]
/// AcceptLanguage("uk-UA,en;q=0.5").best(of: ["en", "uk"])  // "uk"
/// ```
struct AcceptLanguage: Sendable, Equatable {
  /// The ranges as sent (`uk-UA`, `ru`), most preferred first.
  let ranges: [String]

  /// Parses `header`; nil or malformed text gives no ranges.
  init(_ header: String?) {
    var weighted: [(range: String, weight: Double, order: Int)] = []
    for (order, item) in (header ?? "").split(separator: ",").enumerated() {
      let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
      guard let range = parts.first, !range.isEmpty, range != "*" else { continue }
      let weight = parts.dropFirst().first { $0.lowercased().hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
      if weight > 0 { weighted.append((range, weight, order)) }
    }
    ranges = weighted.sorted { $0.weight != $1.weight ? $0.weight > $1.weight : $0.order < $1.order }.map(\.range)
  }

  /// The first of `offered` (language codes such as `uk`) that the most preferred range names, itself or by its
  /// primary subtag (`uk-UA` → `uk`), case-insensitively; nil when no range names one.
  func best(of offered: [String]) -> String? {
    for range in ranges {
      let tag = range.lowercased()
      let primary = String(tag.split(separator: "-").first ?? "")
      if let match = offered.first(where: { $0.lowercased() == tag }) ?? offered.first(where: { $0 == primary }) {
        return match
      }
    }
    return nil
  }
}

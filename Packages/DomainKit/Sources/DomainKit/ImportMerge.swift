/// Merging imported fixes into a history without overwriting or duplicating: a fix whose identity (device +
/// timestamp) is already known is skipped, the first occurrence wins.
public struct FixMerger: Sendable {
  private var seen: Set<FixID>
  /// Fixes accepted so far.
  public private(set) var accepted = 0
  /// Fixes skipped as duplicates so far.
  public private(set) var duplicates = 0

  /// A merger that already knows the identities of the stored fixes.
  public init(existing: some Sequence<FixID> = []) { seen = Set(existing) }

  /// Whether `fix` is new (and remembers it); false for a duplicate.
  public mutating func accept(_ fix: LocationFix) -> Bool {
    if seen.insert(fix.id).inserted {
      accepted += 1
      return true
    }
    duplicates += 1
    return false
  }

  /// The new fixes of `fixes`, in order.
  public mutating func merge(_ fixes: some Sequence<LocationFix>) -> [LocationFix] {
    fixes.filter { accept($0) }
  }
}

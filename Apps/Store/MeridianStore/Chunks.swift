extension Collection {
  /// The collection in consecutive slices of at most `size` elements, in order: what a statement that takes a bounded
  /// number of values (SQLite's `?` placeholders, one PostgreSQL array per round trip) is given, slice by slice.
  package func chunks(of size: Int) -> [SubSequence] {
    precondition(size > 0, "a chunk holds at least one element")
    var slices: [SubSequence] = []
    var start = startIndex
    while start != endIndex {
      let end = index(start, offsetBy: size, limitedBy: endIndex) ?? endIndex
      slices.append(self[start..<end])
      start = end
    }
    return slices
  }
}

/// The FIFO behind a queue that a task drains only while it holds something (``SendQueue``, ``RealtimeInbound``):
/// O(1) pops, and no storage kept once it is empty, so an idle connection holds no buffer. Not thread-safe; its owner
/// guards it with a lock.
struct DrainBuffer<Element> {
  /// Pending elements are `items[head...]`.
  private var items: [Element] = []
  private var head = 0

  /// The elements waiting.
  var count: Int { items.count - head }

  mutating func append(_ element: Element) { items.append(element) }

  /// The oldest element, or `nil` when none is left (the storage is released then).
  mutating func popFirst() -> Element? {
    guard head < items.count else {
      removeAll()
      return nil
    }
    let element = items[head]
    head += 1
    if head >= 64, head * 2 >= items.count {
      items.removeFirst(head)
      head = 0
    }
    return element
  }

  /// Drops everything and the storage.
  mutating func removeAll() {
    items = []
    head = 0
  }
}

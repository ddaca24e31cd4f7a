import Foundation
import Synchronization

/// How many pages are open on each share link across the nodes of a deployment (the owner's "who is looking"): each
/// node counts the sockets subscribed to `share:<link id>` on its own hub, and hears the other nodes' counts through
/// the live log (``LiveSignal/shareViewers(node:counts:)``). A node says its counts when they change and again every
/// ``repeatEvery`` ms while any page is open; what a node said is forgotten ``lifetime`` ms after it was last said (a
/// node that stopped can't say that its pages closed).
final class ShareLinkViewers: Sendable {
  /// This node's name in the signals: random, new with every start.
  let node: String
  /// How long a count heard from another node stays true without being said again, in milliseconds.
  static let lifetime: Int64 = 30_000
  /// How often a node says its counts again while any page is open, in milliseconds.
  static let repeatEvery: Int64 = 10_000

  private struct Heard {
    var count: Int
    var at: Int64
  }
  /// The other nodes' counts: node → link → count and when it was heard.
  private let others = Mutex([String: [String: Heard]]())
  /// What this node said last, and when it last said everything.
  private let said = Mutex((counts: [String: Int](), everythingAt: Int64?.none))

  /// A counter for a node named `node`.
  init(node: String = UUID().uuidString) {
    self.node = node
  }

  /// Notes the counts another node said at `now`; a count of 0 forgets the link. This node's own signals, heard back
  /// from the log, are ignored: its hub counts its pages.
  func heard(node: String, counts: [String: Int], at now: Int64) {
    guard node != self.node else { return }
    others.withLock { others in
      for (link, count) in counts {
        others[node, default: [:]][link] = count > 0 ? Heard(count: count, at: now) : nil
      }
    }
  }

  /// The other nodes' open pages on each of `links` at `now` (links with none are left out).
  func elsewhere(_ links: [String], at now: Int64) -> [String: Int] {
    let wanted = Set(links)
    return others.withLock { others in
      var counts: [String: Int] = [:]
      for (node, heard) in others {
        let fresh = heard.filter { now - $0.value.at < Self.lifetime }
        others[node] = fresh.isEmpty ? nil : fresh
        for (link, entry) in fresh where wanted.contains(link) { counts[link, default: 0] += entry.count }
      }
      return counts
    }
  }

  /// What this node should say at `now`, its hub counting `counts` (links with open pages): the links whose count
  /// changed since it last spoke (0 for those whose pages all closed), or every count again when ``repeatEvery`` has
  /// passed; nil when there is nothing to say. What is returned counts as said.
  func toSay(_ counts: [String: Int], at now: Int64) -> [String: Int]? {
    said.withLock { said in
      var changes = counts.filter { said.counts[$0.key] != $0.value }
      for link in said.counts.keys where counts[link] == nil { changes[link] = 0 }
      if !counts.isEmpty, said.everythingAt.map({ now - $0 >= Self.repeatEvery }) ?? true {
        said.everythingAt = now
        changes.merge(counts) { change, _ in change }
      }
      said.counts = counts
      return changes.isEmpty ? nil : changes
    }
  }

  /// `counts` split into batches whose signals stay under PostgreSQL's `NOTIFY` limit.
  func batches(_ counts: [String: Int]) -> [[String: Int]] {
    var batches: [[String: Int]] = [[:]]
    var size = 0
    for (link, count) in counts.sorted(by: { $0.key < $1.key }) {
      let entry = link.utf8.count + 12
      if size + entry > 7_000, !(batches.last ?? [:]).isEmpty {
        batches.append([:])
        size = 0
      }
      batches[batches.count - 1][link] = count
      size += entry
    }
    return batches.filter { !$0.isEmpty }
  }
}

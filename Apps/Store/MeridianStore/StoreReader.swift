import DomainKit

/// Who the store reads for, so that an engine reading from a replica that may lag (PostgreSQL's streaming replica)
/// keeps that person's own writes in view. The server sets it around a signed-in person's request; a read without it
/// (a job, an anonymous page) may see the replica's state.
public enum StoreReader {
  /// The signed-in person the current task reads for.
  @TaskLocal public static var user: UserID?
}

/// Writes whose effect the writer must see in their next reads, wherever the engine reads them from.
public protocol WriteFencing: Sendable {
  /// `user` just wrote (a request of theirs that changes something answered): until a replica has replayed it,
  /// their reads go where it is. An engine without replicas does nothing.
  func noteWrite(by user: UserID) async
  /// How many reads that may lag a replica and the primary served since the store opened; nil without a replica.
  var laggingReads: LaggingReads? { get }
}

/// Where the reads that may lag went (``WriteFencing/laggingReads``).
public struct LaggingReads: Sendable, Hashable {
  /// Served by the replica.
  public var replica: Int
  /// Served by the primary: the reader's own write not yet replayed, or the replica down.
  public var primary: Int

  /// Counts.
  public init(replica: Int, primary: Int) {
    self.replica = replica
    self.primary = primary
  }
}

extension WriteFencing {
  /// Nothing to do: every read sees every committed write.
  public func noteWrite(by user: UserID) async {}
  /// None: there is no replica.
  public var laggingReads: LaggingReads? { nil }
}

/// How large a group commit of fixes may grow: the rule both group-commit queues follow (the server's `FixWriter`
/// and the PostgreSQL store's own), so that a commit stays within its deadline however many uploads pile up.
public enum GroupCommitSize {
  /// The most fixes a group commit takes from its queue (one upload with more is committed alone). When the database
  /// slows down or comes back and every device sends its backlog at once, the queue grows while a commit runs, and
  /// the next commit took all of it (up to 512 uploads): 512 uploads of 1,000 fixes would be one transaction of
  /// 512,000 fixes, far past PostgreSQL's 5 s commit deadline (a statement of 10,000 took 1–4 s on the 2-core build
  /// machine under load) — failing every upload in it alike, whose retries would queue up the same way — or, on
  /// SQLite, seconds of the one writer.
  public static let maximumFixes = 5_000

  /// How many of the oldest `queued` one commit takes: at most `maximumCount`, and no more than hold
  /// `maximumFixes` fixes in all (`fixes` counts an element's) — but at least one when any is queued.
  public static func taken<Queued: Collection>(
    from queued: Queued, maximumCount: Int = .max, maximumFixes: Int = maximumFixes,
    fixes: (Queued.Element) -> Int
  ) -> Int {
    var (count, total) = (0, 0)
    for element in queued {
      let more = fixes(element)
      if count > 0 && (count >= maximumCount || total + more > maximumFixes) { break }
      (count, total) = (count + 1, total + more)
    }
    return count
  }
}

import Foundation

/// One of a poll's two options. Wire names: `text`, `imageUrl`.
public struct PollOption: Sendable, Hashable, Codable {
  /// The option's caption, 1…``maximumTextLength`` characters on one line.
  public var text: String
  /// The option's image.
  public var imageURL: String?

  /// An option.
  public init(text: String, imageURL: String? = nil) {
    self.text = text
    self.imageURL = imageURL
  }

  /// The longest caption.
  public static let maximumTextLength = 200
  /// The rule of a caption.
  public static let textRule = UserText.singleLine(maximumLength: maximumTextLength)

  private enum CodingKeys: String, CodingKey {
    case text
    case imageURL = "imageUrl"
  }
}

/// Which of the two options a vote is for. Wire values `0` and `1`.
public enum PollChoice: Int, Sendable, Hashable, Codable, CaseIterable {
  /// The first option.
  case first = 0
  /// The second option.
  case second = 1
}

/// Why a poll or vote was rejected.
public enum PollError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A text breaks ``UserText``'s rule: `field` is `title`, `description`, `options[0].text`, `options[1].text` or
  /// (a comment's) `text`.
  case invalidText(field: String, UserText.Problem)
  /// The user already voted in this poll.
  case alreadyVoted(UserID)
  /// The vote is for another poll than the ballot's.
  case wrongPoll(PollID)

  /// A sentence for the person writing the poll or voting.
  public var description: String {
    switch self {
    case .invalidText(let field, let problem): problem.message(field: field)
    case .alreadyVoted: "You have already voted in this poll."
    case .wrongPoll: "This vote belongs to another poll."
    }
  }
}

/// A two-option poll. Wire names: `id`, `authorId`, `title`, `description`, `options`, `createdAt` (UTC ms).
public struct Poll: Sendable, Hashable, Codable, Identifiable {
  /// Maximum title length.
  public static let maximumTitleLength = 255
  /// Maximum description length.
  public static let maximumDescriptionLength = 500
  /// The rule of a title.
  public static let titleRule = UserText.singleLine(maximumLength: maximumTitleLength)
  /// The rule of a description.
  public static let descriptionRule = UserText.multiLine(maximumLength: maximumDescriptionLength)

  /// The poll id.
  public var id: PollID
  /// The author.
  public var authorID: UserID
  /// Title, 1…255 characters.
  public var title: String
  /// Description, at most 500 characters.
  public var description: String
  /// Exactly two options.
  public var options: [PollOption]
  /// Creation time, UTC ms.
  public var createdAt: Int64

  /// A validated poll: title, description and captions trimmed, each following its ``UserText`` rule.
  /// - Throws: ``PollError/invalidText(field:_:)`` naming the first text that breaks its rule.
  public init(
    id: PollID, authorID: UserID, title: String, description: String = "", first: PollOption, second: PollOption,
    createdAt: Int64
  ) throws(PollError) {
    func validated(_ text: String, _ rule: UserText, _ field: String) throws(PollError) -> String {
      do { return try rule.validated(text) } catch { throw .invalidText(field: field, error) }
    }
    self.title = try validated(title, Self.titleRule, "title")
    self.description = try validated(description, Self.descriptionRule, "description")
    var options = [first, second]
    for index in options.indices {
      options[index].text = try validated(options[index].text, PollOption.textRule, "options[\(index)].text")
    }
    self.id = id
    self.authorID = authorID
    self.options = options
    self.createdAt = createdAt
  }

  /// A poll as a store read it back, not checked again: the rules hold for what is written, and a text stored
  /// under an older rule is still shown.
  public init(
    stored id: PollID, authorID: UserID, title: String, description: String, first: PollOption, second: PollOption,
    createdAt: Int64
  ) {
    self.id = id
    self.authorID = authorID
    self.title = title
    self.description = description
    self.options = [first, second]
    self.createdAt = createdAt
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case authorID = "authorId"
    case title, description, options, createdAt
  }

  /// Decodes a poll with the same validation as
  /// ``init(id:authorID:title:description:first:second:createdAt:)``: exactly two options, and every text
  /// following its rule.
  /// - Throws: `DecodingError.dataCorrupted` naming `title`, `description` or `options`.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    let options = try c.decode([PollOption].self, forKey: .options)
    guard options.count == 2 else {
      throw DecodingError.dataCorruptedError(
        forKey: .options, in: c, debugDescription: "options: a poll has exactly 2 options, not \(options.count)")
    }
    do {
      try self.init(
        id: c.decode(PollID.self, forKey: .id), authorID: c.decode(UserID.self, forKey: .authorID),
        title: c.decode(String.self, forKey: .title),
        description: c.decodeIfPresent(String.self, forKey: .description) ?? "", first: options[0],
        second: options[1], createdAt: c.decode(Int64.self, forKey: .createdAt))
    } catch let error as PollError {
      let key: CodingKeys =
        switch error {
        case .invalidText(field: "title", _): .title
        case .invalidText(field: "description", _): .description
        default: .options
        }
      throw DecodingError.dataCorruptedError(
        forKey: key, in: c, debugDescription: "\(key.stringValue): \(error.description)")
    }
  }
}

/// A vote. Wire names: `pollId`, `userId`, `choice` (0 or 1), `createdAt`.
public struct Vote: Sendable, Hashable, Codable {
  /// The poll.
  public var pollID: PollID
  /// The voter.
  public var userID: UserID
  /// The chosen option.
  public var choice: PollChoice
  /// Time of voting, UTC ms.
  public var createdAt: Int64

  /// A vote.
  public init(pollID: PollID, userID: UserID, choice: PollChoice, createdAt: Int64) {
    self.pollID = pollID
    self.userID = userID
    self.choice = choice
    self.createdAt = createdAt
  }

  private enum CodingKeys: String, CodingKey {
    case pollID = "pollId"
    case userID = "userId"
    case choice, createdAt
  }
}

/// A comment on a poll. Wire names: `id`, `pollId`, `authorId`, `text`, `createdAt`.
public struct PollComment: Sendable, Hashable, Codable, Identifiable {
  /// The comment id.
  public var id: CommentID
  /// The poll.
  public var pollID: PollID
  /// The author.
  public var authorID: UserID
  /// 1…``maximumTextLength`` characters, on several lines.
  public var text: String
  /// UTC ms.
  public var createdAt: Int64

  /// The longest comment.
  public static let maximumTextLength = 1_000
  /// The rule of a comment's text.
  public static let textRule = UserText.multiLine(maximumLength: maximumTextLength, allowsEmpty: false)

  /// A validated comment, its text trimmed.
  /// - Throws: ``PollError/invalidText(field:_:)`` naming `text`.
  public init(id: CommentID, pollID: PollID, authorID: UserID, text: String, createdAt: Int64) throws(PollError) {
    do {
      self.text = try Self.textRule.validated(text)
    } catch {
      throw .invalidText(field: "text", error)
    }
    self.id = id
    self.pollID = pollID
    self.authorID = authorID
    self.createdAt = createdAt
  }

  /// A comment as a store read it back, not checked again (see ``Poll/init(stored:authorID:title:description:first:second:createdAt:)``).
  public init(stored id: CommentID, pollID: PollID, authorID: UserID, text: String, createdAt: Int64) {
    self.id = id
    self.pollID = pollID
    self.authorID = authorID
    self.text = text
    self.createdAt = createdAt
  }

  private enum CodingKeys: String, CodingKey {
    case id
    case pollID = "pollId"
    case authorID = "authorId"
    case text, createdAt
  }
}

/// A poll's results: counts and whole percentages. Wire names: `counts`, `percentages`, `total`.
public struct PollResults: Sendable, Hashable, Codable {
  /// Votes per option.
  public var counts: [Int]
  /// Whole percentages per option; they sum to 100 when there are votes, and are all 0 when there are none.
  public var percentages: [Int]
  /// Total votes.
  public var total: Int

  /// Results for `counts` (negative counts are treated as 0).
  public init(counts: [Int]) {
    let counts = counts.map { max(0, $0) }
    self.counts = counts
    self.total = counts.reduce(0) { $0.addingReportingOverflow($1).overflow ? .max : $0 + $1 }
    self.percentages = Self.largestRemainder(counts)
  }

  /// Whole percentages by the largest-remainder (Hamilton) method: floor each share, then give the missing
  /// points to the largest remainders (ties to the earlier option). No votes → all 0, never NaN.
  /// Negative counts count as 0; counts whose sum would overflow are scaled down first (never traps).
  public static func largestRemainder(_ counts: [Int]) -> [Int] {
    var counts = counts.map { max(0, $0) }
    var (total, overflow) = (0, false)
    for count in counts where !overflow { (total, overflow) = total.addingReportingOverflow(count) }
    if overflow {
      counts = counts.map { $0 / Swift.max(1, counts.count) }
      total = counts.reduce(0, +)
    }
    guard total > 0 else { return counts.map { _ in 0 } }
    // count × 100 in double width: exact for any count ≤ total.
    let shares = counts.map { total.dividingFullWidth($0.multipliedFullWidth(by: 100)) }
    var result = shares.map(\.quotient)
    let remainders = shares.map(\.remainder)
    var missing = 100 - result.reduce(0, +)
    let order = remainders.indices.sorted {
      remainders[$0] != remainders[$1] ? remainders[$0] > remainders[$1] : $0 < $1
    }
    for index in order where missing > 0 {
      result[index] += 1
      missing -= 1
    }
    return result
  }
}

/// The votes of one poll, enforcing one vote per user.
public struct Ballot: Sendable, Hashable, Codable {
  /// The poll.
  public var pollID: PollID
  /// Every vote, by voter.
  public private(set) var votes: [UserID: PollChoice]

  /// An empty ballot.
  public init(pollID: PollID) {
    self.pollID = pollID
    self.votes = [:]
  }

  /// Records a vote.
  /// - Throws: ``PollError/wrongPoll(_:)`` when the vote is for another poll, ``PollError/alreadyVoted(_:)``
  ///   when the user has voted in this poll before.
  public mutating func cast(_ vote: Vote) throws(PollError) {
    guard vote.pollID == pollID else { throw .wrongPoll(vote.pollID) }
    guard votes[vote.userID] == nil else { throw .alreadyVoted(vote.userID) }
    votes[vote.userID] = vote.choice
  }

  /// The current results.
  public var results: PollResults {
    PollResults(counts: PollChoice.allCases.map { choice in votes.values.count { $0 == choice } })
  }

  private enum CodingKeys: String, CodingKey {
    case pollID = "pollId"
    case votes
  }
}

import Foundation

/// One of a poll's two options. Wire names: `text`, `imageUrl`.
public struct PollOption: Sendable, Hashable, Codable {
  /// The option's label.
  public var text: String
  /// The option's image.
  public var imageURL: String?

  /// An option.
  public init(text: String, imageURL: String? = nil) {
    self.text = text
    self.imageURL = imageURL
  }

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
  /// The title is empty or longer than 255 characters.
  case invalidTitle(length: Int)
  /// The description is longer than 500 characters.
  case descriptionTooLong(length: Int)
  /// An option's text is empty.
  case emptyOption(PollChoice)
  /// The user already voted in this poll.
  case alreadyVoted(UserID)
  /// A comment is empty or longer than 1000 characters.
  case invalidComment
  /// The vote is for another poll than the ballot's.
  case wrongPoll(PollID)

  /// A sentence for the person writing the poll or voting.
  public var description: String {
    switch self {
    case .invalidTitle(let length):
      length == 0 ? "Give your poll a title." : "The title can have at most 255 characters (it has \(length))."
    case .descriptionTooLong(let length): "The description can have at most 500 characters (it has \(length))."
    case .emptyOption(let choice): "Option \(choice.rawValue + 1) needs some text."
    case .alreadyVoted: "You have already voted in this poll."
    case .invalidComment: "A comment needs between 1 and 1000 characters."
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

  /// A validated poll.
  /// - Throws: ``PollError`` for a missing/long title, long description or empty option.
  public init(
    id: PollID, authorID: UserID, title: String, description: String = "", first: PollOption, second: PollOption,
    createdAt: Int64
  ) throws(PollError) {
    let title = title.trimmingCharacters(in: .whitespacesAndNewlines)
    guard (1...Self.maximumTitleLength).contains(title.count) else { throw .invalidTitle(length: title.count) }
    guard description.count <= Self.maximumDescriptionLength else {
      throw .descriptionTooLong(length: description.count)
    }
    guard !first.text.trimmingCharacters(in: .whitespaces).isEmpty else { throw .emptyOption(.first) }
    guard !second.text.trimmingCharacters(in: .whitespaces).isEmpty else { throw .emptyOption(.second) }
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
  /// ``init(id:authorID:title:description:first:second:createdAt:)``: exactly two non-empty options, a title of
  /// 1…255 characters and a description of at most 500.
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
        case .invalidTitle: .title
        case .descriptionTooLong: .description
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
  /// 1…1000 characters.
  public var text: String
  /// UTC ms.
  public var createdAt: Int64

  /// A validated comment.
  /// - Throws: ``PollError/invalidComment``.
  public init(id: CommentID, pollID: PollID, authorID: UserID, text: String, createdAt: Int64) throws(PollError) {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard (1...1000).contains(trimmed.count) else { throw .invalidComment }
    self.id = id
    self.pollID = pollID
    self.authorID = authorID
    self.text = trimmed
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

import DomainKit
import Foundation
import NetworkingKit

extension API {
  // MARK: The applicant's side of the places directory

  /// `GET /v1/me/achievements`: the caller's achievements (study, sport, creative), newest first.
  public static let achievements = Endpoint<Void, NoBody, AchievementList>(.get, "/v1/me/achievements")
  /// `POST /v1/me/achievements {kind, title, description?, year?}` → 201 with the stored achievement; 422
  /// `invalid_achievement` with a per-field error, 409 `quota_exceeded` past ``Achievement/maximumCount``.
  public static let addAchievement = Endpoint<Void, NewAchievement, Achievement>(.post, "/v1/me/achievements")
  /// `DELETE /v1/me/achievements/{id}` → 204, or 404 when the caller has no such achievement.
  public static let deleteAchievement = Endpoint<AchievementRef, NoBody, NoContent>(
    .delete, "/v1/me/achievements/\(\.id, "id")", body: .none, response: .empty)
  /// `GET /v1/me/questionnaire`: the caller's questionnaire; 404 when they haven't filled it in.
  public static let questionnaire = Endpoint<Void, NoBody, Questionnaire>(.get, "/v1/me/questionnaire")
  /// `PUT /v1/me/questionnaire` → the stored questionnaire (the whole of it is replaced); 422
  /// `invalid_questionnaire` with one error per bad or missing required field, and nothing stored.
  public static let saveQuestionnaire = Endpoint<Void, Questionnaire, Questionnaire>(.put, "/v1/me/questionnaire")
  /// `GET /v1/me/questionnaire/programmes?q=&city=&sort=&cursor=&limit=`: programmes the caller's questionnaire
  /// can enter — a `passingScore` at most the total of its exam scores and a `form` equal to its preferred form —
  /// with the filters, orders and paging of `GET /v1/places`; 404 without a questionnaire.
  public static let questionnaireProgrammes = Endpoint<PlacesParameters, NoBody, PlaceList>(
    .get, "/v1/me/questionnaire/programmes", query: { $0.queryItems })

  /// The applicant's endpoints.
  static let applicantEndpoints: [EndpointDescriptor] = [
    achievements.descriptor, addAchievement.descriptor, deleteAchievement.descriptor, questionnaire.descriptor,
    saveQuestionnaire.descriptor, questionnaireProgrammes.descriptor,
  ]
}

/// What an achievement was in.
public enum AchievementKind: String, Sendable, Hashable, Codable, CaseIterable {
  /// Olympiads, contests, certificates.
  case study
  /// Competitions, ranks.
  case sport
  /// Music, art, writing, festivals.
  case creative
}

/// One of a person's achievements. Wire names: `id`, `kind`, `title`, `description`, `year`, `createdAt`.
public struct Achievement: Sendable, Hashable, Codable {
  /// The id the server gave it.
  public var id: String
  /// What it was in.
  public var kind: AchievementKind
  /// What it was ("Regional physics olympiad, 2nd place"), 1…200 characters.
  public var title: String
  /// More about it, at most 2,000 characters.
  public var description: String
  /// The year it was achieved.
  public var year: Int?
  /// When it was added (UTC milliseconds).
  public var createdAt: Int64

  /// The most achievements one person keeps.
  public static let maximumCount = 100
  /// The longest title accepted, in characters.
  public static let maximumTitleLength = 200
  /// The longest description accepted, in characters.
  public static let maximumDescriptionLength = 2_000
  /// The years accepted.
  public static let years = 1900...2100
  /// The rule of a title.
  public static let titleRule = UserText.singleLine(maximumLength: maximumTitleLength)
  /// The rule of a description.
  public static let descriptionRule = UserText.multiLine(maximumLength: maximumDescriptionLength)

  /// An achievement.
  public init(
    id: String, kind: AchievementKind, title: String, description: String = "", year: Int? = nil, createdAt: Int64
  ) {
    self.id = id
    self.kind = kind
    self.title = title
    self.description = description
    self.year = year
    self.createdAt = createdAt
  }
}

/// `POST /v1/me/achievements` body. `kind` is `study`, `sport` or `creative`.
public struct NewAchievement: Sendable, Hashable, Codable {
  /// `study`, `sport` or `creative`.
  public var kind: String?
  /// 1…200 characters.
  public var title: String?
  /// At most 2,000 characters.
  public var description: String?
  /// 1900…2100.
  public var year: Int?

  /// A body.
  public init(kind: String?, title: String?, description: String? = nil, year: Int? = nil) {
    self.kind = kind
    self.title = title
    self.description = description
    self.year = year
  }

  /// The achievement this body describes (title and description trimmed), or one error per bad field.
  public func validated(id: String, now: Int64) -> Result<Achievement, FieldErrors> {
    var errors: [APIFieldError] = []
    let kind = self.kind.flatMap(AchievementKind.init(rawValue:))
    if self.kind == nil {
      errors.append(.required("kind"))
    } else if kind == nil {
      errors.append(.invalid("kind", "must be one of study, sport, creative"))
    }
    let title = (self.title ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    if let error = Achievement.titleRule.fieldError(title, field: "title") { errors.append(error) }
    let description = (self.description ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    if let error = Achievement.descriptionRule.fieldError(description, field: "description") {
      errors.append(error)
    }
    if let year, !Achievement.years.contains(year) {
      errors.append(
        .invalid("year", "must be between \(Achievement.years.lowerBound) and \(Achievement.years.upperBound)"))
    }
    guard let kind, errors.isEmpty else { return .failure(FieldErrors(errors)) }
    return .success(
      Achievement(id: id, kind: kind, title: title, description: description, year: year, createdAt: now))
  }
}

/// `GET /v1/me/achievements` answer. Wire name: `items` (newest first).
public struct AchievementList: Sendable, Hashable, Codable {
  /// The achievements, newest first.
  public var items: [Achievement]
  /// A list.
  public init(items: [Achievement]) { self.items = items }
}

/// An achievement in the path.
public struct AchievementRef: RouteParameters, Hashable {
  /// The achievement's id.
  public var id: String
  /// A reference.
  public init(id: String) { self.id = id }
  /// Reads `id`.
  public init(path: [String: String], query: [String: [String]]) throws(APIError) {
    id = try path.required("id")
  }
}

/// A form of study, the value of a programme's `form` attribute.
public enum StudyForm: String, Sendable, Hashable, Codable, CaseIterable {
  /// Очная.
  case fullTime = "full-time"
  /// Очно-заочная (evenings, weekends).
  case partTime = "part-time"
  /// Заочная.
  case extramural
  /// Online.
  case distance
}

/// An applicant's questionnaire. Every field is required except `phone`; `PUT` checks them all and answers 422
/// `invalid_questionnaire` with one error per field. Wire names: `fullName` (1…200 characters), `birthDate`
/// (`YYYY-MM-DD`, 10…100 years before today), `city` (1…100 characters), `graduationYear` (the school's, 1950…2100),
/// `examScores` (1…10 subjects, each 0…100: the state exam's), `preferredForm` (`full-time`, `part-time`,
/// `extramural`, `distance`), `phone` (optional), `updatedAt` (set by the server).
public struct Questionnaire: Sendable, Hashable, Codable {
  /// Full name.
  public var fullName: String?
  /// `YYYY-MM-DD`.
  public var birthDate: String?
  /// Home city.
  public var city: String?
  /// The year the applicant leaves (or left) school.
  public var graduationYear: Int?
  /// Exam score per subject (`"math": 82`), 0…100 each.
  public var examScores: [String: Int]?
  /// The form of study wanted.
  public var preferredForm: String?
  /// A phone number (optional).
  public var phone: String?
  /// When it was last stored (UTC milliseconds); set by the server.
  public var updatedAt: Int64?

  /// The most subjects a questionnaire lists.
  public static let maximumSubjects = 10

  /// A questionnaire.
  public init(
    fullName: String? = nil, birthDate: String? = nil, city: String? = nil, graduationYear: Int? = nil,
    examScores: [String: Int]? = nil, preferredForm: String? = nil, phone: String? = nil, updatedAt: Int64? = nil
  ) {
    self.fullName = fullName
    self.birthDate = birthDate
    self.city = city
    self.graduationYear = graduationYear
    self.examScores = examScores
    self.preferredForm = preferredForm
    self.phone = phone
    self.updatedAt = updatedAt
  }

  /// The total of the exam scores: what programmes' passing scores are compared with.
  public var totalScore: Int { (examScores ?? [:]).values.reduce(0, +) }

  /// The preferred form, when it is one of ``StudyForm``.
  public var studyForm: StudyForm? { preferredForm.flatMap(StudyForm.init(rawValue:)) }

  /// The questionnaire with its texts trimmed, or one error per missing or bad field. `now` (UTC milliseconds)
  /// bounds the birth date.
  public func validated(now: Int64) -> Result<Questionnaire, FieldErrors> {
    var errors: [APIFieldError] = []
    var result = self
    func text(_ value: String?, _ field: String, maximum: Int) -> String? {
      let trimmed = (value ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
      if let error = UserText.singleLine(maximumLength: maximum).fieldError(trimmed, field: field) {
        errors.append(error)
      }
      return trimmed
    }
    result.fullName = text(fullName, "fullName", maximum: 200)
    if let birthDate {
      if let age = Self.age(birthDate: birthDate, now: now) {
        if !(10...100).contains(age) { errors.append(.invalid("birthDate", "must be 10 to 100 years ago")) }
      } else {
        errors.append(.invalid("birthDate", "must be a date as YYYY-MM-DD"))
      }
    } else {
      errors.append(.required("birthDate"))
    }
    result.city = text(city, "city", maximum: 100)
    if let graduationYear {
      if !(1950...2100).contains(graduationYear) {
        errors.append(.invalid("graduationYear", "must be between 1950 and 2100"))
      }
    } else {
      errors.append(.required("graduationYear"))
    }
    if let examScores, !examScores.isEmpty {
      if examScores.count > Self.maximumSubjects {
        errors.append(.invalid("examScores", "must list at most \(Self.maximumSubjects) subjects"))
      }
      for (subject, score) in examScores.sorted(by: { $0.key < $1.key }) {
        let name = subject.trimmingCharacters(in: .whitespaces)
        if UserText.singleLine(maximumLength: 64).fieldError(name, field: "examScores") != nil {
          errors.append(.invalid("examScores", "subject names must be 1…64 characters on one line"))
        } else if !(0...100).contains(score) {
          errors.append(.invalid("examScores.\(echo(name))", "must be between 0 and 100"))
        }
      }
    } else {
      errors.append(.required("examScores"))
    }
    if preferredForm == nil {
      errors.append(.required("preferredForm"))
    } else if studyForm == nil {
      errors.append(
        .invalid("preferredForm", "must be one of \(StudyForm.allCases.map(\.rawValue).joined(separator: ", "))"))
    }
    if let phone {
      let trimmed = phone.trimmingCharacters(in: .whitespaces)
      if trimmed.count > 32 || trimmed.contains(where: { !($0.isNumber || "+-() ".contains($0)) }) {
        errors.append(.invalid("phone", "must be at most 32 digits, spaces, '+', '-' and parentheses"))
      }
      result.phone = trimmed.isEmpty ? nil : trimmed
    }
    guard errors.isEmpty else { return .failure(FieldErrors(errors)) }
    return .success(result)
  }

  /// Whole years from `birthDate` (`YYYY-MM-DD`, a real date) to `now`, or nil when it is no such date.
  static func age(birthDate: String, now: Int64) -> Int? {
    let parts = birthDate.split(separator: "-", omittingEmptySubsequences: false)
    guard birthDate.count == 10, parts.count == 3, let year = Int(parts[0]), let month = Int(parts[1]),
      let day = Int(parts[2])
    else { return nil }
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
    guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)) else { return nil }
    let read = calendar.dateComponents([.year, .month, .day], from: date)
    guard read.year == year, read.month == month, read.day == day else { return nil }
    return calendar.dateComponents([.year], from: date, to: Date(timeIntervalSince1970: Double(now) / 1000)).year
  }
}

/// Errors for several fields of one body, thrown as 422 with them in the envelope's `fields`.
public struct FieldErrors: Error, Sendable, Hashable {
  /// One per bad field.
  public var errors: [APIFieldError]
  /// Errors.
  public init(_ errors: [APIFieldError]) { self.errors = errors }

  /// A 422 with `code`, a message naming every field, and the fields.
  public func apiError(_ code: APIErrorCode, _ subject: String) -> APIError {
    var error = APIError(
      status: 422, code: code,
      message: "The \(subject) can't be stored: "
        + errors.map { "\($0.field) \($0.message)" }.joined(separator: "; ") + ".")
    error.fields = errors
    return error
  }
}

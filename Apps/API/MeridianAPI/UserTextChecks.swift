import DomainKit

extension UserText {
  /// `text`, the body field `field`, trimmed once it follows this rule.
  /// - Throws: ``APIError`` with `status` and `code` (400 `invalid_request` unless the field has its own code) whose
  ///   message names `field` and what is wrong with it.
  public func checked(
    _ text: String, field: String, status: Int = 400, code: APIErrorCode = .invalidRequest
  ) throws(APIError) -> String {
    do {
      return try validated(text)
    } catch {
      throw APIError(status: status, code: code, message: error.message(field: field))
    }
  }

  /// The field error of `text`, the body field `field`, or nil when it follows this rule (for bodies that report
  /// every bad field at once).
  public func fieldError(_ text: String, field: String) -> APIFieldError? {
    do {
      _ = try validated(text)
      return nil
    } catch .empty {
      return .required(field)
    } catch {
      return .invalid(field, error.description)
    }
  }
}

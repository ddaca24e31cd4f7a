import ArgumentParser
import DomainKit
import Foundation
import MeridianAPI
import MeridianSecrets
import MeridianStore

struct UsersCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "users", abstract: "List, show, create, disable, enable and delete accounts.",
    subcommands: [List.self, Show.self, Create.self, Disable.self, Enable.self, Delete.self])

  static func table(_ users: [UserSummary]) -> String {
    var table = TextTable(["id", "created (UTC)", "state", "name", "credentials", "devices", "fixes", "last fix"])
    for user in users {
      table.add([
        user.id, AdminFormat.time(user.createdAt), user.disabled ? "disabled" : "active", user.name ?? "-",
        user.credentials.joined(separator: " "), "\(user.devices)", "\(user.fixes)", AdminFormat.time(user.lastFix),
      ])
    }
    return table.text
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List accounts, oldest first.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "At most this many users.")
    var limit = 100

    @Option(help: "Skip this many users.")
    var offset = 0

    func run() async throws {
      guard limit > 0, offset >= 0 else {
        throw AdminError.usage("--limit must be positive and --offset not negative.")
      }
      let users = try await options.withBackend { try await $0.users(limit: limit, offset: offset) }
      try options.emit(users) { users.isEmpty ? "No users." : UsersCommand.table(users) }
    }
  }

  struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one account: credentials, devices, groups.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "User id, email address or phone number.")
    var user: String

    func run() async throws {
      let detail = try await options.withBackend { try await $0.user(user) }
      try options.emit(detail) {
        var devices = TextTable(["device", "registered (UTC)", "fixes", "last fix"])
        for device in detail.devices {
          devices.add([
            device.id, AdminFormat.time(device.createdAt), "\(device.fixes)", AdminFormat.time(device.lastFix),
          ])
        }
        return UsersCommand.table([detail.user]) + "\n\nactive tokens: \(detail.activeTokens)\n\n"
          + (detail.devices.isEmpty ? "No devices." : devices.text) + "\n\n" + GroupsCommand.table(detail.groups)
      }
    }
  }

  struct Create: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Create an account signing in by email (password on standard input) or phone (SMS codes).")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Email address (the password is read from standard input).")
    var email: String?

    @Option(help: "Phone number in international format, e.g. +380501234567.")
    var phone: String?

    @Option(help: "Full name for the profile.")
    var name: String?

    @Option(help: "bcrypt cost 4…31 (as MERIDIAN_BCRYPT_COST).")
    var bcryptCost = 12

    func validate() throws {
      if (email == nil) == (phone == nil) { throw ValidationError("Give exactly one of --email and --phone.") }
      if !(4...31).contains(bcryptCost) { throw ValidationError("--bcrypt-cost must be 4…31.") }
    }

    func run() async throws {
      let credential: Credential
      let value: String
      var passwordHash: String?
      do {
        if let email {
          // Stored lowercased, as the server does: addresses are unique regardless of case.
          value = try EmailAddress.validate(email).lowercased()
          credential = .email(value)
          let password = (readLine(strippingNewline: true) ?? "")
          try PasswordRules.validate(password)
          passwordHash = try await PasswordHasher(cost: UInt8(bcryptCost)).hash(password)
        } else {
          value = try PhoneNumber.normalize(phone ?? "")
          credential = .phone(value)
        }
      } catch let error as CredentialError {
        throw AdminError.usage(error.description)
      }
      try await options.withDatabase { database in
        let now = Timestamp.milliseconds(Date())
        guard
          let account = try await database.store.createAccount(
            id: UserID(Secrets.userID()), credential: credential, passwordHash: passwordHash, now: now)
        else { throw AdminError.failure("An account already signs in with \(value).") }
        if let name, var profile = try await database.store.profile(account.id) {
          profile.fullName = name
          try await database.store.saveProfile(profile)
        }
        let detail = try await database.administration.user(account.id.rawValue)
        try options.emit(detail.user) { "Created user \(account.id) (\(credential.kind.rawValue) \(value))." }
      }
    }
  }

  struct Disable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Stop an account from signing in; its tokens stop working at once.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "User id, email address or phone number.")
    var user: String

    func run() async throws { try await UsersCommand.setDisabled(options, user, true) }
  }

  struct Enable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Let a disabled account sign in again.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "User id, email address or phone number.")
    var user: String

    func run() async throws { try await UsersCommand.setDisabled(options, user, false) }
  }

  static func setDisabled(_ options: GlobalOptions, _ text: String, _ disabled: Bool) async throws {
    let output = try await options.withBackend { try await $0.setDisabled(text, disabled) }
    let changed = output.changed
    try options.emit(output) {
      "User \(output.user) is \(disabled ? "disabled" : "enabled")\(changed ? "" : " (it already was")\(changed ? "." : ").")"
    }
  }

  struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Delete an account and every row of it (history, devices, tokens, groups, …); --dry-run counts.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "User id, email address or phone number.")
    var user: String

    @Flag(help: "Only count what would be deleted.")
    var dryRun = false

    @Flag(help: "Confirm the deletion.")
    var yes = false

    func run() async throws {
      if !dryRun { try requireConfirmation(yes, "users delete") }
      let output = try await options.withBackend { [dryRun] in try await $0.deleteUser(user, dryRun: dryRun) }
      try options.emit(output) {
        var table = TextTable(["table", "rows"])
        for count in output.tables { table.add([count.table, "\(count.rows)"]) }
        return (dryRun ? "Would delete user \(output.user):" : "Deleted user \(output.user):") + "\n" + table.text
      }
    }
  }
}

struct TokensCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "tokens", abstract: "List and revoke bearer tokens.", subcommands: [List.self, Revoke.self])

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "List usable tokens (newest first) by the first characters of their SHA-256; never the secret.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "Only this user's tokens (id, email address or phone number).")
    var user: String?

    @Flag(help: "Include revoked and expired tokens.")
    var all = false

    func run() async throws {
      let tokens = try await options.withBackend { [user, all] in
        try await $0.tokens(user: user, includeInactive: all)
      }
      try options.emit(tokens) {
        var table = TextTable(["token", "user", "state", "created (UTC)", "expires (UTC)"])
        for token in tokens {
          table.add([
            token.id, token.user, token.state, AdminFormat.time(token.createdAt), AdminFormat.time(token.expiresAt),
          ])
        }
        return tokens.isEmpty ? "No tokens." : table.text
      }
    }
  }

  struct Revoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Revoke one token (by the id `tokens list` shows) or every token of a user.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The token's id from `tokens list` (at least 8 characters).")
    var token: String?

    @Option(help: "Revoke every usable token of this user instead.")
    var user: String?

    @Flag(help: "Confirm.")
    var yes = false

    func validate() throws {
      if (token == nil) == (user == nil) { throw ValidationError("Give a token id or --user, not both.") }
    }

    func run() async throws {
      try requireConfirmation(yes, "tokens revoke")
      let output = try await options.withBackend { [user, token] backend in
        if let user { return try await backend.revokeTokens(user: user) }
        return try await backend.revokeToken(prefix: token ?? "")
      }
      try options.emit(output) { "Revoked \(output.revoked) token(s)." }
    }
  }
}

struct GroupsCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "groups", abstract: "Show users' groups.", subcommands: [List.self])

  static func table(_ groups: [GroupSummary]) -> String {
    var table = TextTable(["group", "kind", "name", "members", "location", "fields"])
    for group in groups {
      table.add([
        group.id, group.kind, group.name, "\(group.members.count)", group.sharesLocation ? "yes" : "no",
        group.fields.isEmpty ? "-" : group.fields.joined(separator: ","),
      ])
    }
    return table.text
  }

  struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List a user's groups with members and visibility.")

    @OptionGroup var options: GlobalOptions

    @Option(help: "User id, email address or phone number.")
    var user: String

    func run() async throws {
      let groups = try await options.withBackend { try await $0.groups(user: user) }
      try options.emit(groups) { GroupsCommand.table(groups) }
    }
  }
}

import ArgumentParser
import Foundation
import Logging
import MeridianServer

/// `meridian-server`: reads the configuration (defaults, `MERIDIAN_*` variables, flags), builds the server and
/// runs it until SIGTERM or SIGINT.
@main
struct MeridianServerCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "meridian-server",
    abstract: "Meridian's HTTP server: accounts, sharing, locations and history on SQLite or PostgreSQL.",
    discussion: "Settings come from defaults, then MERIDIAN_* environment variables, then these flags.")

  @OptionGroup var options: ServerOptions

  func run() async throws {
    let configuration: ServerConfiguration
    do {
      configuration = try ServerConfiguration.resolve(
        environment: ProcessInfo.processInfo.environment, settings: options.settings)
    } catch {
      throw ValidationError(error.description)
    }
    LoggingSystem.bootstrap(StreamLogHandler.standardError)
    var logger = Logger(label: "meridian-server")
    logger.logLevel = configuration.logLevel
    do {
      let server = try await ServerApp.open(configuration: configuration, logger: logger)
      try await server.run()
    } catch {
      logger.critical("meridian-server stopped: \(ServerApp.explain(error, configuration: configuration))")
      throw ExitCode.failure
    }
  }
}

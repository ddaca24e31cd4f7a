import ArgumentParser

/// `--server` for the commands that talk to the servers after login: other servers than the saved ones, for this run.
struct ServerOption: ParsableArguments {
  @Option(
    name: .customLong("server"),
    help: """
      Use this server instead of those saved at login; repeat it or give a comma-separated list for several nodes of \
      one deployment (the tracker moves on to the next when one doesn't answer).
      """)
  var servers: [String] = []

  /// The servers to use with `session`: these, or the session's own.
  func servers(for session: TrackerSession) throws -> ServerList {
    try ServerList(servers.isEmpty ? [session.server] : servers)
  }
}

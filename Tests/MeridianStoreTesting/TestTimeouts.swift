import PersistenceKitPostgres

extension PostgresTimeouts {
  /// A server's deadlines, but a longer wait for a connection: a test process runs hundreds of tests at once on two
  /// cores, where lending a connection (a new backend forked under load) can take longer than a server's 3 s. Tests of
  /// the deadlines themselves set their own.
  public static var tests: PostgresTimeouts { PostgresTimeouts(connectionWait: .seconds(30)) }
}

import RealtimeKit

extension RealtimeHub {
  /// A hub for tests whose tokens are principal ids: token `alice` authenticates as principal `alice`; tokens starting
  /// with `bad` are rejected (close 4001).
  public static func testing(
    _ configuration: RealtimeHubConfiguration = RealtimeHubConfiguration(),
    authorize: @escaping Authorize = { _, _, _ in true },
    receive: Receive? = nil
  ) -> RealtimeHub {
    RealtimeHub(
      configuration: configuration,
      authenticate: { token in token.hasPrefix("bad") ? nil : RealtimePrincipal(id: token) },
      authorize: authorize,
      receive: receive
    )
  }
}

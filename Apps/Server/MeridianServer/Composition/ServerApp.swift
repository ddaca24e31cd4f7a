import DomainKit
import Foundation
import Hummingbird
import Logging
import MeridianAPI
import MeridianMQTT
import MeridianStore
import MeridianStoreEngines
import NIOCore
import RealtimeKit
import RealtimeKitHummingbird
import RealtimeSocketIO
import ServiceLifecycle
import UnixSignals

/// The whole server, composed: the store, the group-commit writer and the Hummingbird application, run as
/// services of one `ServiceGroup` (SIGTERM and SIGINT shut it down gracefully: the HTTP server stops accepting and
/// finishes in-flight requests, then the writer commits what was handed over).
public struct ServerApp: Sendable {
  /// The services' group; `run()` runs it, `shutdown()` triggers the graceful shutdown.
  public let serviceGroup: ServiceGroup
  /// The handlers' environment (store, SMS sender, clock).
  public let environment: ServerEnvironment
  /// The live-updates hub behind `GET /ws`.
  public let live: LiveUpdates
  /// The geofence monitor.
  private let geofences: GeofenceMonitor
  /// This node's index of the geofences: what its monitor evaluates fixes against.
  public var geofenceIndex: GeofenceIndex { geofences.index }
  /// Every route of this server, answering a request without a socket (tests call it in process, HummingbirdTesting's
  /// `.router` way, on the very store, writer and hub the running services use).
  public let responder: RouterResponder<MeridianRequestContext>
  /// Closes the store ``open(configuration:smsSender:metrics:realtime:logger:signals:onRunning:)`` opened, once the
  /// services stopped.
  private var closeStore: @Sendable () async -> Void = {}

  /// Opens the store `configuration.database` names (SQLite or PostgreSQL, created and migrated as needed) and
  /// builds the server on it; ``run()`` closes the store when the server stops. Parameters as for ``init``.
  public static func open(
    configuration: ServerConfiguration, smsSender: (any SMSSender)? = nil, metrics: ServerMetrics = ServerMetrics(),
    realtime: RealtimeHubConfiguration = RealtimeHubConfiguration(), logger: Logger,
    signals: [UnixSignal] = [.sigterm, .sigint], onRunning: @escaping @Sendable (Int) async -> Void = { _ in },
    now: @escaping @Sendable () -> Int64 = SteadyClock.system()
  ) async throws -> ServerApp {
    logger.info("opening the store", metadata: ["database": "\(configuration.database)"])
    let opened = try await configuration.database.open(
      maximumConnections: configuration.databaseConnections, timeouts: configuration.databaseTimeouts,
      replicaURL: configuration.databaseReplicaURL, logger: logger, now: now)
    do {
      var app = try ServerApp(
        configuration: configuration, store: opened.store, smsSender: smsSender, metrics: metrics,
        realtime: realtime, logger: logger, signals: signals, onRunning: onRunning, now: now)
      app.closeStore = opened.close
      return app
    } catch {
      await opened.close()
      throw error
    }
  }

  /// Builds the server from a configuration.
  ///
  /// - Parameters:
  ///   - configuration: the resolved settings.
  ///   - store: the storage; by default the SQLite file of `configuration.databasePath`, created and migrated
  ///     (``open(configuration:smsSender:metrics:realtime:logger:signals:onRunning:)`` opens any engine).
  ///   - smsSender: the SMS sender; by default the one `configuration.smsSender` names.
  ///   - metrics: the Prometheus metrics `GET /metrics` emits.
  ///   - logger: the server's logger.
  ///   - signals: the signals that start a graceful shutdown (none in tests).
  ///   - realtime: the live hub's limits and timeouts.
  ///   - onRunning: called with the bound port once the server accepts connections.
  ///   - now: the clock the server's rules read, UTC milliseconds: by default a ``SteadyClock`` (the wall clock,
  ///     never going back); tests advance their own instead of waiting.
  public init(
    configuration: ServerConfiguration, store: (any MeridianStore)? = nil, smsSender: (any SMSSender)? = nil,
    metrics: ServerMetrics = ServerMetrics(), realtime: RealtimeHubConfiguration = RealtimeHubConfiguration(),
    logger: Logger, signals: [UnixSignal] = [.sigterm, .sigint],
    onRunning: @escaping @Sendable (Int) async -> Void = { _ in },
    now: @escaping @Sendable () -> Int64 = SteadyClock.system()
  ) throws {
    let (environment, writer, live, geofences, socketIO, router, mqtt) = try Self.compose(
      configuration: configuration, store: store, smsSender: smsSender, metrics: metrics, realtime: realtime,
      logger: logger, now: now)
    let application = Application(
      router: router,
      server: .realtime(
        hub: live.hub,
        configuration: RealtimeWebSocketConfiguration(
          timeouts: configuration.httpTimeouts, endpoints: [SocketIOLive.webSocketEndpoint(socketIO)])),
      configuration: ApplicationConfiguration(
        address: .hostname(configuration.host, port: configuration.port), serverName: "meridian-server"),
      onServerRunning: { channel in
        let port = channel.localAddress?.port ?? configuration.port
        logger.notice("meridian-server listening", metadata: ["host": "\(configuration.host)", "port": "\(port)"])
        await onRunning(port)
      },
      logger: logger)
    self.environment = environment
    self.live = live
    self.geofences = geofences
    self.responder = router.buildResponder()
    // Services stop in reverse order: live sockets first (closed with 4004, shutting down), then the HTTP server
    // (stops accepting, drains in-flight requests), then the writer (commits what they handed over and ends its
    // commit stream), then the fan-out (done once it has read that stream to its end).
    var services = ServiceGroupConfiguration(
      services: [
        .init(service: SMSSenderService(sender: environment.smsSender)),  // stops last: after the HTTP server
        .init(
          service: WebhookDeliveryService(
            store: environment.store, outbox: environment.webhooks, settings: configuration.webhooks,
            logger: logger, now: environment.now)),
        .init(
          service: BlobSweepService(
            blobs: environment.blobs,
            store: environment.store, interval: configuration.polls.blobSweepInterval,
            gracePeriod: configuration.polls.blobGracePeriod, now: environment.now, logger: logger)),
        .init(
          service: GeofenceFanOut(
            live: live, geofences: geofences, commits: writer.commits,
            homeAssistant: HomeAssistantFeed(
              store: environment.store, outbox: environment.webhooks, now: environment.now))),
        .init(service: writer),
        .init(service: application), .init(service: RealtimeHubService(hub: live.hub)),
        .init(service: EngineIOService(engine: socketIO)),
      ]
        // The MQTT link stops before the writer, which commits what it handed over.
        + (mqtt.map { [.init(service: OwnTracksMQTTService(bridge: $0))] } ?? []),
      gracefulShutdownSignals: signals,
      logger: logger)
    // Past this, what still runs is cancelled: every database call ends by its deadline, so the process exits.
    services.maximumGracefulShutdownDuration = configuration.shutdownTimeout
    serviceGroup = ServiceGroup(configuration: services)
  }

  /// Every route of a server of `configuration`, for tests that call them without a socket (HummingbirdTesting's
  /// `.router`), reading the time from `now` (UTC milliseconds; a test's own clock instead of waiting). Nothing runs:
  /// routes that store fixes wait for a writer that only ``run()`` starts.
  public static func routes(
    configuration: ServerConfiguration, store: (any MeridianStore)? = nil, smsSender: (any SMSSender)? = nil,
    logger: Logger, now: @escaping @Sendable () -> Int64 = SteadyClock.system()
  ) throws -> Router<MeridianRequestContext> {
    try compose(
      configuration: configuration, store: store, smsSender: smsSender, metrics: ServerMetrics(),
      realtime: RealtimeHubConfiguration(), logger: logger, now: now
    ).router
  }

  /// The parts of a server: the engine (SQLite at `configuration.databasePath` unless a store is given), the
  /// environment, the writer, the live hub and the router.
  private static func compose(
    configuration: ServerConfiguration, store: (any MeridianStore)?, smsSender: (any SMSSender)?,
    metrics: ServerMetrics, realtime: RealtimeHubConfiguration, logger: Logger,
    now: @escaping @Sendable () -> Int64 = Timestamp.systemClock
  ) throws -> (
    environment: ServerEnvironment, writer: FixWriter, live: LiveUpdates, geofences: GeofenceMonitor,
    socketIO: EngineIOServer, router: Router<MeridianRequestContext>, mqtt: OwnTracksMQTT?
  ) {
    guard let store = try store ?? configuration.database.openEmbedded(now: now) else {
      throw CompositionError(message: "\(configuration.database) needs ServerApp.open, which opens every engine")
    }
    let sender = try smsSender ?? configuration.makeSMSSender(metrics: metrics, logger: logger)
    let environment = ServerEnvironment(store: store, smsSender: sender, configuration: configuration, now: now)
    let writer = FixWriter(
      store: store, metrics: metrics, logger: logger, commitsInFlight: configuration.fixCommitsInFlight,
      now: environment.now)
    let ingest = FixIngest(
      store: store, writer: writer, now: environment.now, limits: environment.limits, rate: environment.fixLimiter)
    let live = LiveUpdates(
      store: store, ingest: ingest, metrics: metrics, deviceHandles: environment.deviceHandles,
      socketsPerAccount: environment.limits.socketsPerAccount,
      shareViewersPerLink: environment.limits.shareViewersPerLink,
      channels: [PollLive.channelRule(store: store), GeofenceMonitor.channelRule], configuration: realtime,
      audience: environment.audience, logger: logger,
      now: environment.now)
    let geofences = GeofenceMonitor(
      store: store, live: live, settings: configuration.geofences,
      wake: { [webhooks = environment.webhooks] in webhooks.wake() }, now: environment.now, metrics: metrics,
      logger: logger)
    // Socket.IO clients' sessions ping as often as the hub expects its own clients to, carry a request body's worth
    // at most, and sign in within the hub's hello timeout.
    let sharing = SharingFeature(environment: environment, live: live)
    let socketIO = EngineIOServer(
      configuration: EngineIOConfiguration(
        pingInterval: realtime.heartbeatInterval, pingTimeout: realtime.heartbeatTimeout,
        maxPayload: configuration.maxBodyBytes, establishTimeout: realtime.helloTimeout),
      application: SocketIOServer(namespaces: [
        "/": SocketIOLive(
          hub: live.hub, account: { try await live.account(forToken: $0) },
          visibleChannels: { try await sharing.visibleChannels(viewer: $0) },
          visibleChannel: { try await sharing.visibleChannel(viewer: $0, of: $1) })
      ]))
    let mqttLogger = logger
    let mqttClient = configuration.mqtt.map { OwnTracksMQTT.client($0, logger: mqttLogger) }
    let mqttAccounts = configuration.mqtt.flatMap { MQTTBrokerAccounts(settings: $0, logger: mqttLogger) }
    let (router, phoneApps) = try makeRouter(
      configuration: configuration, environment: environment, ingest: ingest, live: live, geofences: geofences,
      metrics: metrics, mqttClient: mqttClient, mqttAccounts: mqttAccounts)
    SocketIOLive.register(socketIO, on: router)
    let mqtt = mqttClient.map {
      OwnTracksMQTT(client: $0, phoneApps: phoneApps, accounts: mqttAccounts, logger: mqttLogger)
    }
    return (environment, writer, live, geofences, socketIO, router, mqtt)
  }

  /// A sentence for an error the server stopped with: the address and what to do for a port another program holds,
  /// else the error itself.
  public static func explain(_ error: any Error, configuration: ServerConfiguration) -> String {
    if let error = error as? IOError, error.errnoCode == EADDRINUSE {
      return "\(configuration.host):\(configuration.port) is already in use by another program; stop it, or choose "
        + "another port with --port or MERIDIAN_PORT."
    }
    if let error = error as? IOError, error.errnoCode == EADDRNOTAVAIL {
      return "\(configuration.host) is not an address of this machine; use --host 127.0.0.1, 0.0.0.0 or one of its "
        + "addresses."
    }
    return "\(error)"
  }

  /// Runs until a shutdown signal or ``shutdown()``, then closes the store it opened.
  public func run() async throws {
    do {
      try await serviceGroup.run()
    } catch {
      await closeStore()
      throw error
    }
    await closeStore()
  }

  /// Starts the graceful shutdown.
  public func shutdown() async { await serviceGroup.triggerGracefulShutdown() }

  /// The router with every endpoint of ``API`` registered, and the phone apps' ingest (which MQTT shares).
  static func makeRouter(
    configuration: ServerConfiguration, environment: ServerEnvironment, ingest: FixIngest, live: LiveUpdates,
    geofences: GeofenceMonitor, metrics: ServerMetrics, mqttClient: MQTTClient?, mqttAccounts: MQTTBrokerAccounts?
  ) throws -> (Router<MeridianRequestContext>, PhoneAppIngest) {
    let router = Router(context: MeridianRequestContext.self)
    router.add(middleware: SecurityHeadersMiddleware())
    router.add(middleware: MetricsMiddleware(metrics: metrics))
    router.add(middleware: ErrorEnvelopeMiddleware())
    let metricsRoutes = router.group()
    if configuration.metricsAccess != .public {
      metricsRoutes.add(middleware: AdminTokenAuthenticator(adminToken: configuration.adminToken))
        .add(middleware: RequireCallerMiddleware())
    }
    metricsRoutes.on(RouterPath(API.metrics.pathTemplate), method: API.metrics.method) { _, _ in
      metrics.liveConnections.set(Double(await live.hub.connectionCount))
      await metrics.sampleGeofenceQueue(environment.store, now: environment.now())
      metrics.sampleReplicaReads(environment.store)
      return Response(
        status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
        body: ResponseBody(byteBuffer: metrics.exposition()))
    }
    let registrar = RouteRegistrar(
      router: router, store: environment.store, metrics: metrics,
      limits: RouteRegistrar.BodyLimits(
        wire: configuration.maxBodyBytes, decompressed: configuration.maxDecompressedBytes),
      clock: environment.now)
    let health = HealthCheck(
      store: environment.store, writer: ingest.writer, writerStallLimit: configuration.writerStallLimit,
      logger: Logger(label: "meridian-server.health"), mqtt: mqttClient)
    registrar.on(API.health) { _ in try await health.check() }
    AuthFeature(environment: environment, live: live).register(on: registrar)
    SingleSignOnFeature(environment: environment).register(on: registrar)
    let blobs = environment.blobs
    ProfileFeature(environment: environment, blobs: blobs).register(on: registrar)
    SharingFeature(environment: environment, live: live).register(on: registrar)
    ShareLinkFeature(environment: environment, live: live).register(on: registrar)
    PrivacyZoneFeature(environment: environment, live: live).register(on: registrar)
    DeviceFeature(environment: environment, ingest: ingest, mqttAccounts: mqttAccounts).register(on: registrar)
    let gazetteer = environment.audience.gazetteer
    let phoneApps = PhoneAppIngest(environment: environment, ingest: ingest, geofences: geofences, gazetteer: gazetteer)
    phoneApps.register(on: registrar)
    HistoryFeature(environment: environment).register(on: registrar)
    HistoryMapFeature(environment: environment).register(on: registrar)
    HistoryExport(environment: environment).register(on: registrar)
    StayFeature(environment: environment).register(on: registrar)
    HistoryGeoFeature(environment: environment, gazetteer: gazetteer).register(on: registrar)
    HistoryImport(environment: environment, maximumBytes: configuration.maxHistoryImportBytes).register(on: registrar)
    VenueFeature(environment: environment).register(on: registrar)
    PollFeature(environment: environment, configuration: configuration, hub: live.hub).register(on: registrar)
    PlaceFeature(environment: environment).register(on: registrar)
    WebhookFeature(environment: environment, settings: configuration.webhooks).register(on: registrar)
    GeofenceFeature(environment: environment, monitor: geofences).register(on: registrar)
    ProximityFeature(environment: environment, monitor: geofences.proximity).register(on: registrar)
    try WebAppFeature(settings: configuration.web).register(on: router)
    AdminFeatures(environment: environment, live: live, ingest: ingest, geofences: geofences, blobs: blobs).register(
      on: registrar)
    return (router, phoneApps)
  }
}

/// A server that can't be put together from its configuration.
public struct CompositionError: Error, CustomStringConvertible {
  /// What is wrong.
  public var message: String
  public var description: String { message }
}

/// A server running in this process (tests, benchmarks, embedding): started, listening, and stopped gracefully.
public struct RunningServer: Sendable {
  /// The server.
  public let app: ServerApp
  /// The port it listens on (the OS-chosen one when the configuration says 0).
  public let port: Int
  private let task: Task<Void, any Error>

  /// Starts `configuration`'s server (no signal handling) and returns once it accepts connections; its rules read
  /// the time from `now`.
  public static func start(
    configuration: ServerConfiguration, smsSender: (any SMSSender)? = nil, logger: Logger,
    now: @escaping @Sendable () -> Int64 = SteadyClock.system()
  ) async throws -> RunningServer {
    let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
    let app = try await ServerApp.open(
      configuration: configuration, smsSender: smsSender, logger: logger, signals: [],
      onRunning: { port in portContinuation.yield(port) }, now: now)
    let task = Task {
      // A run that ends before listening (the port is taken) ends the wait for the port too.
      defer { portContinuation.finish() }
      try await app.run()
    }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next() else {
      try await task.value
      throw CancellationError()
    }
    return RunningServer(app: app, port: port, task: task)
  }

  /// Shuts down gracefully and waits until it has; rethrows what the server failed with.
  public func stop() async throws {
    await app.shutdown()
    try await task.value
  }
}

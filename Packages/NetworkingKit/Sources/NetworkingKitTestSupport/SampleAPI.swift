import NetworkingKit

/// A profile, as the sample endpoints answer it.
public struct SampleProfile: Codable, Sendable, Equatable {
  /// The user id.
  public var id: String
  /// The display name.
  public var name: String

  /// Creates a profile.
  public init(id: String, name: String) {
    self.id = id
    self.name = name
  }

  /// `{"id":"42","name":"Anna"}`.
  public static let json = #"{"id":"42","name":"Anna"}"#
}

/// One position fix.
public struct SampleFix: Codable, Sendable, Equatable {
  /// Latitude in degrees.
  public var lat: Double
  /// Longitude in degrees.
  public var lon: Double

  /// Creates a fix.
  public init(lat: Double, lon: Double) {
    self.lat = lat
    self.lon = lon
  }
}

/// A batch of fixes from one device.
public struct SampleFixBatch: Codable, Sendable, Equatable {
  /// The device.
  public var deviceId: String
  /// The fixes.
  public var fixes: [SampleFix]

  /// Creates a batch.
  public init(deviceId: String, fixes: [SampleFix]) {
    self.deviceId = deviceId
    self.fixes = fixes
  }
}

/// The answer to a batch upload.
public struct SampleReceipt: Codable, Sendable, Equatable {
  /// Fixes accepted.
  public var accepted: Int

  /// Creates a receipt.
  public init(accepted: Int) { self.accepted = accepted }
}

/// Endpoints shaped like Meridian's, for tests and the benchmark.
public enum SampleAPI {
  /// `GET /v1/me`.
  public static let me = Endpoint<Void, NoBody, SampleProfile>(.get, "/v1/me")
  /// `POST /v1/fixes`, retried with an idempotency key.
  public static let postFixes = Endpoint<Void, SampleFixBatch, SampleReceipt>(.post, "/v1/fixes", idempotency: .key)
  /// `POST /v1/fixes` without an idempotency key: never retried.
  public static let plainPost = Endpoint<Void, SampleFixBatch, SampleReceipt>(.post, "/v1/fixes")
}

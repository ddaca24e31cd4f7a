import Crypto
import DomainKit
import Foundation
import MeridianSecrets
import MeridianStore
import Synchronization

/// The handles viewers see instead of device ids: a keyed hash of the owner and device (HMAC-SHA256 with the
/// deployment's `device-handle` secret), the same on every node and for every viewer of that owner, telling one of
/// the owner's devices from another and nothing else. A device id lets its owner's apps report; a handle lets nobody
/// do anything.
public struct DeviceHandles: Sendable {
  private let key: SymmetricKey

  /// Handles keyed with `secret`.
  public init(secret: Data) { key = SymmetricKey(data: secret) }

  /// The handle of `owner`'s `device`: `d` and 16 base64url characters (96 bits).
  public func handle(of device: DeviceID, owner: UserID) -> DeviceID {
    let mac = HMAC<SHA256>.authenticationCode(for: Data((owner.rawValue + "\n" + device.rawValue).utf8), using: key)
    return DeviceID("d" + mac.withUnsafeBytes { Base64URL.encode($0.prefix(12)) })
  }

  /// `fix` as a viewer of `owner` sees it: its device (and the device of the fix refining it) as handles. `known` is
  /// a handle the caller already has (a batch's device), so that a batch costs one HMAC, not one per fix.
  public func redacted(_ fix: LocationFix, owner: UserID, known: (device: DeviceID, handle: DeviceID)? = nil)
    -> LocationFix
  {
    func handle(_ device: DeviceID) -> DeviceID {
      if let known, known.device == device { return known.handle }
      return self.handle(of: device, owner: owner)
    }
    var fix = fix
    fix.deviceID = fix.deviceID.map(handle)
    if let refined = fix.refinedBy {
      fix.refinedBy = FixID(deviceID: refined.deviceID.map(handle), timestamp: refined.timestamp)
    }
    return fix
  }

}

/// The deployment's ``DeviceHandles``, keyed with the store's `device-handle` secret (read once).
public final class DeviceHandleSource: Sendable {
  private let store: any MeridianStore
  private let loaded = Mutex<DeviceHandles?>(nil)

  init(store: any MeridianStore) { self.store = store }

  /// The handles.
  public func handles() async throws -> DeviceHandles {
    if let handles = loaded.withLock({ $0 }) { return handles }
    let handles = DeviceHandles(secret: try await store.deploymentSecret("device-handle"))
    loaded.withLock { $0 = handles }
    return handles
  }
}

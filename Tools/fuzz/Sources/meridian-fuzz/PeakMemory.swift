import Foundation

/// The process's peak resident memory on Linux: writing `5` to `/proc/self/clear_refs` resets the high-water mark
/// (`VmHWM` in `/proc/self/status`) to the present resident size, so the peak of one input is measured without
/// hooking the allocator.
enum PeakMemory {
  /// Whether the kernel lets this process reset and read its peak.
  static let isAvailable: Bool = {
    #if os(Linux)
      return reset() && kilobytes("VmHWM:") > 0
    #else
      return false
    #endif
  }()

  /// Resets the peak and returns the resident bytes now.
  static func startMeasuring() -> Int {
    _ = reset()
    return kilobytes("VmRSS:") << 10
  }

  /// The peak resident bytes since ``startMeasuring()``.
  static func peak() -> Int { kilobytes("VmHWM:") << 10 }

  private static func reset() -> Bool {
    let descriptor = open("/proc/self/clear_refs", O_WRONLY)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    return write(descriptor, "5", 1) == 1
  }

  /// A `kB` field of `/proc/self/status`, or 0.
  private static func kilobytes(_ field: String) -> Int {
    let descriptor = open("/proc/self/status", O_RDONLY)
    guard descriptor >= 0 else { return 0 }
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    guard count > 0 else { return 0 }
    let text = String(decoding: buffer[..<count], as: UTF8.self)
    guard let start = text.range(of: field) else { return 0 }
    let digits = text[start.upperBound...].drop { $0 == " " || $0 == "\t" }.prefix { $0.isNumber }
    return Int(digits) ?? 0
  }
}

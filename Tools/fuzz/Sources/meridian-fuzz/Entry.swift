// meridian-fuzz: one libFuzzer executable for every harness. The first argument names the harness and is taken off
// before libFuzzer reads its flags; it is also put in MERIDIAN_FUZZ_HARNESS so that the workers of -fork/-jobs,
// which get the flags only, run the same harness.
//
//   meridian-fuzz gpx -max_total_time=60 corpus/gpx seeds/gpx
import Foundation

/// The harness this process runs (set once, before the first input).
nonisolated(unsafe) private var selected: Harness?
/// Whether each input's peak memory is checked (MERIDIAN_FUZZ_MEMORY=0 turns it off).
nonisolated(unsafe) private var checkMemory = true

@_cdecl("LLVMFuzzerInitialize")
public func initialize(
  _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>
) -> CInt {
  let environment = "MERIDIAN_FUZZ_HARNESS"
  if argc.pointee > 1, let first = argv.pointee[1], let harness = Harness.named(String(cString: first)) {
    selected = harness
    setenv(environment, harness.name, 1)
    for index in 1..<Int(argc.pointee) { argv.pointee[index] = argv.pointee[index + 1] }
    argc.pointee -= 1
  } else if let name = ProcessInfo.processInfo.environment[environment] {
    selected = Harness.named(name)
  }
  guard selected != nil else {
    let names = Harness.all.map(\.name).joined(separator: ", ")
    FileHandle.standardError.write(Data("usage: meridian-fuzz HARNESS [libFuzzer flags] [corpus…]\n".utf8))
    FileHandle.standardError.write(Data("harnesses: \(names)\n".utf8))
    exit(2)
  }
  checkMemory = ProcessInfo.processInfo.environment["MERIDIAN_FUZZ_MEMORY"] != "0" && PeakMemory.isAvailable
  return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  guard let harness = selected else { return 0 }
  let bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
  guard checkMemory else {
    harness.run(bytes)
    return 0
  }
  let before = PeakMemory.startMeasuring()
  harness.run(bytes)
  let grown = PeakMemory.peak() - before
  // The bound: at most 64 MiB for a 1 MiB input, i.e. 64 bytes per input byte, plus room for the
  // allocator's and the runtime's own growth.
  let limit = 64 * size + (16 << 20)
  if grown > limit {
    fatalError("\(harness.name): the peak memory grew by \(grown >> 10) KiB for a \(size)-byte input")
  }
  return 0
}

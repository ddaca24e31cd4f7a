import Foundation
import MeridianBenchmarks

// Composition only: the benchmark lives in MeridianBenchmarks.
//   swift run -c release meridian-server-bench [seconds-per-phase]
do {
  try await ServerBenchmark.run(arguments: Array(CommandLine.arguments.dropFirst()))
} catch let error as BenchmarkUsageError {
  FileHandle.standardError.write(Data("\(error)\n".utf8))
  exit(2)
}

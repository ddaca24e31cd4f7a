// meridian-server-bench: see Benchmark.swift.
try await Benchmark.run()

import MeridianTracker

// Composition only: every command lives in MeridianTracker (CLI/).
await MeridianTrackerCommand.run(arguments: Array(CommandLine.arguments.dropFirst()))

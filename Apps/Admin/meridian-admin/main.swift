import Foundation
import MeridianAdmin

// Composition only: every command lives in MeridianAdmin.
exit(await AdminCLI.main(Array(CommandLine.arguments.dropFirst())))

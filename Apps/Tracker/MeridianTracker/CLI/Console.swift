import Foundation

/// How the tracker's commands print: each line goes out whole, in one `write(2)`, at once. `print` holds standard
/// output in a 4 KiB buffer when it is a file or a pipe, so the lines came late, out of order with standard error,
/// and broken mid-line where they shared a pipe with the server's log (`Tools/run`). Writing through `FileHandle`
/// needs no `setvbuf` on the C global `stdout`, which Swift 6 refuses as shared mutable state.
enum Console {
  /// Writes `text` and a newline to standard output.
  static func line(_ text: String) { write(text + "\n", to: .standardOutput) }

  /// Writes `text` and a newline to standard error.
  static func error(_ text: String) { write(text + "\n", to: .standardError) }

  /// Writes `text` as it is (a prompt, a progress line rewritten in place); a closed output is ignored, as `print`
  /// ignores it.
  static func write(_ text: String, to handle: FileHandle) { try? handle.write(contentsOf: Data(text.utf8)) }
}

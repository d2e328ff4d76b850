import CaptureShield

/// Pieces shared by several commands.
enum Common {
  /// The `--display` value, if given (an empty one is refused).
  static func display(_ p: ParsedArguments) throws(UsageError) -> String? {
    guard let d = p.value("--display") else { return nil }
    guard !d.isEmpty else { throw UsageError("option '--display' requires a display name, e.g. :0") }
    return d
  }

  /// Exactly one window id among the positional arguments.
  static func singleWindow(_ p: ParsedArguments) throws(UsageError) -> WindowID {
    guard let first = p.positionals.first else { throw UsageError("missing window id") }
    try p.expectPositionals(max: 1)
    return try Values.windowID(first)
  }

  /// `0x1200004`, or `0x1200004 (the client window in frame 0x800123)`.
  static func describe(client: WindowID, given: WindowID) -> String {
    client == given ? Text.hex(client) : "\(Text.hex(client)) (the client window in frame \(Text.hex(given)))"
  }
}

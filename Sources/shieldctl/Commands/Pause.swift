import CaptureShield

/// `shieldctl pause [--for DURATION]`.
struct PauseCommand: Command {
  static let name = "pause"
  static let abstract = "Suspend shielding for a while or until 'resume'."
  static let usage = "shieldctl pause [--display D] [--for DURATION]"
  static let help = """
    OVERVIEW: Suspend shielding for a while or until 'resume'.

    USAGE: shieldctl pause [--display D] [--for DURATION]

    Asks the daemon to take every shield down and to raise none until the pause ends:
    after DURATION, or with no --for, at 'shieldctl resume'. Secure windows are then
    visible in captures. The daemon records the pause, and who asked, in its audit log.

    OPTIONS:
      --for DURATION   How long to pause: a number followed by ms, s, m or h, e.g. 30s,
                       5m, 1.5h. Without it, until 'shieldctl resume'.
      --display D      The X display (default: $DISPLAY).
      -h, --help       Show this help.

    EXIT STATUS:
      0   the request was sent
      1   no daemon on the display, or an X error
      64  usage error
    """

  var display: String?
  var duration: PolicyDuration?
  /// The duration as the user wrote it, for the confirmation.
  var durationText: String?

  static func parse(_ args: [String]) throws(UsageError) -> PauseCommand {
    let p = try ArgumentScanner.scan(args, options: [.value("--for"), .value("--display")])
    try p.expectPositionals(max: 0)
    let text = p.value("--for")
    var duration: PolicyDuration?
    if let text { duration = try Values.duration(text, option: "--for") }
    return PauseCommand(display: try Common.display(p), duration: duration, durationText: text)
  }

  func run() throws -> Int32 {
    let done =
      durationText.map { "asked the daemon to pause shielding for \($0)" }
      ?? "asked the daemon to pause shielding until 'shieldctl resume'"
    return try DaemonRequest.send(.pause(duration), display: display, done: done)
  }
}

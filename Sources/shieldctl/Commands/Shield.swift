import CaptureShield

/// `shieldctl shield WINDOW`: asks the daemon to shield a window now.
struct ShieldCommand: Command {
  static let name = "shield"
  static let abstract = "Ask the daemon to shield a window now."
  static let usage = "shieldctl shield [--display D] WINDOW"
  static let help = """
    OVERVIEW: Ask the daemon to shield a window now.

    USAGE: shieldctl shield [--display D] WINDOW

    Forces a shield over the window, capture or not, until the daemon's decision about
    the window changes (or 'shieldctl unshield'). A window manager's frame is resolved
    to the application window inside it. The request is sent to the running daemon,
    which records it in its audit log.

    ARGUMENTS:
      WINDOW        A window id, decimal or hexadecimal with 0x, e.g. 0x1200004.

    OPTIONS:
      --display D   The X display (default: $DISPLAY).
      -h, --help    Show this help.

    EXIT STATUS:
      0   the request was sent
      1   no such window, no daemon on the display, or an X error
      64  usage error
    """

  var display: String?
  var window: WindowID

  static func parse(_ args: [String]) throws(UsageError) -> ShieldCommand {
    let p = try ArgumentScanner.scan(args, options: [.value("--display")])
    return ShieldCommand(display: try Common.display(p), window: try Common.singleWindow(p))
  }

  func run() throws -> Int32 {
    try DaemonRequest.override(window, shielded: true, display: display)
  }
}

/// Sending commands to the daemon.
enum DaemonRequest {
  /// Connects, sends `command` and reports `done` on success.
  static func send(_ command: DaemonCommand, display: String?, done: String) throws -> Int32 {
    let x = try XControl(display: display)
    try x.send(command)
    print(done)
    return ExitCode.ok
  }

  /// `shield` / `unshield`: resolves a frame to its client window first.
  static func override(_ window: WindowID, shielded: Bool, display: String?) throws -> Int32 {
    let x = try XControl(display: display)
    let client = try x.clientWindow(for: window)
    try x.send(shielded ? .shield(client) : .unshield(client))
    let what = Common.describe(client: client, given: window)
    print("asked the daemon to \(shielded ? "shield" : "unshield") \(what)")
    return ExitCode.ok
  }
}

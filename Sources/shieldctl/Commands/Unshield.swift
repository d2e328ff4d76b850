import CaptureShield

/// `shieldctl unshield WINDOW`: asks the daemon to take a window's shield down.
struct UnshieldCommand: Command {
  static let name = "unshield"
  static let abstract = "Ask the daemon to take a window's shield down."
  static let usage = "shieldctl unshield [--display D] WINDOW"
  static let help = """
    OVERVIEW: Ask the daemon to take a window's shield down.

    USAGE: shieldctl unshield [--display D] WINDOW

    Removes the shield from the window even while the screen is captured, until the
    daemon's decision about the window changes (or 'shieldctl shield'). A window
    manager's frame is resolved to the application window inside it. The request is
    sent to the running daemon, which records it in its audit log.

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

  static func parse(_ args: [String]) throws(UsageError) -> UnshieldCommand {
    let p = try ArgumentScanner.scan(args, options: [.value("--display")])
    return UnshieldCommand(display: try Common.display(p), window: try Common.singleWindow(p))
  }

  func run() throws -> Int32 {
    try DaemonRequest.override(window, shielded: false, display: display)
  }
}

import CaptureShield

/// `shieldctl list [--json]`: the secure windows.
struct ListCommand: Command {
  static let name = "list"
  static let abstract = "List the secure windows and whether each is shielded."
  static let usage = "shieldctl list [--display D] [--json]"
  static let help = """
    OVERVIEW: List the secure windows and whether each is shielded.

    USAGE: shieldctl list [--display D] [--json]

    Prints a table of the windows the running daemon considers secure (and any other
    window it shields): window id, whether it is shielded now, why it is secure (the
    tag, or which policy rule), its WM_CLASS class and its title. Titles are shortened
    and control characters escaped. The daemon gives titles to its own user only, over
    its command socket (the state it publishes on the display has none): for another
    user the TITLE column is '-'.

    OPTIONS:
      --json        Print the windows as JSON (the 'windows' part of the daemon's
                    state) instead.
      --display D   The X display (default: $DISPLAY).
      -h, --help    Show this help.

    EXIT STATUS:
      0   success
      1   no daemon runs on the display, or the display cannot be reached
      64  usage error
    """

  var display: String?
  var json: Bool

  static func parse(_ args: [String]) throws(UsageError) -> ListCommand {
    let p = try ArgumentScanner.scan(args, options: [.flag("--json"), .value("--display")])
    try p.expectPositionals(max: 0)
    return ListCommand(display: try Common.display(p), json: p.flag("--json"))
  }

  func run() throws -> Int32 {
    let state = try DaemonStateReader.read(display: display)
    if json {
      try Output.json(state.windows)
      return ExitCode.ok
    }
    guard !state.windows.isEmpty else {
      print("no secure windows")
      return ExitCode.ok
    }
    let server = state.enforcement?.kind == "server"
    let rows = state.windows.map { w in
      [
        Text.hex(w.id), server ? (w.protected == true ? "server" : "no") : (w.shielded ? "yes" : "no"),
        Text.show(w.reason, limit: 80), Text.show(w.class ?? "-", limit: 40),
        w.title.map { Text.quoted($0, limit: 60) } ?? "-",
      ]
    }
    // Under server enforcement the column says whether the X server protects the window.
    print(Text.table(["WINDOW", server ? "PROTECTED" : "SHIELDED", "REASON", "CLASS", "TITLE"], rows))
    return ExitCode.ok
  }
}

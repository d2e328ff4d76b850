import CaptureShield

/// `shieldctl clients [--json]`: the X clients the daemon knows.
struct ClientsCommand: Command {
  static let name = "clients"
  static let abstract = "List the X clients and which of them capture the screen."
  static let usage = "shieldctl clients [--display D] [--json]"
  static let help = """
    OVERVIEW: List the X clients and which of them capture the screen.

    USAGE: shieldctl clients [--display D] [--json]

    Prints a table of the X clients the running daemon knows: client (resource-id
    base), pid and executable (as the X server reports the pid; '-' when it cannot be
    identified, e.g. a TCP client), how the policy classifies it (allowed: may read
    pixels; known: a known capturer; ordinary; unidentified), whether it is capturing
    now, and whether it is the compositor.

    OPTIONS:
      --json        Print the clients as JSON (the 'clients' part of the daemon's
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

  static func parse(_ args: [String]) throws(UsageError) -> ClientsCommand {
    let p = try ArgumentScanner.scan(args, options: [.flag("--json"), .value("--display")])
    try p.expectPositionals(max: 0)
    return ClientsCommand(display: try Common.display(p), json: p.flag("--json"))
  }

  func run() throws -> Int32 {
    let state = try DaemonStateReader.read(display: display)
    if json {
      try Output.json(state.clients)
      return ExitCode.ok
    }
    guard !state.clients.isEmpty else {
      print("no clients")
      return ExitCode.ok
    }
    let rows = state.clients.map { c in
      [
        c.client.description, c.pid.map(String.init) ?? "-",
        (c.exe ?? c.comm).map { Text.show($0, limit: 80) } ?? c.identity.map { "(\(Text.show($0, limit: 60)))" } ?? "-",
        c.class.rawValue, c.capturing ? "yes" : "no", c.compositor ? "yes" : "no", c.granted == true ? "yes" : "-",
      ]
    }
    print(Text.table(["CLIENT", "PID", "EXE", "CLASS", "CAPTURING", "COMPOSITOR", "GRANTED"], rows))
    return ExitCode.ok
  }
}

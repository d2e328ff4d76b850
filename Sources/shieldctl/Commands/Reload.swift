/// `shieldctl reload`.
struct ReloadCommand: DisplayOnlyCommand {
  static let name = "reload"
  static let abstract = "Ask the daemon to reload its policy files."
  static let usage = "shieldctl reload [--display D]"
  static let help = """
    OVERVIEW: Ask the daemon to reload its policy files.

    USAGE: shieldctl reload [--display D]

    Like sending SIGHUP to the daemon: it reads its policy files again. If they are
    invalid the daemon keeps the last good policy and says so in its audit log; check
    files first with 'shieldctl policy check', and see the policy in force with
    'shieldctl status'.

    OPTIONS:
      --display D   The X display (default: $DISPLAY).
      -h, --help    Show this help.

    EXIT STATUS:
      0   the request was sent
      1   no daemon on the display, or an X error
      64  usage error
    """

  var display: String?

  func run() throws -> Int32 {
    try DaemonRequest.send(.reload, display: display, done: "asked the daemon to reload its policy")
  }
}

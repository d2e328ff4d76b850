/// `shieldctl resume`.
struct ResumeCommand: DisplayOnlyCommand {
  static let name = "resume"
  static let abstract = "End a pause: shield again."
  static let usage = "shieldctl resume [--display D]"
  static let help = """
    OVERVIEW: End a pause: shield again.

    USAGE: shieldctl resume [--display D]

    Asks the daemon to end a pause started with 'shieldctl pause' at once. Secure
    windows are shielded again if someone is capturing.

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
    try DaemonRequest.send(.resume, display: display, done: "asked the daemon to resume shielding")
  }
}

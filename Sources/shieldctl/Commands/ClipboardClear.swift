/// `shieldctl clipboard clear`.
struct ClipboardClearCommand: DisplayOnlyCommand {
  static let name = "clipboard clear"
  static let abstract = "Clear the guarded text now."
  static let usage = "shieldctl clipboard clear [--display D]"
  static let help = """
    OVERVIEW: Clear the guarded text now.

    USAGE: shieldctl clipboard clear [--display D]

    Asks the daemon to give up every selection it guards and wipe the sealed text, as
    'clipboard.clearAfter' would. Copies from windows that are not secure are not
    touched. The daemon writes a 'clipboard-clear' audit record.

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
    try DaemonRequest.send(.clipboardClear, display: display, done: "asked the daemon to clear the guarded clipboard")
  }
}

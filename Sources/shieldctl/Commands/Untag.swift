/// `shieldctl untag`: removes `_CAPTURE_SHIELD_SECURE` from windows.
struct UntagCommand: Command {
  static let name = "untag"
  static let abstract = "Remove the secure tag from windows."
  static let usage = "shieldctl untag [--display D] [--forget] (WINDOW... | --pick)"
  static let help = """
    OVERVIEW: Remove the secure tag from windows.

    USAGE: shieldctl untag [--display D] [--forget] (WINDOW... | --pick)

    Deletes the _CAPTURE_SHIELD_SECURE property from each window. A window manager's
    frame is resolved to the application window inside it. Policy rules still apply:
    a window matching a 'secure' rule stays secure (see 'shieldctl policy explain').
    While a daemon runs, it removes the tag on this command's behalf: it puts back a
    tag that any other client than the window's own removes. Without a daemon, this
    command removes it as an ordinary client: under the CaptureShield Xorg module only
    the window's own program may, so removing another program's tag fails (exit 1).
    Each window is reported as 'untagged 0x...'.

    With --forget, the remembered rules of the window's application ('shieldctl tag
    --remember': those on its class or its program) are removed from
    $XDG_CONFIG_HOME/captureshield/remembered.json5 and a running daemon is asked to
    reload: its windows are no longer secure unless another rule or a tag says so.

    ARGUMENTS:
      WINDOW        A window id, decimal or hexadecimal with 0x, e.g. 0x1200004.

    OPTIONS:
      --pick        Click the window instead of naming it.
      --forget      Also forget the window's application (above).
      --display D   The X display (default: $DISPLAY).
      -h, --help    Show this help.

    EXIT STATUS:
      0   the tag was removed from every window
      1   a window does not exist (the others are still untagged), the X server refused
          (the Xorg module, no daemon), an X error, or (--forget) the remembered
          rules cannot be read or written
      64  usage error
    """

  var target: WindowTarget

  static func parse(_ args: [String]) throws(UsageError) -> UntagCommand {
    UntagCommand(target: try WindowTarget.parse(args, memory: "--forget"))
  }

  func run() throws -> Int32 {
    try target.setTag(secure: false)
  }
}

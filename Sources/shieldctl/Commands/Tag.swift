import CaptureShield

/// `shieldctl tag`: sets `_CAPTURE_SHIELD_SECURE` = 1 on windows.
struct TagCommand: Command {
  static let name = "tag"
  static let abstract = "Mark windows as secure (set the _CAPTURE_SHIELD_SECURE tag)."
  static let usage = "shieldctl tag [--display D] [--remember] (WINDOW... | --pick)"
  static let help = """
    OVERVIEW: Mark windows as secure (set the _CAPTURE_SHIELD_SECURE tag).

    USAGE: shieldctl tag [--display D] [--remember] (WINDOW... | --pick)

    Sets the _CAPTURE_SHIELD_SECURE property (CARDINAL 1) on each window, the same tag
    an application sets on its own secure windows. The daemon shields tagged windows
    while the screen is captured, whatever the policy says. A window manager's frame is
    resolved to the application window inside it. The tag lasts as long as the window
    (remove it with 'shieldctl untag'). While a daemon runs, it sets the tag on this
    command's behalf (under the CaptureShield Xorg module only the window's own
    program and the daemon may). Each tagged window is reported as 'tagged 0x...'.

    With --remember, the window's application is secure from now on, its windows
    to come too, with no tag: two 'secure' rules named 'remembered: NAME', one on
    its program (the executable, from the X server's PID of the window's client and
    /proc) and one on its class (WM_CLASS), are written to
    $XDG_CONFIG_HOME/captureshield/remembered.json5 (~/.config/captureshield/...),
    a file shieldctl manages (your policy.json5 is never edited), and a running
    daemon is asked to reload. 'shieldctl untag --forget' removes them. A file of
    remembered rules that someone else edited is left alone (exit 1).

    ARGUMENTS:
      WINDOW        A window id, decimal or hexadecimal with 0x (as printed by xwininfo
                    or xprop), e.g. 0x1200004.

    OPTIONS:
      --pick        Click the window to tag instead of naming it.
      --remember    Also make the window's application secure from now on (above).
      --display D   The X display (default: $DISPLAY).
      -h, --help    Show this help.

    EXIT STATUS:
      0   every window was tagged
      1   a window does not exist (the others are still tagged), the X server refused
          (the Xorg module, no daemon), an X error, or (--remember) the window's
          program is not known or the remembered rules cannot be written
      64  usage error

    EXAMPLES:
      shieldctl tag 0x1200004
      shieldctl tag --pick
      shieldctl tag --remember --pick
    """

  var target: WindowTarget

  static func parse(_ args: [String]) throws(UsageError) -> TagCommand {
    TagCommand(target: try WindowTarget.parse(args, memory: "--remember"))
  }

  func run() throws -> Int32 {
    try target.setTag(secure: true)
  }
}

/// The windows of `tag` / `untag`: ids or `--pick`, and the display.
struct WindowTarget {
  var display: String?
  /// Empty with `pick`.
  var windows: [WindowID]
  var pick: Bool
  /// `--remember` (tag) or `--forget` (untag): the remembered rules change too.
  var memory = false

  /// `memory`: the option that also remembers or forgets the windows' applications.
  static func parse(_ args: [String], memory: String) throws(UsageError) -> WindowTarget {
    let p = try ArgumentScanner.scan(args, options: [.flag("--pick"), .value("--display"), .flag(memory)])
    let display = try Common.display(p)
    var windows: [WindowID] = []
    for arg in p.positionals { windows.append(try Values.windowID(arg)) }
    if p.flag("--pick") {
      guard windows.isEmpty else { throw UsageError("give window ids or --pick, not both") }
      return WindowTarget(display: display, windows: [], pick: true, memory: p.flag(memory))
    }
    guard !windows.isEmpty else { throw UsageError("missing window id (or --pick)") }
    return WindowTarget(display: display, windows: windows, pick: false, memory: p.flag(memory))
  }

  /// Tags (or untags) every window, reporting each; a window that does not exist is
  /// reported and skipped, other X errors stop at once. With `memory`, then remembers
  /// (or forgets) the applications of the windows done.
  func setTag(secure: Bool) throws -> Int32 {
    let x = try XControl(display: display)
    let verb = secure ? "tagged" : "untagged"
    if pick {
      let w = try x.pickWindow()
      try x.setTag(w, secure: secure)
      print("\(verb) \(Text.hex(w))")
      return memory ? try RememberedFile.update(remember: secure, windows: [w], on: x) : ExitCode.ok
    }
    var status = ExitCode.ok
    var done: [WindowID] = []
    for given in windows {
      do throws(XError) {
        let client = try x.clientWindow(for: given)
        try x.setTag(client, secure: secure)
        print("\(verb) \(Common.describe(client: client, given: given))")
        done.append(client)
      } catch {
        guard case .noSuchWindow = error else { throw error }
        Output.failure("no window \(Text.hex(given)) on display \(x.displayName)")
        status = ExitCode.failure
      }
    }
    if memory && !done.isEmpty {
      let remembered = try RememberedFile.update(remember: secure, windows: done, on: x)
      if remembered != ExitCode.ok { status = remembered }
    }
    return status
  }
}

import CaptureShield

/// `shieldctl watch`: runs the daemon.
struct WatchCommand: Command {
  static let name = "watch"
  static let abstract = "Run the daemon that shields secure windows during capture."
  static let usage = "shieldctl watch [--policy FILE]... [--display D] [--log-format text|json] [--syslog]"
  static let help = """
    OVERVIEW: Run the daemon that shields secure windows during capture.

    USAGE: shieldctl watch [--policy FILE]... [--display D] [--log-format text|json] [--syslog]

    Watches the display for clients that read its pixels (screenshot tools, screen
    recorders, screen sharing) and, while one does, covers every secure window with an
    opaque shield. A window is secure when it carries the _CAPTURE_SHIELD_SECURE tag
    (set by the application itself or with 'shieldctl tag') or matches a 'secure' rule
    of the policy. The daemon runs in the foreground until SIGTERM or SIGINT. SIGHUP
    (or 'shieldctl reload') reloads the policy; an invalid policy is rejected and the
    last good one stays in force. Audit records are written to standard error.

    OPTIONS:
      --policy FILE         Load this policy file instead of the default ones. Repeat
                            to load several; they are merged in the order given.
                            Default: the *.json5 files of /etc/captureshield/policy.d
                            in name order, then $XDG_CONFIG_HOME/captureshield/policy.json5
                            (~/.config/captureshield/policy.json5), then remembered.json5
                            next to it ('shieldctl tag --remember'), those that exist,
                            looked for again at each reload. A broken remembered.json5
                            is left out at start-up (logged; the rest protects).
      --display D           The X display to protect (default: $DISPLAY).
      --log-format FORMAT   Audit record format: text (the default) or json (one JSON
                            object per line).
      --syslog              Also send audit records to syslog.
      -h, --help            Show this help.

    EXIT STATUS:
      0   stopped by SIGTERM or SIGINT
      1   failure
      64  usage error
      69  the X server went away (a service manager should restart the daemon)
      75  another daemon already runs on this display
      78  the policy is invalid at start-up (there is no last good policy to keep)

    SEE ALSO:
      shieldctl policy check, shieldctl status, shieldctl reload
    """

  var options: WatchOptions

  static func parse(_ args: [String]) throws(UsageError) -> WatchCommand {
    let p = try ArgumentScanner.scan(
      args,
      options: [
        .value("--policy", repeatable: true), .value("--display"), .value("--log-format"), .flag("--syslog"),
      ])
    try p.expectPositionals(max: 0)
    let policies = p.all("--policy")
    if policies.contains("") { throw UsageError("option '--policy' requires a file name, not an empty string") }
    var options = WatchOptions(display: try Common.display(p), policyPaths: policies.isEmpty ? nil : policies)
    if let format = p.value("--log-format") {
      let f = try Values.choice(format, option: "--log-format", AuditFormat.allCases.map(\.rawValue))
      options.logFormat = AuditFormat(rawValue: f)!
    }
    options.syslog = p.flag("--syslog")
    return WatchCommand(options: options)
  }

  func run() throws -> Int32 {
    Watcher.run(options)
  }
}

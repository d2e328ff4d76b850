import CaptureShield
import Foundation

/// `shieldctl status [--json]`.
struct StatusCommand: Command {
  static let name = "status"
  static let abstract = "Show whether the daemon runs and what it is doing."
  static let usage = "shieldctl status [--display D] [--json]"
  static let help = """
    OVERVIEW: Show whether the daemon runs and what it is doing.

    USAGE: shieldctl status [--display D] [--json]

    Reads the state the daemon publishes on the display and summarises it: the
    daemon's pid, the policy files in force and their main settings, whether someone is
    capturing the screen (each capture session with the client's pid, executable and
    first capture request), the enforcement (the CaptureShield Xorg module, or shield
    windows), whether the keys typed into secure windows are protected (only under the
    module; with how many input refusals it audited), the compositor, how many windows
    are secure and how many are shielded or protected by the X server, what makes
    windows secure (the built-in list of password managers and credential prompts,
    your rules, the remembered ones among them, and tags: how many rules and which
    windows each covers now), and whether shielding is paused. A file of remembered
    rules ('shieldctl tag --remember') that cannot be read is shown as
    'remembered:  NOT in force: ...'.

    The state is only what a daemon once wrote, so status also checks that its writer
    still owns the daemon's manager selection (by the X server's PID of the owner) and
    runs a program named shieldctl. If not, it prints
    'CaptureShield: NOT PROTECTING on display :N: ...' with the reason (with --json,
    {"running":"true","healthy":"false","problem":...}) and exits with status 1.

    Then it pings the daemon (a command its event loop answers) and waits up to 2 s. A
    daemon that is stopped (SIGSTOP) or whose loop is stuck does not answer: status
    prints 'CaptureShield: NOT RESPONDING on display :N ...' with the reason (with
    --json, {"running":"true","healthy":"false","responding":"false","problem":...})
    and exits with status 1. A daemon that answers is shown with "responding": true in
    --json.

    When no daemon runs, prints 'CaptureShield: not running on display :N' (with
    --json, {"running":false}) and exits with status 1.

    OPTIONS:
      --json        Print the daemon's whole published state as JSON instead.
      --display D   The X display (default: $DISPLAY).
      -h, --help    Show this help.

    EXIT STATUS:
      0   the daemon runs
      1   no daemon runs on the display, it does not own its selection, it does not
          answer (stopped or stuck), or the display cannot be reached
      64  usage error
    """

  var display: String?
  var json: Bool

  static func parse(_ args: [String]) throws(UsageError) -> StatusCommand {
    let p = try ArgumentScanner.scan(args, options: [.flag("--json"), .value("--display")])
    try p.expectPositionals(max: 0)
    return StatusCommand(display: try Common.display(p), json: p.flag("--json"))
  }

  static let notRunningJSON = #"{"running":false}"#

  /// The daemon's published state, or nil after saying that no daemon runs (plain or
  /// JSON). Throws when the display cannot be reached (after the JSON answer, with --json).
  static func publishedState(display: String?, json: Bool) throws -> DaemonState? {
    try publishedState(on: connect(display: display, json: json), json: json)
  }

  /// A connection to the display (with --json, the answer that no daemon runs when it
  /// cannot be reached).
  static func connect(display: String?, json: Bool) throws -> XControl {
    do {
      return try XControl(display: display)
    } catch {
      if json { print(notRunningJSON) }
      throw error
    }
  }

  /// `publishedState` on a connection of the caller's (`status` checks the daemon on the
  /// same one: each X connection of ours costs, under `capture.quarantine`, a flicker of the
  /// shields until the daemon has identified it as its own program).
  static func publishedState(on x: borrowing XControl, json: Bool) throws -> DaemonState? {
    guard let state = try x.readState() else {
      print(json ? notRunningJSON : "CaptureShield: not running on display \(Text.show(x.displayName))")
      return nil
    }
    return state
  }

  func run() throws -> Int32 {
    let control = try Self.connect(display: display, json: json)
    guard let state = try Self.publishedState(on: control, json: json) else { return ExitCode.failure }
    // The state is only what a daemon once wrote: check that its writer still owns the
    // manager selection, is a shieldctl, and runs.
    if let problem = control.daemonProblem(state) {
      if json {
        try Output.json(["running": "true", "healthy": "false", "problem": problem])
      } else {
        print("CaptureShield: NOT PROTECTING on display \(Text.show(state.display)): \(Text.show(problem, limit: 400))")
      }
      return ExitCode.failure
    }
    // It is the daemon; does its loop still react? (A stopped or stuck one does not.)
    if let problem = control.unresponsiveDaemon(state) {
      if json {
        try Output.json(["running": "true", "healthy": "false", "responding": "false", "problem": problem])
      } else {
        print(
          "CaptureShield: NOT RESPONDING on display \(Text.show(state.display)) (NOT PROTECTING new windows or captures): \(Text.show(problem, limit: 400))"
        )
      }
      return ExitCode.failure
    }
    if json {
      var answered = DaemonStateReader.withTitles(state, from: control)
      answered.responding = true
      try Output.json(answered)
    } else {
      print(Self.summary(state, now: Date().timeIntervalSince1970).joined(separator: "\n"))
      if let problem = DoctorCommand.rememberedProblem() {
        print("remembered:  NOT in force: " + Text.show(problem, limit: 2000))
      }
    }
    return ExitCode.ok
  }

  /// The human-readable summary, one string per line.
  static func summary(_ s: DaemonState, now: Double) -> [String] {
    func field(_ label: String, _ value: String) -> String {
      (label + ":").padding(toLength: 13, withPad: " ", startingAt: 0) + value
    }
    let indent = String(repeating: " ", count: 13)
    var out: [String] = []
    out.append(
      "CaptureShield: running on display \(Text.show(s.display)) (pid \(s.pid), up \(Text.duration(seconds: now - s.startedAt)))"
    )

    let p = s.policy
    let sources = p.sources.isEmpty ? ["built-in defaults (no policy file)"] : p.sources.map { Text.show($0) }
    for (i, source) in sources.enumerated() { out.append(i == 0 ? field("policy", source) : indent + source) }
    let quarantine = p.quarantineMs.map { Text.duration(seconds: Double($0) / 1000) } ?? "off"
    out.append(
      indent + Text.count(p.rules, "secure rule") + "; shield when \(p.when.rawValue); fail mode \(p.failMode.rawValue)"
        + "; linger \(Text.duration(seconds: Double(p.lingerMs) / 1000))"
        + (p.hold.map { "; hold \(Text.show($0))" } ?? "") + "; quarantine \(quarantine)")
    if p.quarantineMs != nil {
      let pending = s.pendingLaunches.map { "; " + Text.count($0, "launch") + " holding the shields" } ?? ""
      out.append(
        field(
          "launches",
          s.launchWatch.map { lib in
            let programs = s.launchDirectories.map { dirs in
              "; starts of " + Text.count(s.launchPrograms ?? 0, "X client program") + " in "
                + dirs.map { Text.show($0) }.joined(separator: ", ")
            }
            return "watched (opens of \(Text.show(lib))" + (programs ?? "") + ")" + pending
          }
            ?? "not watched: the quarantine starts at each client's connection"))
    }

    if let e = s.enforcement, e.kind == "server" {
      let mode = e.moduleMode.map { " (\($0))" } ?? ""
      out.append(
        field(
          "enforcement",
          "server: the CaptureShield Xorg module \(e.moduleVersion ?? "?")\(mode) keeps secure windows out of untrusted captures; no shields"
        ))
      if let trusted = e.trusted {
        out.append(field("trusted", trusted.isEmpty ? "none" : trusted.map { Text.show($0) }.joined(separator: ", ")))
      }
      let granted = e.granted ?? []
      out.append(
        field("granted", granted.isEmpty ? "none" : granted.map(\.description).joined(separator: ", ")))
      if e.follows == .tagged {
        out.append(field("windows", "only tagged ones are followed (the policy has no rules about windows)"))
      }
      if e.protecting == false {
        out.append(field("protection", "OFF (paused): tagged windows are readable by anyone"))
      }
      if e.inputProtected == true {
        let last = e.lastInputRefusal.map { " (last: \(Text.show($0)))" } ?? ""
        out.append(
          field(
            "input",
            "protected by the module: keys typed into a focused secure window reach only that window's program and trusted ones; "
              + Text.count(e.inputRefusals ?? 0, "refusal") + " audited (input-refused)" + last))
      } else if e.inputProtected == false {
        out.append(field("input", "NOT protected: this module version does not guard the keys of secure windows"))
      }
    } else {
      out.append(field("enforcement", "client-side shields (no CaptureShield Xorg module on this server)"))
      if s.enforcement?.inputProtected == false {
        out.append(
          field(
            "input",
            "NOT protected: without the CaptureShield Xorg module any X client can read the keys typed into secure windows"
          ))
      }
    }

    let capturing = s.sessions.filter { $0.kind != .quarantine }
    out.append(field("capturing", s.capturing ? "YES (\(Text.count(capturing.count, "session")))" : "no"))
    for session in s.sessions { out.append("  " + describe(session)) }

    if let c = s.compositor {
      let trusted = s.compositorTrust?.hasPrefix("trusted") == true
      let server = s.enforcement?.kind == "server"
      let verdict =
        c.class == .allowed
        ? "allowed (capture.allow)"
        : trusted
          ? s.compositorTrust!
          : server
            ? "\(s.compositorTrust ?? "not allowed"); secure windows are black on the screen"
            : "\(s.compositorTrust ?? "not allowed"); counts as capturing"
      out.append(field("compositor", "\(c.client) \(identity(pid: c.pid, exe: c.exe ?? c.comm)) (\(verdict))"))
    } else {
      out.append(field("compositor", "none"))
    }

    let secure = s.windows.filter(\.secure).count
    if s.enforcement?.kind == "server" {
      let protected = s.windows.filter { $0.protected == true }.count
      out.append(field("windows", "\(secure) secure, \(protected) protected by the X server"))
    } else {
      let shielded = s.windows.filter(\.shielded).count
      out.append(field("windows", "\(secure) secure, \(shielded) shielded"))
      out.append(field("shields", s.shieldsActive ? "active (secure windows are covered)" : "inactive"))
    }
    out += secureBy(s).enumerated().map { i, line in i == 0 ? field("secure by", line) : indent + line }
    if s.paused {
      let until = s.pauseRemaining.map { "\(Text.duration(seconds: $0)) left" } ?? "until 'shieldctl resume'"
      out.append(field("paused", "yes, \(until)"))
    } else {
      out.append(field("paused", "no"))
    }
    return out
  }

  /// What makes windows secure: the built-in list, the policy's rules (remembered ones
  /// among them) and tags, with the windows each one covers now (by their `reason`).
  static func secureBy(_ s: DaemonState) -> [String] {
    let secure = s.windows.filter(\.secure)
    func windows(_ rows: [DaemonState.WindowRow]) -> String {
      guard !rows.isEmpty else { return "no window now" }
      let shown = rows.prefix(8).map { w in
        Text.hex(w.id) + (w.class.map { " \(Text.quoted($0))" } ?? "")
      }
      return Text.count(rows.count, "window") + ": " + shown.joined(separator: ", ")
        + (rows.count > shown.count ? ", ..." : "")
    }
    let builtin = secure.filter { $0.reason.hasPrefix("built-in") }
    let rules = secure.filter { $0.reason.hasPrefix("rule #") }
    let remembered = rules.filter { $0.reason.contains("\"" + RememberedRules.namePrefix) }
    let tags = secure.filter { $0.reason == "tag" || $0.reason.hasPrefix("malformed tag") }
    let other = secure.count - builtin.count - rules.count - tags.count
    let p = s.policy
    var out = [
      "default (built-in list): " + (p.builtinRules.map { Text.count($0, "rule") + "; " } ?? "") + windows(builtin),
      "your rules: " + Text.count(p.rules, "rule") + (p.rememberedRules.map { " (\($0) remembered)" } ?? "") + "; "
        + windows(rules) + (remembered.isEmpty ? "" : " (\(remembered.count) by remembered rules)"),
      "tags: " + windows(tags),
    ]
    if other > 0 { out.append("views, password fields, provisional: " + Text.count(other, "window")) }
    return out
  }

  static func identity(pid: Int?, exe: String?) -> String {
    "pid \(pid.map(String.init) ?? "?") \(exe.map { Text.show($0) } ?? "(unknown executable)")"
  }

  static func describe(_ s: DaemonState.SessionRow) -> String {
    let kind: String
    switch s.kind {
    case .request: kind = "capture requests"
    case .known:
      kind = s.learned == true ? "known capturer (known=learned: its program captured before)" : "known capturer"
    case .compositor: kind = "compositor"
    case .quarantine: kind = "quarantine of a new client"
    }
    var line = "session \(s.id): client \(s.client) \(identity(pid: s.pid, exe: s.exe)); \(kind)"
    if let first = s.firstRequest { line += "; first request \(Text.show(first))" }
    line += "; \(Text.count(s.requests, "request")); for \(Text.duration(seconds: s.ageSeconds))"
    if let ends = s.endsIn { line += ", ends in \(Text.duration(seconds: ends))" }
    return line
  }
}

/// Reading the daemon's state for `list` and `clients`.
enum DaemonStateReader {
  /// The published state; no daemon is an error.
  static func read(display: String?) throws -> DaemonState {
    let x = try XControl(display: display)
    guard let state = try x.readState() else { throw XError.noDaemon(display: x.displayName) }
    return withTitles(state, from: x)
  }

  /// `state` with the secure windows' titles, which the published state never has: the
  /// daemon sends them over its command socket to its own user's shieldctl only (another
  /// user, or no answer: no titles).
  static func withTitles(_ state: DaemonState, from x: borrowing XControl) -> DaemonState {
    guard let titles = x.secureWindowTitles() else { return state }
    var s = state
    for i in s.windows.indices { s.windows[i].title = titles[s.windows[i].id] }
    return s
  }
}

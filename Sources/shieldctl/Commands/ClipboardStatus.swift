import CaptureShield
import Foundation

/// `shieldctl clipboard status [--json]`.
struct ClipboardStatusCommand: Command {
  static let name = "clipboard status"
  static let abstract = "Show whether copied text is guarded, from whom, and its reads."
  static let usage = "shieldctl clipboard status [--display D] [--json]"
  static let help = """
    OVERVIEW: Show whether copied text is guarded, from whom, and its reads.

    USAGE: shieldctl clipboard status [--display D] [--json]

    Reads the state the daemon publishes and shows, for each guarded selection
    (CLIPBOARD, PRIMARY): the client it was copied from (pid, executable), the size of
    the text, how long ago it was copied, when it will be cleared, and how many reads
    were served and refused. Never the text itself.

    OPTIONS:
      --json        Print the guard's status as JSON ({"running":false} without a
                    daemon, {"enabled":false} when the guard is off).
      --display D   The X display (default: $DISPLAY).
      -h, --help    Show this help.

    EXIT STATUS:
      0   the daemon runs
      1   no daemon runs on the display, or the display cannot be reached
      64  usage error
    """

  var display: String?
  var json: Bool

  static func parse(_ args: [String]) throws(UsageError) -> ClipboardStatusCommand {
    let p = try ArgumentScanner.scan(args, options: [.flag("--json"), .value("--display")])
    try p.expectPositionals(max: 0)
    return ClipboardStatusCommand(display: try Common.display(p), json: p.flag("--json"))
  }

  func run() throws -> Int32 {
    guard let state = try StatusCommand.publishedState(display: display, json: json) else { return ExitCode.failure }
    if json {
      if let c = state.clipboard { try Output.json(c) } else { print(#"{"enabled":false}"#) }
    } else {
      print(Self.summary(state.clipboard, now: Date().timeIntervalSince1970).joined(separator: "\n"))
    }
    return ExitCode.ok
  }

  /// The human-readable summary, one string per line.
  static func summary(_ c: DaemonState.ClipboardState?, now: Double) -> [String] {
    guard let c, c.enabled else { return ["copied-text guard: off (clipboard.enabled: false)"] }
    let clear = Text.duration(seconds: Double(c.clearAfterMs) / 1000)
    var out = [
      "copied-text guard: on (readers \(Text.show(c.readers)); clear after \(clear)"
        + (c.maxReads.map { " or \(Text.count($0, "read"))" } ?? "") + ")"
    ]
    if c.guarded.isEmpty { out.append("guarded: nothing") }
    for g in c.guarded {
      var line =
        "\(Text.show(g.selection)): \(Text.show(g.state)), from \(g.source) \(StatusCommand.identity(pid: g.pid, exe: g.exe))"
      if let size = g.size { line += ", \(Text.count(size, "byte"))" }
      line += ", copied \(Text.duration(seconds: max(0, now - g.since))) ago"
      if let at = g.clearsAt { line += ", cleared in \(Text.duration(seconds: max(0, at - now)))" }
      line += "; reads: \(g.readsServed) served, \(g.readsRefused) refused"
      out.append(line)
    }
    return out
  }
}

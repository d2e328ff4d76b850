import CaptureShield
import CaptureShieldCore
import Foundation

/// `shieldctl history`: what the daemon learned per program (`capture.learn`).
struct HistoryCommand: Command {
  static let name = "history"
  static let abstract = "List or forget what the daemon learned per program."
  static let usage = "shieldctl history [--json] [--forget PATH | --clear]"
  static let help = """
    OVERVIEW: List or forget what the daemon learned per program.

    USAGE: shieldctl history [--json] [--forget PATH | --clear]

    With 'capture.learn' on (the default), the daemon remembers per program file
    (device, inode, size and modification time of the executable, or of the script
    an interpreter runs) whether it made a capture request: such a program is
    treated as a known capturer for the first 5 seconds of each later connection
    ('known=learned' in the audit log), which pre-empts a screenshot tool's next
    use. A program seen starting 3 times without capturing is 'quiet': its starts
    skip 'capture.quarantine'. The file is
    $XDG_STATE_HOME/captureshield/history.json (default ~/.local/state/...); a
    running daemon takes an edit of it within 2 seconds.

    OPTIONS:
      --json          Print the entries as JSON.
      --forget PATH   Forget the programs last seen at PATH.
      --clear         Forget every program.
      -h, --help      Show this help.

    EXIT STATUS:
      0   listed, or forgotten
      1   no state directory, a broken file, PATH not in the history, or a write error
      64  usage error
    """

  var json: Bool
  var forget: String?
  var clear: Bool

  static func parse(_ args: [String]) throws(UsageError) -> HistoryCommand {
    let p = try ArgumentScanner.scan(args, options: [.flag("--json"), .value("--forget"), .flag("--clear")])
    try p.expectPositionals(max: 0)
    let forget = p.value("--forget")
    if forget != nil && p.flag("--clear") { throw UsageError("'--forget' and '--clear' exclude each other") }
    if forget?.isEmpty == true { throw UsageError("option '--forget' requires a program path") }
    return HistoryCommand(json: p.flag("--json"), forget: forget, clear: p.flag("--clear"))
  }

  func run() throws -> Int32 {
    guard let path = CaptureHistory.path(environment: ProcessInfo.processInfo.environment) else {
      throw RuntimeError("no state directory: neither XDG_STATE_HOME nor HOME is set")
    }
    var history = try HistoryFile.read(path) ?? CaptureHistory()
    if clear {
      let n = history.entries.count
      history.clear()
      try HistoryFile.write(history, to: path)
      print("forgot \(n) program\(n == 1 ? "" : "s")")
      return ExitCode.ok
    }
    if let forget {
      let n = history.forget(path: forget)
      guard n > 0 else { throw RuntimeError("\(Text.show(forget)) is not in the history (\(path))") }
      try HistoryFile.write(history, to: path)
      print("forgot \(Text.show(forget))")
      return ExitCode.ok
    }
    if json {
      try Output.json(history.sorted)
      return ExitCode.ok
    }
    if history.entries.isEmpty {
      print("no programs learned (\(path))")
      return ExitCode.ok
    }
    for e in history.sorted {
      let standing = history.standing(e.file)
      print(
        "\(standing.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0))\(Text.show(e.path))  starts \(e.starts), captures \(e.captures)"
      )
    }
    return ExitCode.ok
  }
}

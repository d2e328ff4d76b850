import CaptureShield

/// `shieldctl policy check FILE...`.
struct PolicyCheckCommand: Command {
  static let name = "policy check"
  static let abstract = "Check policy files for errors."
  static let usage = "shieldctl policy check FILE..."
  static let help = """
    OVERVIEW: Check policy files for errors.

    USAGE: shieldctl policy check FILE...

    Reads and validates each policy file as the daemon would, without a display or a
    daemon. A valid file is reported on standard output as
      FILE: ok (N secure rules, M allow, K known)
    counting its 'secure' rules and its 'capture.allow' and 'capture.known' entries
    (the built-in list of known capturers is not counted). Every problem of an invalid
    file is reported on standard error, one per line, as
      FILE:LINE:COLUMN: error: MESSAGE

    ARGUMENTS:
      FILE         A policy file (JSON5). Use -- before names that start with a dash.

    OPTIONS:
      -h, --help   Show this help.

    EXIT STATUS:
      0   every file is valid
      1   a file is invalid or cannot be read
      64  usage error
    """

  var files: [String]

  static func parse(_ args: [String]) throws(UsageError) -> PolicyCheckCommand {
    let p = try ArgumentScanner.scan(args, options: [])
    guard !p.positionals.isEmpty else { throw UsageError("missing policy file") }
    if p.positionals.contains("") { throw UsageError("empty file name") }
    return PolicyCheckCommand(files: p.positionals)
  }

  func run() throws -> Int32 {
    var status = ExitCode.ok
    for file in files {
      do throws(PolicyError) {
        let policy = try PolicyLoader.load(paths: [file])
        print("\(Text.show(file)): ok (\(Self.counts(policy)))")
      } catch {
        Output.error(error.description)
        status = ExitCode.failure
      }
    }
    return status
  }

  /// `2 secure rules, 1 allow, 0 known`: the file's own entries.
  static func counts(_ policy: Policy) -> String {
    let defaults = Policy.defaultKnownCapturers
    let known =
      policy.captureKnown.starts(with: defaults)
      ? policy.captureKnown.count - defaults.count : policy.captureKnown.count
    return "\(Text.count(policy.secure.count, "secure rule")), \(policy.captureAllow.count) allow, \(known) known"
  }
}

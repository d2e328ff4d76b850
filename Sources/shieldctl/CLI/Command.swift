/// Something `shieldctl help` can show: a command or a group of subcommands.
///
/// `help` is the complete `--help` text, kept as plain static text in the command's own
/// file: it is printed as is and will also be the source of the man page.
protocol HelpTopic {
  /// The words after `shieldctl`, e.g. `tag` or `policy check`.
  static var name: String { get }
  /// One line for command lists.
  static var abstract: String { get }
  /// The synopsis, e.g. `shieldctl tag [--display D] (WINDOW... | --pick)`.
  static var usage: String { get }
  /// The full `--help` text (ends with a newline).
  static var help: String { get }
}

/// A runnable (sub)command, in the manner of swift-argument-parser: `parse` checks every
/// argument before anything is done; `run` does the work.
protocol Command: HelpTopic {
  /// Parses and validates `args` (the arguments after the command's name).
  static func parse(_ args: [String]) throws(UsageError) -> Self
  /// Does the work. Returns the exit status; a thrown error is reported as
  /// `Error: <message>` with exit status 1.
  func run() throws -> Int32
}

/// A command whose only option is `--display` and that takes no other argument
/// (`reload`, `resume`, `clipboard clear`): `parse` comes with it.
protocol DisplayOnlyCommand: Command {
  init(display: String?)
}

extension DisplayOnlyCommand {
  static func parse(_ args: [String]) throws(UsageError) -> Self {
    let p = try ArgumentScanner.scan(args, options: [.value("--display")])
    try p.expectPositionals(max: 0)
    return Self(display: try Common.display(p))
  }
}

/// A command made of subcommands (`shieldctl policy check`, ...).
protocol CommandGroup: HelpTopic {
  static var subcommands: [any Command.Type] { get }
}

/// The arguments were wrong: reported with the usage line, exit status 64.
struct UsageError: Error, Equatable {
  var message: String
  init(_ message: String) { self.message = message }
}

/// A failure while running: reported as `Error: <message>`, exit status 1.
struct RuntimeError: Error, CustomStringConvertible {
  var message: String
  init(_ message: String) { self.message = message }
  var description: String { message }
}

/// Exit statuses.
enum ExitCode {
  static let ok: Int32 = 0
  static let failure: Int32 = 1
  /// EX_USAGE.
  static let usage: Int32 = 64
}

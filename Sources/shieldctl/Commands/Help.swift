/// `shieldctl help [COMMAND [SUBCOMMAND]]`.
struct HelpCommand: Command {
  static let name = "help"
  static let abstract = "Show help for a command."
  static let usage = "shieldctl help [COMMAND [SUBCOMMAND]]"
  static let help = """
    OVERVIEW: Show help for a command.

    USAGE: shieldctl help [COMMAND [SUBCOMMAND]]

    Prints the help of COMMAND (or of the subcommand, e.g. 'shieldctl help policy
    check') on standard output; with no COMMAND, the list of commands. The same text
    is printed by 'shieldctl COMMAND --help' (or -h).

    ARGUMENTS:
      COMMAND      A command, e.g. tag or policy.
      SUBCOMMAND   A subcommand of COMMAND, e.g. check.

    OPTIONS:
      -h, --help   Show this help.

    EXIT STATUS:
      0   the help was shown
      64  usage error (e.g. an unknown command)
    """

  var topic: any HelpTopic.Type

  static func parse(_ args: [String]) throws(UsageError) -> HelpCommand {
    let parsed = try ArgumentScanner.scan(args, options: [])
    return HelpCommand(topic: try Registry.topic(for: parsed.positionals))
  }

  func run() throws -> Int32 {
    print(topic.help)
    return ExitCode.ok
  }
}

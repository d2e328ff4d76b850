/// `shieldctl policy <subcommand>`.
enum PolicyGroup: CommandGroup {
  static let name = "policy"
  static let abstract = "Check policy files and explain decisions."
  static let usage = "shieldctl policy <subcommand>"
  static let help = """
    OVERVIEW: Check policy files and explain decisions.

    USAGE: shieldctl policy <subcommand>

    SUBCOMMANDS:
      check     Check policy files for errors.
      explain   Explain why a window is secure or not, rule by rule.

    OPTIONS:
      -h, --help   Show this help.

    See 'shieldctl policy <subcommand> --help' for the options of a subcommand.
    """

  static var subcommands: [any Command.Type] { [PolicyCheckCommand.self, PolicyExplainCommand.self] }
}

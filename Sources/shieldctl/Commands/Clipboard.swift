/// `shieldctl clipboard <subcommand>`.
enum ClipboardGroup: CommandGroup {
  static let name = "clipboard"
  static let abstract = "Show or clear the copied-text guard."
  static let usage = "shieldctl clipboard <subcommand>"
  static let help = """
    OVERVIEW: Show or clear the copied-text guard.

    USAGE: shieldctl clipboard <subcommand>

    Text copied from a secure window is taken over by the daemon, kept sealed in its
    memory and given only to the reader it was meant for (see docs/clipboard.md).
    These commands never show the text.

    SUBCOMMANDS:
      status    Show whether copied text is guarded, from whom, and its reads.
      clear     Clear the guarded text now.

    OPTIONS:
      -h, --help   Show this help.

    See 'shieldctl clipboard <subcommand> --help' for the options of a subcommand.
    """

  static var subcommands: [any Command.Type] { [ClipboardStatusCommand.self, ClipboardClearCommand.self] }
}

import CaptureShield

/// Every command and group, in the order the top-level help lists them.
enum Registry {
  enum Entry {
    case command(any Command.Type)
    case group(any CommandGroup.Type)

    var topic: any HelpTopic.Type {
      switch self {
      case .command(let c): return c
      case .group(let g): return g
      }
    }
  }

  static var topLevel: [Entry] {
    [
      .command(WatchCommand.self),
      .command(TagCommand.self),
      .command(UntagCommand.self),
      .command(ShieldCommand.self),
      .command(UnshieldCommand.self),
      .command(PauseCommand.self),
      .command(ResumeCommand.self),
      .command(ReloadCommand.self),
      .command(StatusCommand.self),
      .command(ListCommand.self),
      .command(ClientsCommand.self),
      .command(DoctorCommand.self),
      .command(HistoryCommand.self),
      .group(ClipboardGroup.self),
      .group(PolicyGroup.self),
      .command(TestWindowCommand.self),
      .command(HelpCommand.self),
    ]
  }

  /// Every help page: the top level, each command, each group and its subcommands (the
  /// input of a man page generator).
  static var allTopics: [any HelpTopic.Type] {
    var out: [any HelpTopic.Type] = [TopLevel.self]
    for entry in topLevel {
      out.append(entry.topic)
      if case .group(let g) = entry { out += g.subcommands.map { $0 as any HelpTopic.Type } }
    }
    return out
  }

  static func entry(named name: String) -> Entry? {
    topLevel.first { $0.topic.name == name }
  }

  /// The help topic for `words` (`["policy", "check"]`), or the usage error naming the
  /// first word that is not a command.
  static func topic(for words: [String]) throws(UsageError) -> any HelpTopic.Type {
    guard let first = words.first else { return TopLevel.self }
    guard let entry = entry(named: first) else { throw UsageError("unknown command '\(Text.show(first))'") }
    guard words.count > 1 else { return entry.topic }
    guard case .group(let group) = entry else {
      throw UsageError("'\(first)' has no subcommands; unexpected argument '\(Text.show(words[1]))'")
    }
    guard let sub = group.subcommand(named: words[1]) else {
      throw UsageError("unknown subcommand '\(Text.show(words[1]))' of '\(group.name)'")
    }
    guard words.count == 2 else { throw UsageError("unexpected argument '\(Text.show(words[2]))'") }
    return sub
  }
}

extension CommandGroup {
  static func subcommand(named word: String) -> (any Command.Type)? {
    subcommands.first { $0.name == name + " " + word }
  }
}

/// `shieldctl` itself.
enum TopLevel: HelpTopic {
  static let name = ""
  static let abstract = "Blank secure X11 windows while the screen is being captured."
  static let usage = "shieldctl <command> [options]"

  /// The overview, then one line per command (from each command's `abstract`).
  static var help: String {
    var names: [(String, String)] = []
    for entry in Registry.topLevel {
      switch entry {
      case .command(let c): names.append((c.name, c.abstract))
      case .group(let g):
        names.append((g.name, g.abstract))
        names += g.subcommands.map { ("  " + $0.name.split(separator: " ").last!, $0.abstract) }
      }
    }
    let width = names.map(\.0.count).max()! + 2
    let commands = names.map { "  " + $0.0 + String(repeating: " ", count: width - $0.0.count) + $0.1 }
    return """
      OVERVIEW: CaptureShield blanks secure X11 windows while the screen is being captured.

      USAGE: shieldctl <command> [options]

      COMMANDS:
      \(commands.joined(separator: "\n"))

      OPTIONS:
        -h, --help    Show this help.
        --version     Show the version.

      See 'shieldctl help <command>' (or 'shieldctl <command> --help') for the options
      of a command.

      EXIT STATUS:
        0   success
        1   failure (a window that does not exist, no daemon, an X error, an invalid
            policy, ...)
        64  usage error
      """
  }
}

/// Parses the command line and runs the command.
enum Dispatcher {
  static func main(_ args: [String]) -> Int32 {
    guard let first = args.first else {
      Output.error(TopLevel.help)
      return ExitCode.usage
    }
    if first == "--help" || first == "-h" {
      print(TopLevel.help)
      return ExitCode.ok
    }
    if first == "--version" {
      if args.count > 1 {
        return topLevelUsageError("unexpected argument '\(Text.show(args[1]))'")
      }
      print(CaptureShieldVersion.string)
      return ExitCode.ok
    }
    if first.hasPrefix("-") {
      return topLevelUsageError("unknown option '\(Text.show(first))'")
    }
    guard let entry = Registry.entry(named: first) else {
      return topLevelUsageError("unknown command '\(Text.show(first))'")
    }
    let rest = Array(args.dropFirst())
    switch entry {
    case .command(let command): return execute(command, rest)
    case .group(let group): return dispatch(group, rest)
    }
  }

  static func topLevelUsageError(_ message: String) -> Int32 {
    Output.usageError(message, usage: TopLevel.usage, helpCommand: "shieldctl --help")
    return ExitCode.usage
  }

  static func usageError(_ message: String, _ topic: any HelpTopic.Type) -> Int32 {
    Output.usageError(message, usage: topic.usage, helpCommand: "shieldctl \(topic.name) --help")
    return ExitCode.usage
  }

  static func dispatch(_ group: any CommandGroup.Type, _ args: [String]) -> Int32 {
    guard let first = args.first else {
      Output.error(group.help)
      return ExitCode.usage
    }
    if first == "--help" || first == "-h" {
      print(group.help)
      return ExitCode.ok
    }
    if first.hasPrefix("-") { return usageError("unknown option '\(Text.show(first))'", group) }
    guard let command = group.subcommand(named: first) else {
      return usageError("unknown subcommand '\(Text.show(first))'", group)
    }
    return execute(command, Array(args.dropFirst()))
  }

  /// Whether `--help` or `-h` appears among a command's `args` before any `--`.
  static func helpRequested(in args: [String]) -> Bool {
    args.prefix { $0 != "--" }.contains { $0 == "--help" || $0 == "-h" }
  }

  static func execute(_ type: any Command.Type, _ args: [String]) -> Int32 {
    if helpRequested(in: args) {
      print(type.help)
      return ExitCode.ok
    }
    let command: any Command
    do {
      command = try type.parse(args)
    } catch {
      return usageError(error.message, type)
    }
    do {
      return try command.run()
    } catch {
      Output.failure(Output.message(of: error))
      return ExitCode.failure
    }
  }
}

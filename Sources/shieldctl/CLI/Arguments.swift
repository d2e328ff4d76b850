/// One option a command accepts.
struct OptionSpec: Sendable {
  /// With the dashes, e.g. `--policy`.
  var name: String
  var takesValue: Bool
  /// Whether it may be given more than once (values are collected in order).
  var repeatable: Bool

  static func flag(_ name: String) -> OptionSpec {
    OptionSpec(name: name, takesValue: false, repeatable: true)
  }
  static func value(_ name: String, repeatable: Bool = false) -> OptionSpec {
    OptionSpec(name: name, takesValue: true, repeatable: repeatable)
  }
}

/// The result of scanning a command's arguments against its options.
struct ParsedArguments {
  private(set) var values: [String: [String]] = [:]
  private(set) var flags: Set<String> = []
  /// Arguments that are not options (everything after `--` included), in order.
  private(set) var positionals: [String] = []

  func flag(_ name: String) -> Bool { flags.contains(name) }
  /// The value of a single-valued option.
  func value(_ name: String) -> String? { values[name]?.last }
  /// Every value of a repeatable option, in order.
  func all(_ name: String) -> [String] { values[name] ?? [] }

  /// Fails unless there are at most `max` positional arguments.
  func expectPositionals(max: Int) throws(UsageError) {
    if positionals.count > max { throw UsageError("unexpected argument '\(positionals[max])'") }
  }

  fileprivate mutating func add(_ spec: OptionSpec, _ value: String?) throws(UsageError) {
    if let value {
      if !spec.repeatable && values[spec.name] != nil {
        throw UsageError("option '\(spec.name)' given more than once")
      }
      values[spec.name, default: []].append(value)
    } else {
      flags.insert(spec.name)
    }
  }

  fileprivate mutating func addPositional(_ argument: String) { positionals.append(argument) }
}

/// The shared argument syntax:
/// - `--opt value` and `--opt=value`; a flag given a value (`--json=yes`) is an error;
/// - a value cannot start with `--` when given as a separate argument (write `--opt=--x`);
/// - `--` ends the options: everything after it is positional;
/// - any other argument starting with `-` (except `-` itself) is an unknown option.
/// `--help`/`-h` are handled before scanning (see `Dispatcher.helpRequested(in:)`).
enum ArgumentScanner {
  static func scan(_ args: [String], options: [OptionSpec]) throws(UsageError) -> ParsedArguments {
    var parsed = ParsedArguments()
    var i = 0
    while i < args.count {
      let arg = args[i]
      i += 1
      if arg == "--" {
        for rest in args[i...] { parsed.addPositional(rest) }
        break
      }
      if arg.hasPrefix("--") {
        let name: String
        let inline: String?
        if let eq = arg.firstIndex(of: "=") {
          name = String(arg[..<eq])
          inline = String(arg[arg.index(after: eq)...])
        } else {
          name = arg
          inline = nil
        }
        guard let spec = options.first(where: { $0.name == name }) else {
          throw UsageError("unknown option '\(Text.show(name))'")
        }
        if !spec.takesValue {
          if inline != nil { throw UsageError("option '\(name)' does not take a value") }
          try parsed.add(spec, nil)
        } else if let inline {
          try parsed.add(spec, inline)
        } else {
          guard i < args.count, !args[i].hasPrefix("--") else {
            throw UsageError("option '\(name)' requires a value")
          }
          try parsed.add(spec, args[i])
          i += 1
        }
      } else if arg.hasPrefix("-") && arg != "-" {
        throw UsageError("unknown option '\(Text.show(arg))'")
      } else {
        parsed.addPositional(arg)
      }
    }
    return parsed
  }
}

// Runs the built `shieldctl` binary: help, usage errors, `policy check`, `policy explain`
// and the commands that need a display, pointed at one that does not exist. (Tests with a
// live X server and daemon are in IntegrationTests.)

import CaptureShield
import Foundation
import Testing

// MARK: - Running the binary

/// How a `shieldctl` run ended.
struct CLIRunResult: Sendable, CustomStringConvertible {
  var status: Int32
  var stdout: String
  var stderr: String

  var description: String { "exit \(status)\n--- stdout:\n\(stdout)--- stderr:\n\(stderr)---" }
}

/// The built `shieldctl` and how tests run it (also used by EscapingTests).
enum ShieldctlBinary {
  /// A display no X server listens on.
  static let missingDisplay = ":987"

  /// The `shieldctl` built next to this test bundle (also with `--scratch-path`), or
  /// `$SHIELDCTL_PATH`.
  static let executable: URL? = locate()

  static func locate() -> URL? {
    let fm = FileManager.default
    func executable(in directory: URL) -> URL? {
      let candidate = directory.appendingPathComponent("shieldctl")
      var isDirectory: ObjCBool = false
      guard fm.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
        fm.isExecutableFile(atPath: candidate.path)
      else { return nil }
      return candidate
    }
    if let path = ProcessInfo.processInfo.environment["SHIELDCTL_PATH"], !path.isEmpty {
      return URL(fileURLWithPath: path)
    }
    // The test bundle lives in the products directory (.build/<triple>/debug/...xctest);
    // walk up a few levels from it.
    var starts: [URL] = []
    if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      starts.append(URL(fileURLWithPath: exe))
    }
    if let first = CommandLine.arguments.first { starts.append(URL(fileURLWithPath: first)) }
    starts.append(Bundle.main.bundleURL)
    for start in starts {
      var directory = start.standardizedFileURL.deletingLastPathComponent()
      for _ in 0..<4 {
        if let found = executable(in: directory) { return found }
        directory = directory.deletingLastPathComponent()
      }
    }
    // Last resort: the package's default build directory.
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    return executable(in: root.appendingPathComponent(".build/debug"))
  }

  /// Runs `shieldctl args` in `directory` with `DISPLAY` at a display that does not exist,
  /// `HOME` at an empty directory (no user policy) and `XDG_CONFIG_HOME` unset, plus
  /// `environment`.
  static func run(
    _ args: [String], in directory: URL? = nil, environment: [String: String?] = [:]
  ) throws -> CLIRunResult {
    let executable = try #require(
      ShieldctlBinary.executable, "shieldctl not found near the test bundle; set SHIELDCTL_PATH")
    let scratch = try CLIScratchDir()
    var env = ProcessInfo.processInfo.environment
    env["DISPLAY"] = missingDisplay
    env["HOME"] = scratch.url.path
    env["XDG_CONFIG_HOME"] = nil
    for (key, value) in environment { env[key] = value }

    let outURL = scratch.url.appendingPathComponent("stdout")
    let errURL = scratch.url.appendingPathComponent("stderr")
    _ = fm.createFile(atPath: outURL.path, contents: nil)
    _ = fm.createFile(atPath: errURL.path, contents: nil)
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    defer {
      try? out.close()
      try? err.close()
    }

    let process = Process()
    process.executableURL = executable
    process.arguments = args
    process.environment = env
    process.currentDirectoryURL = directory ?? scratch.url
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let deadline = Date().addingTimeInterval(60)
    while process.isRunning {
      if Date() > deadline {
        process.terminate()
        process.waitUntilExit()
        Issue.record("shieldctl \(args) did not finish within 60 s")
        break
      }
      Thread.sleep(forTimeInterval: 0.005)
    }
    process.waitUntilExit()
    return CLIRunResult(
      status: process.terminationStatus,
      stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
      stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
  }

  static var fm: FileManager { .default }
}

/// A temporary directory, removed when the value goes away.
private final class CLIScratchDir: Sendable {
  let url: URL

  init() throws {
    url = FileManager.default.temporaryDirectory.appendingPathComponent("shieldctl-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(at: url) }

  /// Writes `text` to `name` (mode 0644: the policy loader refuses world-writable files).
  @discardableResult
  func write(_ name: String, _ text: String) throws -> URL {
    let file = url.appendingPathComponent(name)
    try Data(text.utf8).write(to: file)
    try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
    return file
  }
}

// MARK: - Golden help texts

/// The expected help texts, one file per command under Tests/CaptureShieldTests/Golden/help,
/// read through this file's path (the package's sources are where the tests run).
private enum GoldenHelp {
  static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Golden/help")

  /// With `UPDATE_GOLDEN=1` the golden test rewrites the files instead of comparing.
  static var updating: Bool { ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" }

  /// "" (the top level) is shieldctl.txt; "policy explain" is policy-explain.txt.
  static func fileName(_ command: String) -> String {
    (command.isEmpty ? "shieldctl" : command.replacingOccurrences(of: " ", with: "-")) + ".txt"
  }

  /// The commands and subcommands in the COMMANDS section of the top-level help: a word
  /// indented by two spaces is a command, one indented by four a subcommand of the one above.
  static func commands(listedIn help: String) -> [String] {
    var commands: [String] = []
    var parent = ""
    var inSection = false
    for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
      if line == "COMMANDS:" {
        inSection = true
        continue
      }
      guard inSection else { continue }
      if line.isEmpty { break }
      guard let word = line.split(separator: " ").first.map(String.init) else { continue }
      if line.hasPrefix("    ") {
        commands.append(parent + " " + word)
      } else {
        parent = word
        commands.append(word)
      }
    }
    return commands
  }

  static func write(_ text: String, command: String) throws {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try Data(text.utf8).write(to: directory.appendingPathComponent(fileName(command)))
  }

  /// Records an issue with a line diff unless `actual` is exactly the golden text.
  static func expectMatches(
    _ actual: String, command: String, args: [String], sourceLocation: Testing.SourceLocation = #_sourceLocation
  ) throws {
    let file = directory.appendingPathComponent(fileName(command))
    guard let data = FileManager.default.contents(atPath: file.path) else {
      let message =
        "no golden help \(file.path) for `shieldctl \(args.joined(separator: " "))`; create it with"
        + " `UPDATE_GOLDEN=1 swift test --filter CLITests`"
      Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
      return
    }
    let expected = String(decoding: data, as: UTF8.self)
    guard actual != expected else { return }
    let message =
      "`shieldctl \(args.joined(separator: " "))` differs from \(file.path)"
      + " (- golden, + actual; if the change is intended, review it and regenerate the files with"
      + " `UPDATE_GOLDEN=1 swift test --filter CLITests`):\n" + lineDiff(expected, actual)
    Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
  }

  /// A unified-style diff of two texts (longest common subsequence of lines), changed lines
  /// with two lines of context.
  static func lineDiff(_ old: String, _ new: String) -> String {
    let a = old.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let b = new.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    var lcs = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in stride(from: a.count - 1, through: 0, by: -1) {
      for j in stride(from: b.count - 1, through: 0, by: -1) {
        lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
      }
    }
    var lines: [(mark: Character, text: String)] = []
    var (i, j) = (0, 0)
    while i < a.count || j < b.count {
      if i < a.count, j < b.count, a[i] == b[j] {
        lines.append((" ", a[i]))
        (i, j) = (i + 1, j + 1)
      } else if i < a.count, j == b.count || lcs[i + 1][j] >= lcs[i][j + 1] {
        lines.append(("-", a[i]))
        i += 1
      } else {
        lines.append(("+", b[j]))
        j += 1
      }
    }
    let changed = lines.indices.filter { lines[$0].mark != " " }
    var out: [String] = []
    var last = -1
    for index in lines.indices where changed.contains(where: { abs($0 - index) <= 2 }) {
      if last >= 0 && index > last + 1 { out.append("@@") }
      out.append(String(lines[index].mark) + lines[index].text)
      last = index
    }
    return out.joined(separator: "\n")
  }
}

// MARK: - Tables

/// Each command's usage line, as its help and usage errors print it.
private let cliUsageLines: [String: String] = [
  "": "shieldctl <command> [options]",
  "watch": "shieldctl watch [--policy FILE]... [--display D] [--log-format text|json] [--syslog]",
  "tag": "shieldctl tag [--display D] [--remember] (WINDOW... | --pick)",
  "untag": "shieldctl untag [--display D] [--forget] (WINDOW... | --pick)",
  "shield": "shieldctl shield [--display D] WINDOW",
  "unshield": "shieldctl unshield [--display D] WINDOW",
  "pause": "shieldctl pause [--display D] [--for DURATION]",
  "resume": "shieldctl resume [--display D]",
  "reload": "shieldctl reload [--display D]",
  "status": "shieldctl status [--display D] [--json]",
  "list": "shieldctl list [--display D] [--json]",
  "clients": "shieldctl clients [--display D] [--json]",
  "history": "shieldctl history [--json] [--forget PATH | --clear]",
  "policy": "shieldctl policy <subcommand>",
  "policy check": "shieldctl policy check FILE...",
  "policy explain":
    "shieldctl policy explain [--policy FILE]... (--window-facts JSON | --window ID [--display D])",
  "test-window":
    "shieldctl test-window [--display D] [--color RRGGBB] [--title T] [--class C] [--geometry WxH+X+Y] [--tag] [--view WxH+X+Y] [--view-color RRGGBB] [--print-id]",
  "help": "shieldctl help [COMMAND [SUBCOMMAND]]",
]

/// Arguments that print the help of `command` ("" is the top level).
struct CLIHelpCase: Sendable, CustomTestStringConvertible {
  var args: [String]
  var command: String
  var testDescription: String { args.joined(separator: " ") }
}

private let cliHelpCases: [CLIHelpCase] =
  cliUsageLines.keys.sorted().flatMap { command -> [CLIHelpCase] in
    let words = command.split(separator: " ").map(String.init)
    return [
      CLIHelpCase(args: words + ["--help"], command: command),
      CLIHelpCase(args: words + ["-h"], command: command),
      CLIHelpCase(args: ["help"] + words, command: command),
    ]
  } + [
    // --help anywhere among a command's arguments, even after invalid ones.
    CLIHelpCase(args: ["tag", "0xZZ", "--bogus", "--help"], command: "tag"),
    CLIHelpCase(args: ["pause", "--for", "soon", "-h"], command: "pause"),
    CLIHelpCase(args: ["policy", "explain", "--window-facts", "{}", "--help"], command: "policy explain"),
    CLIHelpCase(args: ["help", "help"], command: "help"),
  ]

/// Arguments that are a usage error: the message and the command whose usage is shown.
struct CLIUsageCase: Sendable, CustomTestStringConvertible {
  var args: [String]
  var message: String
  var command: String
  var testDescription: String { args.joined(separator: " ") }
}

private let cliUsageCases: [CLIUsageCase] = [
  // The top level.
  .init(args: ["frobnicate"], message: "unknown command 'frobnicate'", command: ""),
  .init(args: ["--foo"], message: "unknown option '--foo'", command: ""),
  .init(args: ["--version", "extra"], message: "unexpected argument 'extra'", command: ""),
  // Options.
  .init(args: ["tag", "--foo"], message: "unknown option '--foo'", command: "tag"),
  .init(args: ["tag", "--foo=1", "0x1"], message: "unknown option '--foo'", command: "tag"),
  .init(args: ["tag", "-x"], message: "unknown option '-x'", command: "tag"),
  .init(args: ["status", "--json=yes"], message: "option '--json' does not take a value", command: "status"),
  .init(args: ["watch", "--policy"], message: "option '--policy' requires a value", command: "watch"),
  .init(args: ["watch", "--display", "--syslog"], message: "option '--display' requires a value", command: "watch"),
  .init(
    args: ["watch", "--display", ":1", "--display=:2"], message: "option '--display' given more than once",
    command: "watch"),
  .init(
    args: ["watch", "--log-format", "xml"], message: "invalid value 'xml' for '--log-format': expected text or json",
    command: "watch"),
  .init(args: ["watch", "extra"], message: "unexpected argument 'extra'", command: "watch"),
  // Window ids.
  .init(
    args: ["tag", "0xZZ"],
    message: "invalid window id '0xZZ': expected a decimal number or 0x followed by hex digits", command: "tag"),
  .init(
    args: ["untag", "12abc"],
    message: "invalid window id '12abc': expected a decimal number or 0x followed by hex digits", command: "untag"),
  .init(
    args: ["tag", "0x"], message: "invalid window id '0x': expected a decimal number or 0x followed by hex digits",
    command: "tag"),
  .init(
    args: ["tag", "-1"], message: "unknown option '-1'", command: "tag"),
  .init(args: ["tag", "0"], message: "invalid window id '0': must not be zero", command: "tag"),
  .init(args: ["tag", "0x0"], message: "invalid window id '0x0': must not be zero", command: "tag"),
  .init(
    args: ["tag", "0x100000000"], message: "invalid window id '0x100000000': out of range (the largest is 0xffffffff)",
    command: "tag"),
  .init(
    args: ["tag", "0x1", "4294967296"],
    message: "invalid window id '4294967296': out of range (the largest is 0xffffffff)", command: "tag"),
  .init(args: ["tag"], message: "missing window id (or --pick)", command: "tag"),
  .init(args: ["untag", "--pick", "0x1"], message: "give window ids or --pick, not both", command: "untag"),
  .init(args: ["shield"], message: "missing window id", command: "shield"),
  .init(args: ["unshield", "0x1", "0x2"], message: "unexpected argument '0x2'", command: "unshield"),
  // Durations.
  .init(
    args: ["pause", "--for", "soon"],
    message: "invalid duration 'soon' for '--for': expected a number followed by ms, s, m or h (e.g. 30s, 5m)",
    command: "pause"),
  .init(
    args: ["pause", "--for=10"],
    message: "invalid duration '10' for '--for': expected a number followed by ms, s, m or h (e.g. 30s, 5m)",
    command: "pause"),
  .init(
    args: ["pause", "--for", "0s"], message: "invalid duration '0s' for '--for': must be more than zero",
    command: "pause"),
  .init(args: ["pause", "--for"], message: "option '--for' requires a value", command: "pause"),
  .init(args: ["resume", "now"], message: "unexpected argument 'now'", command: "resume"),
  .init(args: ["reload", "--json"], message: "unknown option '--json'", command: "reload"),
  // Policy.
  .init(args: ["policy", "frobnicate"], message: "unknown subcommand 'frobnicate'", command: "policy"),
  .init(args: ["policy", "--foo"], message: "unknown option '--foo'", command: "policy"),
  .init(args: ["policy", "check"], message: "missing policy file", command: "policy check"),
  .init(
    args: ["policy", "check", "--strict", "a.json5"], message: "unknown option '--strict'", command: "policy check"),
  .init(
    args: ["policy", "explain"], message: "give --window-facts JSON or --window ID", command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window-facts", "{}", "--window", "0x1"],
    message: "give --window-facts or --window, not both", command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window-facts", #"{"class":"x","bogus":1}"#],
    message: "unknown key 'bogus' in --window-facts (known keys: class, instance, title, exe, comm, pid, uid, tag)",
    command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window-facts", #"{"pid":"12"}"#],
    message: "'pid' in --window-facts must be a non-negative integer", command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window-facts", #"{"class":5}"#],
    message: "'class' in --window-facts must be a string", command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window-facts", #"{"tag":"yes"}"#],
    message: "'tag' in --window-facts must be one of absent, secure, notSecure, malformed", command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window-facts", "[1]"],
    message: #"--window-facts must be a JSON object, e.g. {"class":"KeePassXC"}"#, command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window-facts", "{"], message: "--window-facts is not valid JSON",
    command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window-facts", "@/nonexistent/facts.json"],
    message: "cannot read window facts from '/nonexistent/facts.json': No such file or directory",
    command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window", "0"], message: "invalid window id '0': must not be zero",
    command: "policy explain"),
  .init(
    args: ["policy", "explain", "--window-facts", "{}", "--display", ":1"],
    message: "option '--display' is only used with --window", command: "policy explain"),
  // test-window.
  .init(
    args: ["test-window", "--color", "red"],
    message: "invalid colour 'red' for '--color': expected RRGGBB hex, e.g. ff0000", command: "test-window"),
  .init(
    args: ["test-window", "--geometry", "100"],
    message: "invalid geometry '100' for '--geometry': expected WxH or WxH+X+Y, e.g. 320x200+100+100",
    command: "test-window"),
  .init(
    args: ["test-window", "--geometry=0x10"],
    message: "invalid geometry '0x10' for '--geometry': expected WxH or WxH+X+Y, e.g. 320x200+100+100",
    command: "test-window"),
  // help.
  .init(args: ["help", "nope"], message: "unknown command 'nope'", command: "help"),
  .init(args: ["help", "policy", "nope"], message: "unknown subcommand 'nope' of 'policy'", command: "help"),
  // A control character in a bad argument is escaped, not echoed raw.
  .init(
    args: ["tag", "0x\u{1b}[2J"],
    message: #"invalid window id '0x\u{1b}[2J': expected a decimal number or 0x followed by hex digits"#, command: "tag"
  ),
]

// MARK: - Tests

@Suite("shieldctl command line")
struct CLITests {
  @Test("--help prints the usage line and exits 0", arguments: cliHelpCases)
  func help(_ c: CLIHelpCase) throws {
    let r = try ShieldctlBinary.run(c.args)
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout.contains("USAGE: \(cliUsageLines[c.command]!)\n"), "\(r)")
    #expect(r.stdout.hasPrefix("OVERVIEW: "), "\(r)")
    #expect(r.stderr.isEmpty, "\(r)")
    // Every way of asking prints exactly the command's golden help.
    if !GoldenHelp.updating { try GoldenHelp.expectMatches(r.stdout, command: c.command, args: c.args) }
  }

  /// `shieldctl --help`, `shieldctl help` and `--help` of every command `shieldctl help`
  /// lists print exactly Golden/help/<command>.txt (`UPDATE_GOLDEN=1` rewrites the files).
  @Test("help texts match the golden files")
  func goldenHelp() throws {
    let top = try ShieldctlBinary.run(["--help"])
    #expect(top.status == 0, "\(top)")
    let commands = GoldenHelp.commands(listedIn: top.stdout)
    #expect(commands.count >= 15, "too few commands parsed from `shieldctl --help`: \(commands)")
    var cases: [(args: [String], command: String)] = [(["--help"], ""), (["help"], "")]
    cases += commands.map { ($0.split(separator: " ").map(String.init) + ["--help"], $0) }
    for (args, command) in cases {
      let r = try ShieldctlBinary.run(args)
      #expect(r.status == 0, "shieldctl \(args.joined(separator: " ")): \(r)")
      #expect(r.stderr.isEmpty, "shieldctl \(args.joined(separator: " ")): \(r)")
      if GoldenHelp.updating {
        try GoldenHelp.write(r.stdout, command: command)
      } else {
        try GoldenHelp.expectMatches(r.stdout, command: command, args: args)
      }
    }
    // No golden file is left over from a command that no longer exists.
    let expectedFiles = Set(([""] + commands).map(GoldenHelp.fileName))
    let files = Set(try FileManager.default.contentsOfDirectory(atPath: GoldenHelp.directory.path))
    #expect(files == expectedFiles, "stale or missing golden help files: \(files.symmetricDifference(expectedFiles))")
  }

  @Test("usage errors exit 64 with the three-line report", arguments: cliUsageCases)
  func usageError(_ c: CLIUsageCase) throws {
    let r = try ShieldctlBinary.run(c.args)
    let see = c.command.isEmpty ? "shieldctl --help" : "shieldctl \(c.command) --help"
    let expected = "Error: \(c.message)\nUsage: \(cliUsageLines[c.command]!)\nSee '\(see)'.\n"
    #expect(r.status == 64, "\(r)")
    #expect(r.stderr == expected, "\(r)")
    #expect(r.stdout.isEmpty, "\(r)")
  }

  @Test func noArgumentsPrintsHelpToStderr() throws {
    let r = try ShieldctlBinary.run([])
    #expect(r.status == 64)
    #expect(r.stdout.isEmpty)
    #expect(r.stderr.contains("USAGE: shieldctl <command> [options]\n"))
    // Every command is listed.
    for command in cliUsageLines.keys where !command.isEmpty {
      let word = command.split(separator: " ").last!
      #expect(r.stderr.contains("  \(word) "), "\(command) is not listed")
    }
  }

  @Test func groupWithoutSubcommandPrintsItsHelpToStderr() throws {
    let r = try ShieldctlBinary.run(["policy"])
    #expect(r.status == 64)
    #expect(r.stdout.isEmpty)
    #expect(r.stderr.contains("USAGE: shieldctl policy <subcommand>\n"))
  }

  @Test func version() throws {
    let r = try ShieldctlBinary.run(["--version"])
    #expect(r.status == 0)
    #expect(r.stdout == CaptureShieldVersion.string + "\n")
    #expect(r.stderr.isEmpty)
  }

  // MARK: policy check

  static let validPolicy = """
    {
      version: 1,
      secure: [
        { class: "KeePassXC", name: "password manager" },
        { title: "*Online Banking*" },
      ],
      capture: {
        allow: [{ exe: "/usr/bin/flameshot", name: "screenshots" }],
        known: [{ comm: "myrecorder" }],
      },
    }
    """

  /// Two schema errors, at 3:15 and 4:19.
  static let invalidPolicy = """
    {
      version: 1,
      secure: [ { clas: "KeePassXC" } ],
      shield: { when: "sometimes" },
    }
    """

  @Test func policyCheckValidFile() throws {
    let dir = try CLIScratchDir()
    let file = try dir.write("policy.json5", Self.validPolicy)
    let r = try ShieldctlBinary.run(["policy", "check", file.path])
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout == "\(file.path): ok (2 secure rules, 1 allow, 1 known)\n", "\(r)")
    #expect(r.stderr.isEmpty, "\(r)")
  }

  @Test func policyCheckInvalidFile() throws {
    let dir = try CLIScratchDir()
    let file = try dir.write("bad.json5", Self.invalidPolicy)
    let r = try ShieldctlBinary.run(["policy", "check", file.path])
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout.isEmpty, "\(r)")
    let lines = r.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(lines.count == 3 && lines.last == "", "\(r)")
    #expect(lines.first?.hasPrefix("\(file.path):3:15: error: ") == true, "\(r)")
    #expect(lines.first?.contains("clas") == true, "\(r)")
    #expect(lines.dropFirst().first?.hasPrefix("\(file.path):4:19: error: ") == true, "\(r)")
    #expect(lines.dropFirst().first?.contains("sometimes") == true, "\(r)")
  }

  @Test func policyCheckReportsEveryFile() throws {
    let dir = try CLIScratchDir()
    let good = try dir.write("good.json5", Self.validPolicy)
    let syntax = try dir.write("syntax.json5", "{ version: 1,\n  secure: [ { class: \"x\" } \n")
    let r = try ShieldctlBinary.run(["policy", "check", syntax.path, good.path, "missing.json5"], in: dir.url)
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout == "\(good.path): ok (2 secure rules, 1 allow, 1 known)\n", "\(r)")
    let lines = r.stderr.split(separator: "\n").map(String.init)
    #expect(lines.count == 2, "\(r)")
    #expect(lines.first?.hasPrefix("\(syntax.path):") == true && lines.first?.contains(": error: ") == true, "\(r)")
    #expect(lines.last?.hasPrefix("missing.json5:1:1: error: ") == true, "\(r)")
  }

  @Test func doubleDashEndsOptions() throws {
    let dir = try CLIScratchDir()
    try dir.write("--odd.json5", "{ version: 1 }")
    let r = try ShieldctlBinary.run(["policy", "check", "--", "--odd.json5"], in: dir.url)
    #expect(r.status == 0, "\(r)")
    #expect(r.stdout == "--odd.json5: ok (0 secure rules, 0 allow, 0 known)\n", "\(r)")
  }

  // MARK: policy explain

  @Test func explainMatchingRule() throws {
    let dir = try CLIScratchDir()
    let file = try dir.write("policy.json5", Self.validPolicy)
    let facts = #"{"class":"KeePassXC","title":"db","exe":"/usr/bin/keepassxc","pid":12,"uid":1000}"#
    let r = try ShieldctlBinary.run(["policy", "explain", "--policy", file.path, "--window-facts", facts])
    #expect(r.status == 0, "\(r)")
    #expect(r.stderr.isEmpty, "\(r)")
    let lines = r.stdout.split(separator: "\n").map(String.init)
    #expect(
      lines == [
        "policy: \(file.path)",
        #"facts: class "KeePassXC", title "db", exe "/usr/bin/keepassxc", pid 12, uid 1000"#,
        "tag: none",
        #"rule #1 "password manager" (\#(file.path):4:5): class = "KeePassXC" (is "KeePassXC") -> MATCH -> secure (first match wins)"#,
        #"rule #2 rule (\#(file.path):5:5): title != "*Online Banking*" (is "db") -> no match"#,
        #"built-in: KeePassXC (built-in rule 1 of \#(Policy.defaultSecure.count)): exe = "*/keepassxc" (is "/usr/bin/keepassxc") -> matches, but an earlier rule already decided"#,
        #"built-in: KeePassXC (built-in rule 2 of \#(Policy.defaultSecure.count)): class = "KeePassXC" (is "KeePassXC") -> matches, but an earlier rule already decided"#,
        #"decision: SECURE (rule #1 "password manager" (\#(file.path):4:5))"#,
        #"note: rule #1 "password manager" (\#(file.path):4:5) looks at class, \#(Self.rewritable)"#,
        #"note: rule #2 rule (\#(file.path):5:5) looks at title, \#(Self.rewritable)"#,
        "capture: ordinary client: a capture session starts at its first capture request",
        "keyloggers: not allowed: without the Xorg module, listening to the keyboard is audited (keylogger-suspected) and named when a secure window has the focus",
      ], "\(r)")
  }

  /// The rest of `policy explain`'s note on a rule that looks at class, instance or title.
  static let rewritable =
    "which any X client can rewrite on any window (ChangeProperty): another client can take a window out of this rule. Protection that holds: the window's own tag (_CAPTURE_SHIELD_SECURE), or a rule on exe (from the X server and /proc)"

  @Test func explainKeyloggerAllowed() throws {
    let dir = try CLIScratchDir()
    let file = try dir.write("policy.json5", Self.validPolicy)
    let facts = #"{"exe":"/usr/bin/xbindkeys","pid":41}"#
    let r = try ShieldctlBinary.run(["policy", "explain", "--policy", file.path, "--window-facts", facts])
    #expect(r.status == 0, "\(r)")
    let lines = r.stdout.split(separator: "\n").map(String.init)
    #expect(
      lines.last
        == #"keyloggers: allowed by keyloggers.allow "default: xbindkeys": the client may listen to the keyboard without an audit record or a notice"#,
      "\(r)")
  }

  @Test func explainNoMatchingRule() throws {
    let dir = try CLIScratchDir()
    let file = try dir.write("policy.json5", Self.validPolicy)
    let facts = #"{"class":"firefox","title":"News","exe":"/usr/bin/obs","pid":40,"tag":"notSecure"}"#
    let r = try ShieldctlBinary.run(["policy", "explain", "--policy=\(file.path)", "--window-facts=\(facts)"])
    #expect(r.status == 0, "\(r)")
    let lines = r.stdout.split(separator: "\n").map(String.init)
    #expect(lines.contains("tag: _CAPTURE_SHIELD_SECURE=0 (rules still apply)"), "\(r)")
    #expect(lines.contains { $0.hasPrefix("rule #1 ") && $0.hasSuffix("-> no match") }, "\(r)")
    #expect(lines.contains { $0.hasPrefix("rule #2 ") && $0.hasSuffix("-> no match") }, "\(r)")
    #expect(lines.contains { $0.hasPrefix("decision: not secure") }, "\(r)")
    #expect(
      lines.dropLast().last
        == #"capture: known capturer by capture.known "default: obs": capturing from the moment the client connects"#
        + " until it makes no capture request for 5s (capture.idle), then again at its next one",
      "\(r)")
  }

  @Test func explainFactsFromFileWithTagAndAllowedClient() throws {
    let dir = try CLIScratchDir()
    let file = try dir.write("policy.json5", Self.validPolicy)
    try dir.write("facts.json", #"{"class":"Flameshot","exe":"/usr/bin/flameshot","pid":7,"tag":"secure"}"#)
    let r = try ShieldctlBinary.run(
      ["policy", "explain", "--policy", file.path, "--window-facts", "@facts.json"], in: dir.url)
    #expect(r.status == 0, "\(r)")
    let lines = r.stdout.split(separator: "\n").map(String.init)
    #expect(lines.contains("tag: _CAPTURE_SHIELD_SECURE=1 -> secure"), "\(r)")
    #expect(lines.contains("decision: SECURE (tag)"), "\(r)")
    #expect(
      lines.dropLast().last?.hasPrefix(#"capture: allowed by capture.allow "screenshots" (\#(file.path):"#) == true,
      "\(r)")
    #expect(lines.last?.hasPrefix("keyloggers: not allowed") == true, "\(r)")
  }

  @Test func explainInvalidPolicyFails() throws {
    let dir = try CLIScratchDir()
    let file = try dir.write("bad.json5", Self.invalidPolicy)
    let r = try ShieldctlBinary.run(["policy", "explain", "--policy", file.path, "--window-facts", "{}"])
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout.isEmpty, "\(r)")
    #expect(r.stderr.hasPrefix("Error: invalid policy:\n\(file.path):3:15: error: "), "\(r)")
    #expect(r.stderr.contains("\n\(file.path):4:19: error: "), "\(r)")
  }

  @Test(
    "explain without --policy and without policy files uses the built-in defaults",
    .enabled(if: !FileManager.default.fileExists(atPath: PolicyLoader.systemDirectory)))
  func explainBuiltInDefaults() throws {
    let r = try ShieldctlBinary.run(["policy", "explain", "--window-facts", #"{"class":"KeePassXC"}"#])
    #expect(r.status == 0, "\(r)")
    let lines = r.stdout.split(separator: "\n").map(String.init)
    #expect(lines.first?.hasPrefix("policy: built-in defaults (no policy file found") == true, "\(r)")
    #expect(lines.contains("rules: none"), "\(r)")
    // The built-in secure list: KeePassXC's class rule (its exe is not known here).
    #expect(
      lines.contains(
        #"built-in: KeePassXC (built-in rule 2 of \#(Policy.defaultSecure.count)): class = "KeePassXC" (is "KeePassXC") -> MATCH -> secure"#
      ), "\(r)")
    #expect(lines.contains("decision: SECURE (built-in: KeePassXC)"), "\(r)")
    #expect(lines.contains("note: built-in: KeePassXC looks at class, \(Self.rewritable)"), "\(r)")
    #expect(lines.dropLast().last?.hasPrefix("capture: unidentified client (no pid)") == true, "\(r)")
    #expect(lines.last?.hasPrefix("keyloggers: unidentified client") == true, "\(r)")
  }

  // MARK: Commands that need a display

  @Test func statusWithoutDisplay() throws {
    let r = try ShieldctlBinary.run(["status"])
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout.isEmpty, "\(r)")
    #expect(r.stderr == "Error: \(XError.cannotConnect(display: ShieldctlBinary.missingDisplay))\n", "\(r)")
  }

  @Test func statusJSONWithoutDisplay() throws {
    let r = try ShieldctlBinary.run(["status", "--json"])
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout == #"{"running":false}"# + "\n", "\(r)")
    #expect(r.stderr.hasPrefix("Error: "), "\(r)")
  }

  @Test(
    "commands that talk to the display fail with exit 1",
    arguments: [
      ["list"], ["clients", "--json"], ["tag", "0x1200004"], ["untag", "18874372"], ["shield", "0x1"],
      ["unshield", "0x1"], ["pause"], ["pause", "--for", "5m"], ["resume"], ["reload"],
      ["policy", "explain", "--window", "0x1"],
    ])
  func needsDisplay(_ args: [String]) throws {
    let r = try ShieldctlBinary.run(args)
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout.isEmpty, "\(r)")
    #expect(r.stderr == "Error: \(XError.cannotConnect(display: ShieldctlBinary.missingDisplay))\n", "\(r)")
  }

  @Test func displayOptionOverridesEnvironment() throws {
    let r = try ShieldctlBinary.run(["status", "--display=:986"], environment: ["DISPLAY": ":0"])
    #expect(r.status == 1, "\(r)")
    #expect(r.stderr == "Error: \(XError.cannotConnect(display: ":986"))\n", "\(r)")
  }
}

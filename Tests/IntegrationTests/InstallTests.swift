// `make install DESTDIR=<temp> PREFIX=/usr` for real: every file in place with its mode,
// each one valid for the tool that reads it (systemd, man, the shells, shieldctl itself),
// and `make uninstall` removing exactly what was installed.
//
// `make install` builds the release binary. A `swift test` on the default build
// directory holds the lock of `.build` while the tests run, so a nested `swift build` in
// it would wait forever: the install builds in a scratch path of its own,
// `.build/install-test` (INSTALL_BUILD_FLAGS). The first run is a full release build.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

/// The package's root directory (this file is Tests/IntegrationTests/InstallTests.swift).
private let installPackageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent().path

/// Every file `make install PREFIX=/usr` installs, relative to DESTDIR, with its mode.
private let installExpectedFiles: [(path: String, mode: mode_t)] = [
  ("usr/bin/shieldctl", 0o755),
  ("usr/lib/systemd/user/captureshield.service", 0o644),
  ("etc/xdg/autostart/captureshield.desktop", 0o644),
  ("usr/share/doc/captureshield/policy.example.json5", 0o644),
  ("usr/share/man/man1/shieldctl.1", 0o644),
  ("usr/share/bash-completion/completions/shieldctl", 0o644),
  ("usr/share/zsh/site-functions/_shieldctl", 0o644),
  ("usr/share/fish/vendor_completions.d/shieldctl.fish", 0o644),
]

/// The environment for `make` and the tools: this process's, without what would change
/// the install (make's own variables and a stray DESTDIR/PREFIX/SYSCONFDIR).
private func installToolEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
  var env = ProcessInfo.processInfo.environment
  for name in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "DESTDIR", "PREFIX", "SYSCONFDIR"] {
    env[name] = nil
  }
  env["LC_ALL"] = "C.UTF-8"
  return env.merging(extra) { $1 }
}

/// `installToolEnvironment()` with the installed bin directory first in PATH (the completions run
/// the `shieldctl` they complete).
private func installedPathEnvironment(_ s: StagedInstall.Staged) -> [String: String] {
  var env = installToolEnvironment()
  env["PATH"] = s.path("usr/bin") + ":" + (env["PATH"] ?? "/usr/bin:/bin")
  return env
}

private func installTool(_ name: String) -> String? {
  findExecutable(name, environment: installToolEnvironment())
}

/// Runs `make TARGET DESTDIR=destdir PREFIX=/usr` in the package root, niced: its release
/// build runs next to the timing-sensitive integration tests.
@discardableResult
private func runMake(_ target: String, destdir: String, _ extra: [String] = []) async throws -> CommandResult {
  let make = try #require(installTool("make"), "make is not installed")
  let arguments =
    [
      "-C", installPackageRoot, target, "DESTDIR=\(destdir)", "PREFIX=/usr",
      "INSTALL_BUILD_FLAGS=--scratch-path \(installPackageRoot)/.build/install-test",
    ] + extra
  let result: CommandResult
  if let nice = installTool("nice") {
    result = try await runCommand(
      nice, ["-n", "10", make] + arguments, environment: installToolEnvironment(), timeout: .seconds(40 * 60))
  } else {
    result = try await runCommand(make, arguments, environment: installToolEnvironment(), timeout: .seconds(40 * 60))
  }
  try #require(
    result.succeeded,
    "make \(target) failed: \(result.status)\n--- stdout (end):\n\(result.stdoutText.suffix(4000))\n--- stderr (end):\n\(result.stderrText.suffix(4000))"
  )
  return result
}

/// Every entry below `directory` that is not a directory, relative to it, sorted.
private func installedNonDirectories(under directory: String) -> [String] {
  guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
  var out: [String] = []
  while let relative = walker.nextObject() as? String {
    var info = stat()
    if lstat(directory + "/" + relative, &info) == 0, info.st_mode & S_IFMT != S_IFDIR { out.append(relative) }
  }
  return out.sorted()
}

/// The `key=value` lines of an INI-style file (systemd unit, desktop entry) by section;
/// a repeated key keeps every value.
private func installIniSections(_ text: String) -> [String: [String: [String]]] {
  var sections: [String: [String: [String]]] = [:]
  var current = ""
  for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
    let line = raw.trimmingCharacters(in: .whitespaces)
    if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
    if line.hasPrefix("[") && line.hasSuffix("]") {
      current = String(line.dropFirst().dropLast())
      sections[current, default: [:]] = sections[current] ?? [:]
      continue
    }
    guard let eq = line.firstIndex(of: "=") else { continue }
    let key = line[..<eq].trimmingCharacters(in: .whitespaces)
    let value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
    sections[current, default: [:]][key, default: []].append(value)
  }
  return sections
}

private func readText(_ path: String) throws -> String {
  try String(contentsOfFile: path, encoding: .utf8)
}

// MARK: - The help texts, the source of truth for commands and options

/// What `shieldctl help` and every `shieldctl COMMAND --help` say: the commands (`policy
/// check` is one) and the options of each (`""` is the top level).
private struct HelpFacts {
  var commands: [String] = []
  var options: [String: [String]] = [:]

  /// The commands made of subcommands (`policy`).
  var groups: [String] {
    commands.filter { c in !c.contains(" ") && commands.contains { $0.hasPrefix(c + " ") } }
  }

  func subcommands(of group: String) -> Set<String> {
    Set(commands.filter { $0.hasPrefix(group + " ") }.map { String($0.dropFirst(group.count + 1)) })
  }

  static func read(_ shieldctl: String) async throws -> HelpFacts {
    var facts = HelpFacts()
    let top = try await runCommand(shieldctl, ["help"], environment: installToolEnvironment()).checked().stdoutText
    var group = ""
    for line in section("COMMANDS:", of: top) {
      let word = String(line.split(separator: " ")[0])
      if line.hasPrefix("    ") {
        facts.commands.append(group + " " + word)
      } else {
        group = word
        facts.commands.append(word)
      }
    }
    facts.options[""] = options(in: top)
    for command in facts.commands {
      let words = command.split(separator: " ").map(String.init)
      let help = try await runCommand(shieldctl, words + ["--help"], environment: installToolEnvironment()).checked()
      facts.options[command] = options(in: help.stdoutText)
    }
    return facts
  }

  /// The lines of the block under `heading` (up to the next blank line).
  static func section(_ heading: String, of text: String) -> [String] {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard let start = lines.firstIndex(of: heading) else { return [] }
    return Array(lines[(start + 1)...].prefix { !$0.isEmpty })
  }

  /// `-h`, `--help`, `--display`, ...: the options an OPTIONS block lists.
  static func options(in help: String) -> [String] {
    var out: [String] = []
    for line in section("OPTIONS:", of: help) where line.hasPrefix("  -") {
      let term = line.dropFirst(2).components(separatedBy: "  ")[0]
      for part in term.components(separatedBy: ", ") {
        out.append(String(part.split(separator: " ")[0]))
      }
    }
    return out
  }
}

// MARK: - The staged install shared by the suite

/// `make install` into a temporary DESTDIR once for the suite, removed afterwards.
private struct StagedInstall: SuiteTrait, TestScoping {
  @TaskLocal static var current: Staged?

  struct Staged: Sendable {
    var destdir: String
    var makeOutput: String
    func path(_ relative: String) -> String { destdir + "/" + relative }
    var shieldctl: String { path("usr/bin/shieldctl") }
  }

  var isRecursive: Bool { false }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    let destdir = try makeTemporaryDirectory(prefix: "captureshield-install")
    defer { removeTree(destdir) }
    let result = try await runMake("install", destdir: destdir)
    try await Self.$current.withValue(Staged(destdir: destdir, makeOutput: result.stdoutText)) {
      try await function()
    }
  }
}

extension Trait where Self == StagedInstall {
  fileprivate static var stagedInstall: StagedInstall { StagedInstall() }
}

private func currentStagedInstall() throws -> StagedInstall.Staged {
  try #require(StagedInstall.current, "the suite's `make install` did not run")
}

// MARK: - Tests

@Suite("make install / make uninstall", .serialized, .timeLimit(.minutes(45)), .stagedInstall)
struct InstallTests {
  @Test("installs exactly the expected files, the binary 0755 and the others 0644")
  func filesAndModes() throws {
    let s = try currentStagedInstall()
    #expect(
      installedNonDirectories(under: s.destdir) == installExpectedFiles.map(\.path).sorted(),
      "make output:\n\(s.makeOutput)")
    for (relative, mode) in installExpectedFiles {
      var info = stat()
      guard lstat(s.path(relative), &info) == 0 else {
        Issue.record("\(relative) is missing")
        continue
      }
      #expect(info.st_mode & S_IFMT == S_IFREG, "\(relative) is not a regular file")
      let actual = info.st_mode & 0o7777
      #expect(actual == mode, "\(relative): mode \(String(actual, radix: 8)), expected \(String(mode, radix: 8))")
    }
    #expect(access(s.shieldctl, X_OK) == 0, "the installed shieldctl is not executable")
  }

  @Test("the installed binary runs")
  func binaryRuns() async throws {
    let s = try currentStagedInstall()
    let version = try await runCommand(s.shieldctl, ["--version"], environment: installToolEnvironment())
    #expect(version.succeeded && !version.stdoutText.isEmpty, "\(version)")
  }

  @Test("the systemd user unit has the required settings")
  func unitSettings() throws {
    let unit = installIniSections(
      try readText(try currentStagedInstall().path("usr/lib/systemd/user/captureshield.service")))
    #expect(unit["Unit"]?["PartOf"] == ["graphical-session.target"])
    #expect(unit["Unit"]?["After"] == ["graphical-session.target"])
    // READY=1 and WATCHDOG=1 from the daemon (sd_notify), only from its main process.
    #expect(unit["Service"]?["Type"] == ["notify"])
    #expect(unit["Service"]?["NotifyAccess"] == ["main"])
    #expect(unit["Service"]?["WatchdogSec"] == ["10s"])
    #expect(unit["Service"]?["ExecStart"] == ["/usr/bin/shieldctl watch"])
    #expect(unit["Service"]?["Restart"] == ["on-failure"])
    #expect(unit["Service"]?["RestartSec"] == ["2"])
    let prevent = Set((unit["Service"]?["RestartPreventExitStatus"] ?? []).flatMap { $0.split(separator: " ") })
    #expect(prevent == ["75", "78"], "75 (another daemon owns the display) and 78 (invalid policy) must not restart")
    // 69 (the X server went away) restarts: Restart=on-failure covers it unless prevented.
    #expect(!prevent.contains("69"))
    #expect(unit["Install"]?["WantedBy"] == ["graphical-session.target"])
  }

  @Test(
    "systemd-analyze verify accepts the unit",
    .enabled(if: installTool("systemd-analyze") != nil, "systemd-analyze is not installed: the unit is not verified"))
  func systemdAnalyzeVerify() async throws {
    let s = try currentStagedInstall()
    let analyze = try #require(installTool("systemd-analyze"))
    let scratch = try makeTemporaryDirectory(prefix: "captureshield-verify")
    defer { removeTree(scratch) }
    // The unit names /usr/bin/shieldctl, which is in DESTDIR: verify a copy naming that.
    let unit = try readText(s.path("usr/lib/systemd/user/captureshield.service"))
      .replacingOccurrences(of: "/usr/bin/shieldctl", with: s.shieldctl)
    let copy = scratch + "/captureshield.service"
    try unit.write(toFile: copy, atomically: true, encoding: .utf8)
    try FileManager.default.createDirectory(atPath: scratch + "/run", withIntermediateDirectories: true)
    // Documentation=man:shieldctl(1) is checked against the installed man page.
    var arguments = ["--user", "verify", copy]
    if installTool("man") == nil { arguments.insert("--man=no", at: 1) }
    let result = try await runCommand(
      analyze, arguments,
      environment: installToolEnvironment(["XDG_RUNTIME_DIR": scratch + "/run", "MANPATH": s.path("usr/share/man")]),
      timeout: .seconds(60))
    #expect(result.succeeded, "\(result)")
    #expect(
      result.stderrText.isEmpty && result.stdoutText.isEmpty, "warnings:\n\(result.stderrText)\(result.stdoutText)")
  }

  @Test("the autostart entry starts the daemon, with TryExec, in every desktop")
  func autostartEntry() throws {
    let entry = installIniSections(
      try readText(try currentStagedInstall().path("etc/xdg/autostart/captureshield.desktop")))
    let main = try #require(entry["Desktop Entry"], "no [Desktop Entry] group")
    #expect(main["Type"] == ["Application"])
    #expect(main["Exec"] == ["/usr/bin/shieldctl watch"])
    #expect(main["TryExec"] == ["/usr/bin/shieldctl"])
    #expect(main["X-GNOME-Autostart-enabled"] == ["true"])
    #expect(main["OnlyShowIn"] == nil)
    #expect(main["NotShowIn"] == nil)
    #expect(main["Hidden"] == nil)
    #expect(!(main["Name"] ?? []).isEmpty)
  }

  @Test(
    "desktop-file-validate accepts the autostart entry",
    .enabled(if: installTool("desktop-file-validate") != nil, "desktop-file-validate is not installed"))
  func desktopFileValidate() async throws {
    let s = try currentStagedInstall()
    let result = try await runCommand(
      try #require(installTool("desktop-file-validate")), [s.path("etc/xdg/autostart/captureshield.desktop")],
      environment: installToolEnvironment())
    #expect(
      result.succeeded && result.stdoutText.isEmpty && result.stderrText.isEmpty, "\(result)\n\(result.stdoutText)")
  }

  @Test("the example policy passes the installed `shieldctl policy check`")
  func examplePolicyChecks() async throws {
    let s = try currentStagedInstall()
    let example = s.path("usr/share/doc/captureshield/policy.example.json5")
    let result = try await runCommand(s.shieldctl, ["policy", "check", example], environment: installToolEnvironment())
    #expect(result.succeeded, "\(result)")
    #expect(result.stdoutText.hasPrefix(example + ": ok"), "\(result.stdoutText)")
  }

  @Test("the man page has the usual sections and one per command, and covers every option")
  func manPageContents() async throws {
    let s = try currentStagedInstall()
    let page = try readText(s.path("usr/share/man/man1/shieldctl.1"))
    // Without the break points (\:) and no-hyphenation marks (\%) in paths.
    let plain = page.replacingOccurrences(of: "\\:", with: "").replacingOccurrences(of: "\\%", with: "")
    func mentions(_ text: String) -> Bool { plain.contains(text) }
    let sections = page.split(separator: "\n").filter { $0.hasPrefix(".SH ") }.map { String($0.dropFirst(4)) }
    for name in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "FILES", "SEE ALSO"] {
      #expect(sections.contains(name), "no \(name) section; sections: \(sections)")
    }
    let help = try await HelpFacts.read(s.shieldctl)
    for command in help.commands {
      #expect(mentions(".SS \"shieldctl \(roff(command))\""), "no section for \(command)")
    }
    for option in Set(help.options.values.joined()) {
      #expect(mentions(roff(option)), "the man page does not mention \(option)")
    }
    for code in ["64", "69", "75", "78"] {
      #expect(mentions(".TP\n\\fB\(code)\\fR"), "EXIT STATUS does not list \(code)")
    }
    for path in [
      "/usr/share/doc/captureshield/policy.example.json5", "/usr/lib/systemd/user/captureshield.service",
      "/etc/xdg/autostart/captureshield.desktop", "/etc/captureshield/policy.d",
    ] {
      #expect(mentions(path), "FILES does not name \(path)")
    }
  }

  private func roff(_ text: String) -> String { text.replacingOccurrences(of: "-", with: "\\-") }

  @Test(
    "the man page renders without warnings (groff, man -l)",
    .enabled(if: installTool("groff") != nil, "groff is not installed: the man page is not rendered"))
  func manPageRenders() async throws {
    let s = try currentStagedInstall()
    let page = s.path("usr/share/man/man1/shieldctl.1")
    let groff = try await runCommand(
      try #require(installTool("groff")), ["-man", "-Tutf8", "-ww", "-z", page], environment: installToolEnvironment())
    #expect(groff.succeeded && groff.stderrText.isEmpty, "groff: \(groff)")
    guard let man = installTool("man") else {
      print("InstallTests: man is not installed; the page was rendered with groff only")
      return
    }
    let rendered = try await runCommand(
      man, ["-l", page], environment: installToolEnvironment(["MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"]))
    #expect(rendered.succeeded && rendered.stderrText.isEmpty, "man -l: \(rendered)")
    #expect(rendered.stdoutText.contains("SHIELDCTL(1)"))
    #expect(rendered.stdoutText.contains("shieldctl policy check"))
  }

  @Test("the bash completion parses and completes every command and option")
  func bashCompletion() async throws {
    let s = try currentStagedInstall()
    let bash = try #require(installTool("bash"), "bash is not installed")
    let file = s.path("usr/share/bash-completion/completions/shieldctl")
    let syntax = try await runCommand(bash, ["-n", file], environment: installToolEnvironment())
    #expect(syntax.succeeded && syntax.stderrText.isEmpty, "bash -n: \(syntax)")

    // Completes in a plain bash (without the bash-completion library: the fallback).
    func complete(_ words: [String]) async throws -> Set<String> {
      let script = """
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _shieldctl shieldctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
        printf '%s\\n' "${COMPREPLY[@]}"
        """
      let result = try await runCommand(
        bash, ["-c", script, "bash", file, "shieldctl"] + words, environment: installedPathEnvironment(s))
      #expect(result.succeeded, "\(result)")
      return Set(result.stdoutText.split(separator: "\n").map(String.init))
    }

    let help = try await HelpFacts.read(s.shieldctl)
    let topLevel = Set(help.commands.filter { !$0.contains(" ") })
    #expect(try await complete([""]) == topLevel)
    for group in help.groups {
      #expect(try await complete([group, ""]) == help.subcommands(of: group))
      #expect(try await complete(["help", group, ""]) == help.subcommands(of: group))
    }
    #expect(try await complete(["help", ""]) == topLevel)
    #expect(try await complete(["watch", "--log-format", ""]) == ["text", "json"])
    for (command, options) in help.options {
      let words = command.isEmpty ? [] : command.split(separator: " ").map(String.init)
      let offered = try await complete(words + ["-"])
      let missing = Set(options).subtracting(offered)
      #expect(missing.isEmpty, "`shieldctl \(command) -<TAB>` does not offer \(missing.sorted())")
    }
  }

  @Test(
    "the fish completion parses and completes every command and option",
    .enabled(if: installTool("fish") != nil, "fish is not installed: the fish completion is not checked"))
  func fishCompletion() async throws {
    let s = try currentStagedInstall()
    let fish = try #require(installTool("fish"))
    let file = s.path("usr/share/fish/vendor_completions.d/shieldctl.fish")
    let syntax = try await runCommand(fish, ["--no-config", "-n", file], environment: installToolEnvironment())
    #expect(syntax.succeeded && syntax.stderrText.isEmpty, "fish -n: \(syntax)")

    // A home of its own: fish may write its history and variables there.
    let home = try makeTemporaryDirectory(prefix: "captureshield-fish")
    defer { removeTree(home) }
    func complete(_ line: String) async throws -> Set<String> {
      let result = try await runCommand(
        fish, ["--no-config", "-c", "source $argv[1]; complete -C $argv[2]", file, line],
        environment: installedPathEnvironment(s).merging([
          "HOME": home, "XDG_CONFIG_HOME": home + "/.config", "XDG_DATA_HOME": home + "/.local/share",
        ]) { $1 })
      #expect(result.succeeded, "\(result)")
      return Set(result.stdoutText.split(separator: "\n").map { String($0.split(separator: "\t")[0]) })
    }

    let help = try await HelpFacts.read(s.shieldctl)
    let topLevel = Set(help.commands.filter { !$0.contains(" ") })
    #expect(try await complete("shieldctl ") == topLevel)
    for group in help.groups {
      #expect(try await complete("shieldctl \(group) ") == help.subcommands(of: group))
    }
    #expect(try await complete("shieldctl watch --log-format ") == ["text", "json"])
    for (command, options) in help.options {
      let offered = try await complete("shieldctl \(command.isEmpty ? "" : command + " ")-")
      let missing = Set(options).subtracting(offered)
      #expect(missing.isEmpty, "`shieldctl \(command) -<TAB>` in fish does not offer \(missing.sorted())")
    }
  }

  @Test(
    "the zsh completion parses and makes an _arguments spec of every option",
    .enabled(if: installTool("zsh") != nil, "zsh is not installed: the zsh completion is not checked"))
  func zshCompletion() async throws {
    let s = try currentStagedInstall()
    let zsh = try #require(installTool("zsh"))
    let file = s.path("usr/share/zsh/site-functions/_shieldctl")
    let syntax = try await runCommand(zsh, ["-n", file], environment: installToolEnvironment())
    #expect(syntax.succeeded && syntax.stderrText.isEmpty, "zsh -n: \(syntax)")
    #expect(try readText(file).hasPrefix("#compdef shieldctl\n"))

    // The completion's functions without its last line (the call, which needs zle):
    // the specs it builds for each command from the installed shieldctl's help.
    let help = try await HelpFacts.read(s.shieldctl)
    for (command, options) in help.options {
      let optionsOnly = command.isEmpty || help.groups.contains(command)
      let script = """
        eval "$(sed '$d' "$1")"
        _shieldctl_bin=$2; _shieldctl_top=$($2 help); reply=()
        _shieldctl_specs \(optionsOnly ? "-o " : "")\(command)
        print -rl -- $reply
        """
      let result = try await runCommand(
        zsh, ["-f", "-c", script, "zsh", file, s.shieldctl], environment: installToolEnvironment())
      #expect(result.succeeded && result.stderrText.isEmpty, "\(result)")
      let specs = result.stdoutText.split(separator: "\n").map(String.init)
      for option in options {
        #expect(
          specs.contains { $0.hasPrefix(option + "[") || $0.hasPrefix(option + "=[") || $0.hasPrefix("*" + option) },
          "`shieldctl \(command)`: no _arguments spec for \(option) in \(specs)")
      }
      if command == "watch" {
        #expect(specs.contains { $0.hasPrefix("*--policy=[") && $0.hasSuffix(":file:_files -g \"*.json5(-.)\"") })
        #expect(specs.contains { $0.hasPrefix("--log-format=[") && $0.hasSuffix(":format:(text json)") })
      }
      if command == "policy check" {
        #expect(specs.contains("*:file:_files -g \"*.json5(-.)\""), "\(specs)")
      }
    }
  }

  @Test("the three completions embed the same help parser")
  func completionsShareTheParser() throws {
    let s = try currentStagedInstall()
    func program(_ relative: String) throws -> String {
      let text = try readText(s.path(relative))
      guard let start = text.range(of: "_help_awk")?.upperBound,
        let open = text.range(of: "'", range: start..<text.endIndex)?.upperBound,
        let close = text.range(of: "\n}'", range: open..<text.endIndex)?.lowerBound
      else {
        Issue.record("no help parser in \(relative)")
        return ""
      }
      return String(text[open..<close])
    }
    let bash = try program("usr/share/bash-completion/completions/shieldctl")
    #expect(bash.contains("mode == \"options\""))
    #expect(try program("usr/share/zsh/site-functions/_shieldctl") == bash)
    #expect(try program("usr/share/fish/vendor_completions.d/shieldctl.fish") == bash)
  }

  @Test("make uninstall removes exactly the installed files")
  func uninstall() async throws {
    let destdir = try makeTemporaryDirectory(prefix: "captureshield-uninstall")
    defer { removeTree(destdir) }
    try await runMake("install", destdir: destdir)
    #expect(installedNonDirectories(under: destdir) == installExpectedFiles.map(\.path).sorted())
    // Someone else's files next to ours stay.
    let foreign = ["usr/bin/other-tool", "usr/share/man/man1/other.1", "etc/xdg/autostart/other.desktop"]
    for relative in foreign {
      #expect(FileManager.default.createFile(atPath: destdir + "/" + relative, contents: Data("x\n".utf8)))
    }
    let result = try await runMake("uninstall", destdir: destdir)
    #expect(installedNonDirectories(under: destdir) == foreign.sorted(), "make uninstall output:\n\(result.stdoutText)")
    // Uninstalling again is harmless.
    try await runMake("uninstall", destdir: destdir)
  }

  @Test(
    "make install-xorg-module installs exactly the module and its snippet; make uninstall removes them",
    .enabled(if: FileManager.default.fileExists(atPath: "/usr/include/xorg/xf86Module.h"), "no Xorg SDK"))
  func xorgModule() async throws {
    let destdir = try makeTemporaryDirectory(prefix: "captureshield-xorg-install")
    defer { removeTree(destdir) }
    let moduledir = ["XORG_MODULEDIR=/usr/lib/xorg/modules"]
    let module = "usr/lib/xorg/modules/extensions/libcaptureshield.so"
    let snippet = "etc/X11/xorg.conf.d/50-captureshield.conf"
    try await runMake("install-xorg-module", destdir: destdir, moduledir)
    #expect(installedNonDirectories(under: destdir) == [snippet, module].sorted())
    for relative in [module, snippet] {
      var info = stat()
      #expect(lstat(destdir + "/" + relative, &info) == 0 && info.st_mode & 0o7777 == 0o644, "\(relative): not 0644")
    }
    let conf = try readText(destdir + "/" + snippet)
    let active = conf.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
      .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    // The daemon by its role (rule daemonrole), no compositor list: the daemon grants the
    // compositor after its own checks.
    #expect(
      active.filter { $0.hasPrefix(#"Option "Daemon""#) } == [#"Option "Daemon" "/usr/bin/shieldctl""#], "\(conf)")
    #expect(!active.contains { $0.hasPrefix(#"Option "Trust""#) }, "\(conf)")
    #expect(!active.contains { $0.hasPrefix(#"Option "DaemonUsers""#) }, "\(conf)")
    #expect(active.contains(#"SubSection "captureshield""#) && !active.contains { $0.hasPrefix("Load") }, "\(conf)")
    // With shieldctl's files next to them, uninstall removes both sets and nothing else.
    try await runMake("install", destdir: destdir, moduledir)
    let foreign = "usr/lib/xorg/modules/extensions/libother.so"
    #expect(FileManager.default.createFile(atPath: destdir + "/" + foreign, contents: Data("x\n".utf8)))
    let result = try await runMake("uninstall", destdir: destdir, moduledir)
    #expect(installedNonDirectories(under: destdir) == [foreign], "make uninstall output:\n\(result.stdoutText)")
  }
}

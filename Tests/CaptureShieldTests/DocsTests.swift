// The documentation keeps up with the code: docs/policy.md names every policy key the
// parser accepts, README.md names every command `shieldctl help` lists, and the installed
// example policy (dist/policy.example.json5) is valid and documents every key.

import Foundation
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// The package's root directory (this file is Tests/CaptureShieldTests/DocsTests.swift).
private let docsPackageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent()

private func docsPackageFile(_ relative: String) throws -> String {
  try String(contentsOf: docsPackageRoot.appendingPathComponent(relative), encoding: .utf8)
}

/// Every key of the policy schema, from the parser's own lists.
private enum DocsPolicyKeys {
  /// `version`, `secure`, `capture`, `shield`, `clipboard`, `notify`, `keyloggers`.
  static let top = PolicyParser.topKeys
  /// `capture.linger`, `shield.failMode`, `clipboard.clearAfter`, ...
  static let dotted: [String] =
    PolicyParser.captureKeys.map { "capture." + $0 } + PolicyParser.shieldKeys.map { "shield." + $0 }
    + PolicyParser.clipboardKeys.map { "clipboard." + $0 } + PolicyParser.notifyKeys.map { "notify." + $0 }
    + PolicyParser.accessibilityKeys.map { "accessibility." + $0 }
    + PolicyParser.keyloggerKeys.map { "keyloggers." + $0 }
  /// `class`, `instance`, `title`, `exe`, `comm`, `pid`, `uid`, `name`.
  static let matcher = PolicyParser.matcherKeys
}

/// Whether `text` contains `word` not preceded or followed by a letter, digit, `_`, `.` or
/// `-` (so `capture.allow` is not found inside `capture.allowed`).
private func docsContainsWord(_ text: String, _ word: String) -> Bool {
  func isWordCharacter(_ c: Character?) -> Bool {
    guard let c else { return false }
    return c.isLetter || c.isNumber || c == "_" || c == "." || c == "-"
  }
  var searchStart = text.startIndex
  while let range = text.range(of: word, range: searchStart..<text.endIndex) {
    let before = range.lowerBound == text.startIndex ? nil : text[text.index(before: range.lowerBound)]
    let after = range.upperBound == text.endIndex ? nil : text[range.upperBound]
    if !isWordCharacter(before) && !isWordCharacter(after) { return true }
    searchStart = text.index(after: range.lowerBound)
  }
  return false
}

/// The `shieldctl` built next to this test bundle (`$SHIELDCTL_PATH` overrides).
private func docsBuiltShieldctl() -> String? {
  let fm = FileManager.default
  if let path = ProcessInfo.processInfo.environment["SHIELDCTL_PATH"], !path.isEmpty { return path }
  var starts: [URL] = []
  if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") { starts.append(URL(fileURLWithPath: exe)) }
  if let first = CommandLine.arguments.first { starts.append(URL(fileURLWithPath: first)) }
  for start in starts {
    var directory = start.standardizedFileURL.deletingLastPathComponent()
    for _ in 0..<4 {
      let candidate = directory.appendingPathComponent("shieldctl").path
      var isDirectory: ObjCBool = false
      if fm.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
        fm.isExecutableFile(atPath: candidate)
      {
        return candidate
      }
      directory = directory.deletingLastPathComponent()
    }
  }
  return nil
}

/// The commands `shieldctl help` lists, subcommands as `policy check`.
private func docsHelpCommands() throws -> [String] {
  let shieldctl = try #require(docsBuiltShieldctl(), "shieldctl not found near the test bundle; set SHIELDCTL_PATH")
  let process = Process()
  process.executableURL = URL(fileURLWithPath: shieldctl)
  process.arguments = ["help"]
  let pipe = Pipe()
  process.standardOutput = pipe
  process.standardError = FileHandle.nullDevice
  try process.run()
  let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  try #require(process.terminationStatus == 0, "shieldctl help exited with \(process.terminationStatus)")

  let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
  let start = try #require(lines.firstIndex(of: "COMMANDS:"), "no COMMANDS: in\n\(output)")
  var commands: [String] = []
  var group = ""
  for line in lines[(start + 1)...].prefix(while: { !$0.isEmpty }) {
    let word = String(line.split(separator: " ")[0])
    if line.hasPrefix("    ") {
      commands.append(group + " " + word)
    } else {
      group = word
      commands.append(word)
    }
  }
  try #require(commands.count > 5, "too few commands parsed from\n\(output)")
  return commands
}

/// Links that may point to files not written yet: they are being written on other branches.
/// Remove this list once those branches are merged.
private let docsLinksBeingWritten: Set<String> = []

/// The targets of the Markdown links `[text](target)` in `text`, outside fenced code blocks.
private func docsLinkTargets(_ text: String) -> [String] {
  var targets: [String] = []
  var inFence = false
  for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
    if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
      inFence.toggle()
      continue
    }
    if inFence { continue }
    var rest = Substring(line)
    while let open = rest.range(of: "](") {
      let after = rest[open.upperBound...]
      guard let close = after.firstIndex(of: ")") else { break }
      targets.append(String(after[..<close]))
      rest = after[after.index(after: close)...]
    }
  }
  return targets
}

/// The Markdown files whose relative links must resolve: README.md, HACKING.md, docs/*.md.
private func docsMarkdownFiles() throws -> [String] {
  let docs = try FileManager.default.contentsOfDirectory(atPath: docsPackageRoot.appendingPathComponent("docs").path)
  return ["README.md", "HACKING.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
}

@Suite("Documentation")
struct DocsTests {
  @Test("docs/policy.md names every policy key (capture.linger, shield.failMode, clipboard.clearAfter, ...)")
  func policyDocNamesEveryPolicyKey() throws {
    let doc = try docsPackageFile("docs/policy.md")
    let missingDotted = DocsPolicyKeys.dotted.filter { !docsContainsWord(doc, $0) }
    #expect(
      missingDotted.isEmpty, "docs/policy.md does not name these policy keys: \(missingDotted.joined(separator: ", "))")
    // A top-level key is named as `key` or through its children (`capture.allow`).
    let missingTop = DocsPolicyKeys.top.filter { !doc.contains("`\($0)`") && !doc.contains("`\($0).") }
    #expect(
      missingTop.isEmpty, "docs/policy.md does not name these top-level keys: \(missingTop.joined(separator: ", "))")
  }

  @Test("docs/policy.md names every matcher key")
  func policyDocNamesEveryMatcherKey() throws {
    let doc = try docsPackageFile("docs/policy.md")
    let missing = DocsPolicyKeys.matcher.filter { !doc.contains("`\($0)`") }
    #expect(missing.isEmpty, "docs/policy.md does not name these matcher keys: \(missing.joined(separator: ", "))")
  }

  @Test("README.md names every command of `shieldctl help`")
  func readmeNamesEveryCommand() throws {
    let readme = try docsPackageFile("README.md")
    // `shieldctl tag ...`, or a code span starting with the command (`resume`, `unshield WINDOW`).
    let missing = try docsHelpCommands().filter { command in
      !docsContainsWord(readme, "shieldctl " + command) && !readme.contains("`\(command)`")
        && !readme.contains("`\(command) ")
    }
    #expect(missing.isEmpty, "README.md does not name these commands: \(missing.joined(separator: ", "))")
  }

  @Test("README.md stays short: at most 250 lines (the rest is in docs/)")
  func readmeIsShort() throws {
    let lines = try docsPackageFile("README.md").filter { $0 == "\n" }.count  // as `wc -l` counts
    #expect(lines <= 250, "README.md has \(lines) lines; move details to docs/")
  }

  @Test("every relative link in README.md, HACKING.md and docs/*.md points to a file that exists")
  func relativeLinksResolve() throws {
    let fm = FileManager.default
    let files = try docsMarkdownFiles()
    #expect(files.contains("docs/policy.md"))
    var broken: [String] = []
    for file in files {
      let directory = docsPackageRoot.appendingPathComponent(file).deletingLastPathComponent()
      for target in docsLinkTargets(try docsPackageFile(file)) {
        // Anchors are not checked; web links are not relative.
        let path = String(target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0])
        if path.isEmpty || path.contains("://") || path.hasPrefix("mailto:") { continue }
        let url = directory.appendingPathComponent(path).standardizedFileURL
        let relative = String(url.path.dropFirst(docsPackageRoot.standardizedFileURL.path.count + 1))
        if docsLinksBeingWritten.contains(relative) { continue }
        if !fm.fileExists(atPath: url.path) { broken.append("\(file): \(target)") }
      }
    }
    #expect(broken.isEmpty, "links to files that do not exist:\n\(broken.joined(separator: "\n"))")
  }

  @Test("the example policy (dist/policy.example.json5) is valid and documents every key")
  func examplePolicy() throws {
    let path = "dist/policy.example.json5"
    let text = try docsPackageFile(path)
    let file = try PolicyParser.parse(text, path: path)
    #expect(file.version == 1)

    // Each key is set (`key:`) and explained in a comment that names it.
    let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
    let comments = lines.filter { $0.hasPrefix("//") }.joined(separator: "\n")
    let code = lines.filter { !$0.hasPrefix("//") }.joined(separator: "\n")
    for key in DocsPolicyKeys.top {
      #expect(code.contains("\(key):"), "\(path) does not set '\(key)'")
      #expect(docsContainsWord(comments, key), "\(path) does not explain '\(key)'")
    }
    for key in DocsPolicyKeys.dotted {
      let leaf = String(key.split(separator: ".").last!)
      #expect(code.contains("\(leaf):"), "\(path) does not set '\(key)'")
      #expect(comments.contains("// \(key):"), "\(path) does not explain '\(key)' (a comment '// \(key): ...')")
    }
    for key in DocsPolicyKeys.matcher {
      // pid only in a comment: a PID changes with every run.
      #expect(
        code.contains("\(key):") || comments.contains("\(key):"), "\(path) does not show the matcher key '\(key)'")
      #expect(
        comments.contains("//   \(key) "),
        "\(path) does not explain the matcher key '\(key)' in its MATCHERS comment")
    }
  }
}

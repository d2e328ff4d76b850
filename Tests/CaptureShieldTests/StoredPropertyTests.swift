// No type in the shell (Sources/CaptureShield, every folder) holds more than 15 stored
// properties: a type that grows past it holds more than one concern's state, and the concern
// becomes a component of its own (docs/architecture.md, "Components of the loop"). Like
// FileSizeTests, it reads the sources, with a simple parser: the `let`/`var` declarations
// directly in a class's, struct's or actor's body, computed properties and statics left out.

import Foundation
import Testing

/// The shell (this file is Tests/CaptureShieldTests/StoredPropertyTests.swift).
private let shellSources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/CaptureShield")

enum StoredProperties {
  /// The most stored properties a type may have.
  static let maxStored = 15

  /// Types over `maxStored` not split yet, each with its count when the check was widened
  /// from Daemon/ to the whole shell: a ceiling (the count may fall, not rise) until the
  /// type is split into parts by concern, as `ClipboardGuard` and `ShieldDriver` were.
  static let exceptions: [String: Int] = [
    // The RECORD context of capture detection: its two connections, the pump thread, what
    // the pump fired and launched (taken and stashed), the poke, the own connections.
    "Record/CaptureDetector.swift: CaptureDetector": 23
  ]

  /// Each class, struct and actor declared in `source` (nested ones by dotted name) with the
  /// number of stored properties in its body.
  static func count(in source: String) -> [String: Int] {
    var out: [String: Int] = [:]
    // Open scopes: a type's name (nil for other braces) and whether it can store properties.
    var stack: [(name: String?, stores: Bool)] = []
    var pendingType: (name: String, stores: Bool)?
    var inMultilineString = false
    for rawLine in source.split(separator: "\n", omittingEmptySubsequences: false) {
      var line = String(rawLine)
      if line.contains("\"\"\"") {
        inMultilineString.toggle()
        continue
      }
      if inMultilineString { continue }
      line = line.replacingOccurrences(of: #""(?:[^"\\]|\\.)*""#, with: "\"\"", options: .regularExpression)
      if let r = line.range(of: "//") { line = String(line[..<r.lowerBound]) }
      let code = line.trimmingCharacters(in: .whitespaces)
      // A declaration directly in a type that stores properties.
      if let top = stack.last, top.name != nil, top.stores {
        out[stack.compactMap(\.name).joined(separator: "."), default: 0] += storedDeclarations(code)
      }
      if let t = typeDeclaration(code) { pendingType = t }
      for c in line {
        if c == "{" {
          if let t = pendingType {
            stack.append((t.name, t.stores))
            out[stack.compactMap(\.name).joined(separator: "."), default: 0] += 0
            pendingType = nil
          } else {
            stack.append((nil, false))
          }
        } else if c == "}" {
          _ = stack.popLast()
        }
      }
    }
    return out
  }

  /// The type a line declares (`stores`: a class, struct or actor), nil for other lines.
  static func typeDeclaration(_ code: String) -> (name: String, stores: Bool)? {
    let words = code.split(whereSeparator: { $0 == " " || $0 == ":" || $0 == "{" || $0 == "<" }).map(String.init)
    let modifiers: Set<String> = [
      "final", "public", "private", "fileprivate", "internal", "package", "open", "indirect", "nonisolated",
      "@MainActor",
    ]
    var i = 0
    while i < words.count, modifiers.contains(words[i]) || words[i].hasPrefix("@") || words[i].hasPrefix("private(") {
      i += 1
    }
    guard i + 1 < words.count else { return nil }
    switch words[i] {
    case "class", "struct", "actor": return (words[i + 1], true)
    case "enum", "extension", "protocol": return (words[i + 1], false)
    default: return nil
    }
  }

  /// How many stored properties a line declares directly in a type's body: `let a: A, b: B`
  /// counts two; `static`, `class` and computed properties (`var a: A { ... }` without an
  /// initial value or observers) count none.
  static func storedDeclarations(_ code: String) -> Int {
    var words = code.split(separator: " ").map(String.init)
    let modifiers: Set<String> = [
      "public", "private", "fileprivate", "internal", "package", "open", "final", "lazy", "weak", "unowned",
      "nonisolated", "nonisolated(unsafe)", "private(set)", "fileprivate(set)", "internal(set)", "public(set)",
      "unowned(unsafe)", "@Sendable",
    ]
    while let w = words.first, modifiers.contains(w) || (w.hasPrefix("@") && w != "@") { words.removeFirst() }
    guard let kind = words.first, kind == "let" || kind == "var" else { return 0 }
    let rest = code[code.range(of: kind + " ")!.upperBound...]
    // Top-level commas and whether a `{` comes before any `=`.
    var depth = 0
    var count = 1
    var sawEquals = false
    var previous: Character = " "
    for c in rest {
      defer { previous = c }
      switch c {
      case "(", "[", "<": depth += 1
      case ")", "]": depth -= 1
      case ">" where previous != "-": depth -= 1
      case "=" where depth == 0: sawEquals = true
      case "," where depth == 0 && !sawEquals: count += 1
      case "{" where depth == 0 && !sawEquals:
        // A getter, or observers (stored).
        return rest.contains("didSet") || rest.contains("willSet") ? count : 0
      default: break
      }
    }
    return count
  }
}

@Suite("Stored properties per type")
struct StoredPropertyTests {
  @Test func theCounterCountsStoredPropertiesOnly() {
    let src = """
      final class A {
        let a: Int, b: [String: (Int, Int)]
        let cb: (Int) -> Int, cc: Int
        private(set) var c = 0
        static let d = 1
        var e: Int { a + 1 }
        var f: Int {
          get { a }
        }
        lazy var g = [1, 2]
        var h = 0 { didSet { print("{") } }
        struct Inner {
          let x: Int
          func y() { let z = 1; var w = 2 }
        }
        init() { let local = 1; a = local; b = [:] }
      }
      enum E { static var s = 0 }
      extension A { var k: Int { 0 } }
      """
    let n = StoredProperties.count(in: src)
    #expect(n["A"] == 7)  // a, b, cb, cc, c, g, h
    #expect(n["A.Inner"] == 1)
    #expect(n["E"] == 0)
  }

  @Test("no type in the shell has more than 15 stored properties")
  func noShellTypeIsAPropertyBag() throws {
    // Every Swift file under Sources/CaptureShield, by path relative to it.
    let files = try #require(FileManager.default.subpaths(atPath: shellSources.path)).filter {
      $0.hasSuffix(".swift")
    }
    .sorted()
    var all: [String: Int] = [:]
    for f in files {
      let text = try String(contentsOf: shellSources.appendingPathComponent(f), encoding: .utf8)
      for (type, n) in StoredProperties.count(in: text) { all["\(f): \(type)", default: 0] += n }
    }
    // The parser saw the loop and its components, and the other folders (not an empty or
    // wrong folder).
    let loop = try #require(all["Daemon/Watcher.swift: WatcherLoop"])
    #expect(loop >= 10)
    #expect(all["Daemon/WindowTracker.swift: WindowTracker"] != nil)
    #expect(all["Daemon/CaptureBridge.swift: CaptureBridge"] != nil)
    #expect(all["Clipboard/ClipboardGuard.swift: ClipboardGuard"] != nil)
    #expect(all["X/XConnection.swift: XConnection"] != nil)
    let over = all.filter { $0.value > StoredProperties.exceptions[$0.key, default: StoredProperties.maxStored] }
      .sorted { $0.key < $1.key }
    // Every exception names a type that is still there.
    for type in StoredProperties.exceptions.keys { #expect(all[type] != nil, "no longer in the shell: \(type)") }
    #expect(
      over.isEmpty,
      "over \(StoredProperties.maxStored) stored properties (split into components): \(over.map { "\($0.key) \($0.value)" })"
    )
  }
}

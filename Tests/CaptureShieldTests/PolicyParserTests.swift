import Foundation
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

// MARK: - Helpers

/// The diagnostics of parsing `text` as `t.json5`, as printed (empty when it parses).
private func diagnostics(_ text: String) -> [String] {
  do {
    _ = try PolicyParser.parse(text, path: "t.json5")
    return []
  } catch {
    return error.diagnostics.map(\.description)
  }
}

private func pattern(_ s: String) -> Pattern { try! Pattern.parse(s) }

private func loc(_ line: Int, _ column: Int, _ file: String = "t.json5") -> CaptureShield.SourceLocation {
  CaptureShield.SourceLocation(file: file, line: line, column: column)
}

@Suite struct PolicyParserTests {
  // MARK: - Diagnostics with exact positions

  struct DiagnosticCase: Sendable, CustomTestStringConvertible {
    var name: String
    var source: String
    var expected: [String]
    var testDescription: String { name }
  }

  static let deepPrefix = "{ version: 1, secure: "

  static let diagnosticCases: [DiagnosticCase] = [
    DiagnosticCase(
      name: "unknown top-level key",
      source: "{version: 1, secur: []}",
      expected: ["t.json5:1:14: error: unknown key 'secur' at top level (did you mean 'secure'?)"]),
    DiagnosticCase(
      name: "unknown key in matcher",
      source: #"{version: 1, secure: [{clas: "x"}]}"#,
      expected: ["t.json5:1:24: error: unknown key 'clas' in matcher (did you mean 'class'?)"]),
    DiagnosticCase(
      name: "transposed key is suggested",
      source: #"{version: 1, secure: [{calss: "x"}]}"#,
      expected: ["t.json5:1:24: error: unknown key 'calss' in matcher (did you mean 'class'?)"]),
    DiagnosticCase(
      name: "unknown key without a close match lists the allowed keys",
      source: #"{version: 1, shield: {colour: "red"}}"#,
      expected: [
        "t.json5:1:23: error: unknown key 'colour' in 'shield' (allowed: when, failMode, input, label)"
      ]),
    DiagnosticCase(
      name: "wrong type",
      source: """
        {
          version: 1,
          capture: { linger: 2 },
        }
        """,
      expected: ["t.json5:3:22: error: 'linger' must be a string (a duration), not a number"]),
    DiagnosticCase(
      name: "wrong type of a section",
      source: "{ version: 1, capture: [] }",
      expected: ["t.json5:1:24: error: 'capture' must be an object, not an array"]),
    DiagnosticCase(
      name: "bad glob",
      source: """
        {
          version: 1,
          secure: [{ class: "fo[o" }],
        }
        """,
      expected: ["t.json5:3:24: error: bad pattern 'fo[o' for 'class': unterminated '[' in glob"]),
    DiagnosticCase(
      name: "bad glob after an escape points into the source",
      source: #"""
        {
          version: 1,
          secure: [{ class: "\u0041[z-a]" }],
        }
        """#,
      expected: ["t.json5:3:29: error: bad pattern 'A[z-a]' for 'class': reversed range 'z-a' in glob"]),
    DiagnosticCase(
      name: "bad regex",
      source: """
        {
          version: 1,
          secure: [{ title: "/a(b/" }],
        }
        """,
      expected: ["t.json5:3:21: error: bad regular expression '/a(b/' for 'title': expected ')'"]),
    DiagnosticCase(
      name: "bad duration",
      source: """
        {
          version: 1,
          capture: { linger: "2 secs" },
        }
        """,
      expected: [
        #"t.json5:3:22: error: bad duration '2 secs': expected a number followed by ms, s, m or h, e.g. "250ms" or "2s""#
      ]),
    DiagnosticCase(
      name: "bad quarantine",
      source: #"{ version: 1, capture: { quarantine: "never" } }"#,
      expected: [
        #"t.json5:1:38: error: bad duration 'never': expected "off" or a number followed by ms, s, m or h, e.g. "250ms" or "2s""#
      ]),
    DiagnosticCase(
      name: "bad hold",
      source: #"{ version: 1, capture: { hold: "forever" } }"#,
      expected: [
        #"t.json5:1:32: error: bad duration 'forever': expected "connected" or a number followed by ms, s, m or h, e.g. "250ms" or "2s""#
      ]),
    DiagnosticCase(
      name: "hold is a string",
      source: #"{ version: 1, capture: { hold: true } }"#,
      expected: [#"t.json5:1:32: error: 'hold' must be a string (a duration or "connected"), not a boolean"#]),
    DiagnosticCase(
      name: "quarantineOnLaunch is a bool",
      source: #"{ version: 1, capture: { quarantine: "300ms", quarantineOnLaunch: "yes" } }"#,
      expected: [
        #"t.json5:1:67: error: 'quarantineOnLaunch' must be a boolean (true or false), not a string"#
      ]),
    DiagnosticCase(
      name: "learn is a bool",
      source: #"{ version: 1, capture: { learn: "yes" } }"#,
      expected: [#"t.json5:1:33: error: 'learn' must be a boolean (true or false), not a string"#]),
    DiagnosticCase(
      name: "allowInjected is a bool",
      source: #"{ version: 1, capture: { allowInjected: 1 } }"#,
      expected: [#"t.json5:1:41: error: 'allowInjected' must be a boolean (true or false), not a number"#]),
    DiagnosticCase(
      name: "missing version",
      source: "// no version here\n{ secure: [] }",
      expected: ["t.json5:1:1: error: missing required key 'version'"]),
    DiagnosticCase(
      name: "unknown version stops validation",
      source: "{ version: 2, secure: [{}], bogus: 1 }",
      expected: [
        "t.json5:1:12: error: unsupported policy version 2: this CaptureShield understands version 1"
      ]),
    DiagnosticCase(
      name: "version of the wrong type",
      source: #"{ version: "1" }"#,
      expected: ["t.json5:1:12: error: 'version' must be an integer (1), not a string"]),
    DiagnosticCase(
      name: "empty matcher",
      source: """
        {
          version: 1,
          secure: [{ name: "nothing" }],
        }
        """,
      expected: [
        "t.json5:3:12: error: empty matcher: give at least one of class, instance, title, exe, comm, pid, uid"
      ]),
    DiagnosticCase(
      name: "matcher that is not an object",
      source: #"{ version: 1, capture: { allow: ["obs"] } }"#,
      expected: [
        #"t.json5:1:34: error: each entry of 'allow' must be a matcher object (e.g. { class: "KeePassXC" }), not a string"#
      ]),
    DiagnosticCase(
      name: "syntax error: missing comma",
      source: #"{ version: 1, secure: [ { class: "x" } { class: "y" } ] }"#,
      expected: [
        "t.json5:1:40: error: expected ',' or ']' after a value in an array, found character '{'"
      ]),
    DiagnosticCase(
      name: "syntax error: line break in string",
      source: "{\n  version: 'abc\n}",
      expected: [#"t.json5:2:16: error: unterminated string: line break inside a string (write \n)"#]),
    DiagnosticCase(
      name: "syntax error: missing colon",
      source: "{version 1}",
      expected: ["t.json5:1:10: error: expected ':' after key 'version', found character '1'"]),
    DiagnosticCase(
      name: "syntax error: unterminated comment",
      source: "{ version: 1 /* oops",
      expected: ["t.json5:1:14: error: unterminated comment (opened here)"]),
    DiagnosticCase(
      name: "syntax error: unquoted string value",
      source: "{ version: 1, shield: { when: always } }",
      expected: [
        "t.json5:1:31: error: unexpected word 'always': expected a value (strings must be quoted)"
      ]),
    DiagnosticCase(
      name: "syntax error: unknown escape",
      source: #"{ version: 1, secure: [{ title: "/\d+/" }] }"#,
      expected: [
        #"t.json5:1:35: error: unknown escape '\d' in string (write '\\' for a backslash, e.g. "/\\d+/" for the regex /\d+/)"#
      ]),
    DiagnosticCase(
      name: "syntax error: empty file",
      source: "  // nothing\n",
      expected: ["t.json5:2:1: error: empty document: expected a value"]),
    DiagnosticCase(
      name: "top level is not an object",
      source: "[1]",
      expected: [
        "t.json5:1:1: error: a policy file (e.g. { version: 1, secure: [...] }) must be an object, not an array"
      ]),
    DiagnosticCase(
      name: "duplicate key",
      source: """
        {
          version: 1,
          shield: { when: "always", when: "capturing" },
        }
        """,
      expected: ["t.json5:3:29: error: duplicate key 'when' in 'shield' (first given at 3:13)"]),
    DiagnosticCase(
      name: "duplicate top-level key",
      source: "{ version: 1, 'version': 1 }",
      expected: ["t.json5:1:15: error: duplicate key 'version' at top level (first given at 1:3)"]),
    DiagnosticCase(
      name: "deep nesting",
      source: PolicyParserTests.deepPrefix + String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        + "}",
      expected: [
        "t.json5:1:\(PolicyParserTests.deepPrefix.count + 64): error: nesting too deep: more than 64 levels of objects and arrays"
      ]),
    DiagnosticCase(
      name: "pattern too long",
      source: #"{ version: 1, secure: [{ exe: ""# + String(repeating: "a", count: 5000) + #"" }] }"#,
      expected: ["t.json5:1:31: error: 'exe' is too long (5000 characters; the limit is 4096)"]),
    DiagnosticCase(
      name: "too many matchers",
      source: "{version:1, secure:[" + String(repeating: "{pid:1},", count: 10_001) + "]}",
      expected: [
        "t.json5:1:\(20 + 10_000 * 8 + 1): error: too many matchers in one file (the limit is 10000)"
      ]),
    DiagnosticCase(
      name: "every problem of a file is reported, in source order",
      source: """
        {
          version: 1,
          secure: [
            { clas: "KeePassXC" },
            { pid: -1 },
            { exe: 42 },
          ],
          capture: { linger: "soon", quarantine: 5 },
          shield: { when: "Always" },
          clipboard: { maxReads: 0, selections: ["CLIPBOARD", "SECONDARY"] },
        }
        """,
      expected: [
        "t.json5:4:7: error: unknown key 'clas' in matcher (did you mean 'class'?)",
        "t.json5:5:12: error: 'pid' must be a non-negative integer, not -1",
        "t.json5:6:12: error: 'exe' must be a string (a glob or /regex/), not a number",
        #"t.json5:8:22: error: bad duration 'soon': expected a number followed by ms, s, m or h, e.g. "250ms" or "2s""#,
        #"t.json5:8:42: error: 'quarantine' must be a string (a duration or "off"), not a number"#,
        #"t.json5:9:19: error: unknown value 'Always' for 'when': expected "always" or "capturing" (did you mean "always"?)"#,
        "t.json5:10:26: error: 'maxReads' must be a positive integer, not 0",
        #"t.json5:10:55: error: unknown selection 'SECONDARY': expected "CLIPBOARD" or "PRIMARY""#,
      ]),
    DiagnosticCase(
      name: "control characters in user text are escaped in messages",
      source: #"{ version: 1, "a\nb": 1 }"#,
      expected: [
        #"t.json5:1:15: error: unknown key 'a\u{a}b' at top level (allowed: version, secure, replaceDefaultSecure, capture, shield, clipboard, notify, keyloggers, accessibility)"#
      ]),
    DiagnosticCase(
      name: "an unknown key in notify is an error",
      source: "{ version: 1, notify: { enabled: true, sound: true } }",
      expected: ["t.json5:1:40: error: unknown key 'sound' in 'notify' (allowed: enabled)"]),
    DiagnosticCase(
      name: "a misspelt notify key is an error with a guess",
      source: "{ version: 1, notify: { enable: false } }",
      expected: ["t.json5:1:25: error: unknown key 'enable' in 'notify' (did you mean 'enabled'?)"]),
    DiagnosticCase(
      name: "notify.enabled must be a boolean",
      source: #"{ version: 1, notify: { enabled: "yes" } }"#,
      expected: [#"t.json5:1:34: error: 'enabled' must be a boolean (true or false), not a string"#]),
    DiagnosticCase(
      name: "notify must be an object",
      source: "{ version: 1, notify: false }",
      expected: ["t.json5:1:23: error: 'notify' must be an object, not a boolean"]),
  ]

  @Test(arguments: PolicyParserTests.diagnosticCases)
  func diagnosticPositions(_ c: DiagnosticCase) {
    #expect(diagnostics(c.source) == c.expected)
  }

  @Test func errorDescriptionHasOneDiagnosticPerLine() {
    let error = PolicyError(diagnostics: [
      PolicyDiagnostic(location: loc(1, 2, "a.json5"), message: "one"),
      PolicyDiagnostic(location: loc(3, 4, "b.json5"), message: "two"),
    ])
    #expect(error.description == "a.json5:1:2: error: one\nb.json5:3:4: error: two")
  }

  // MARK: - JSON5 reader

  @Test func hostileNestingDoesNotCrash() {
    for opener in ["[", "{a:"] {
      let text = String(repeating: opener, count: 200_000)
      #expect(throws: PolicyDiagnostic.self) { try JSON5.parse(text, file: "x") }
    }
    // Exactly the limit is fine.
    let ok = String(repeating: "[", count: JSON5.maxDepth) + String(repeating: "]", count: JSON5.maxDepth)
    #expect((try? JSON5.parse(ok, file: "x")) != nil)
  }

  @Test func json5PositionsCountScalarsAndCRLF() throws {
    let text = "{\r\n  \"😀\": 'x', b: [1, 2]\r\n}"
    let root = try JSON5.parse(text, file: "f")
    guard case .object(let members) = root.kind, members.count == 2,
      case .array(let items) = members[1].value.kind, items.count == 2
    else {
      Issue.record("unexpected tree \(root)")
      return
    }
    #expect(root.location == loc(1, 1, "f"))
    #expect(members[0].key == "😀")
    #expect(members[0].keyLocation == loc(2, 3, "f"))
    #expect(members[0].value.location == loc(2, 8, "f"))
    #expect(members[1].keyLocation == loc(2, 13, "f"))
    #expect(members[1].value.location == loc(2, 16, "f"))
    #expect(items[1].location == loc(2, 20, "f"))
    #expect(items[1].kind == .int(2))
  }

  struct NumberCase: Sendable, CustomTestStringConvertible {
    var text: String
    var expected: JSONValue.Kind
    var testDescription: String { text }
  }

  @Test(arguments: [
    NumberCase(text: "1", expected: .int(1)),
    NumberCase(text: "-0", expected: .int(0)),
    NumberCase(text: "+7", expected: .int(7)),
    NumberCase(text: "1.5", expected: .double(1.5)),
    NumberCase(text: "1.0", expected: .int(1)),
    NumberCase(text: "5.", expected: .int(5)),
    NumberCase(text: ".25", expected: .double(0.25)),
    NumberCase(text: "-.5", expected: .double(-0.5)),
    NumberCase(text: "1e3", expected: .int(1000)),
    NumberCase(text: "1E-2", expected: .double(0.01)),
    NumberCase(text: "0x1F", expected: .int(31)),
    NumberCase(text: "-0X10", expected: .int(-16)),
    NumberCase(text: "9223372036854775807", expected: .int(Int.max)),
    NumberCase(text: "9223372036854775808", expected: .double(9_223_372_036_854_775_808)),
    NumberCase(text: "Infinity", expected: .double(.infinity)),
    NumberCase(text: "-Infinity", expected: .double(-.infinity)),
  ])
  func json5Numbers(_ c: NumberCase) throws {
    #expect(try JSON5.parse(c.text, file: "n").kind == c.expected)
  }

  @Test func json5NaN() throws {
    for text in ["NaN", "+NaN", "-NaN"] {
      guard case .double(let d) = try JSON5.parse(text, file: "n").kind else {
        Issue.record("\(text) is not a double")
        continue
      }
      #expect(d.isNaN)
    }
  }

  @Test func json5Strings() throws {
    // Line continuations (backslash + LF, CRLF, CR or U+2028) add nothing, as the JSON5
    // specification says (Foundation keeps the line break; see JSON5's doc comment).
    let text =
      #"['a\x41\u00e9\uD83D\uDE00\'\"\\\/\b\f\n\r\t\v\0', "it's", "one \"# + "\n"
      + #"two", 'crlf\"# + "\r\n" + #"x', "ls\"# + "\u{2028}" + #"y", "tab"# + "\t" + #"here"]"#
    let root = try JSON5.parse(text, file: "s")
    guard case .array(let items) = root.kind else {
      Issue.record("not an array")
      return
    }
    #expect(
      items.map(\.kind) == [
        .string("aAé😀'\"\\/\u{8}\u{C}\n\r\t\u{B}\u{0}"), .string("it's"), .string("one two"),
        .string("crlfx"), .string("lsy"), .string("tab\there"),
      ])
  }

  // MARK: - Differential: Foundation's JSON5 reader

  /// A JSON value as Foundation's `JSONDecoder` (with `allowsJSON5`) reads it. (On Linux,
  /// `JSONSerialization` has no JSON5 option; the decoder uses the same JSON5 scanner.)
  indirect enum FoundationJSON: Decodable, Equatable {
    case object([String: FoundationJSON])
    case array([FoundationJSON])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    struct Key: CodingKey {
      var stringValue: String
      var intValue: Int? { nil }
      init(stringValue: String) { self.stringValue = stringValue }
      init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
      if var list = try? decoder.unkeyedContainer() {
        var items: [FoundationJSON] = []
        while !list.isAtEnd { items.append(try list.decode(FoundationJSON.self)) }
        self = .array(items)
      } else if let object = try? decoder.container(keyedBy: Key.self) {
        var members: [String: FoundationJSON] = [:]
        for key in object.allKeys { members[key.stringValue] = try object.decode(FoundationJSON.self, forKey: key) }
        self = .object(members)
      } else {
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
          self = .null
        } else if let b = try? single.decode(Bool.self) {
          self = .bool(b)
        } else if let d = try? single.decode(Double.self) {
          self = .number(d)
        } else {
          self = .string(try single.decode(String.self))
        }
      }
    }

    init(_ v: JSONValue) {
      switch v.kind {
      case .object(let members):
        self = .object(Dictionary(members.map { ($0.key, FoundationJSON($0.value)) }, uniquingKeysWith: { a, _ in a }))
      case .array(let items): self = .array(items.map(FoundationJSON.init))
      case .string(let s): self = .string(s)
      case .int(let n): self = .number(Double(n))
      case .double(let d): self = .number(d)
      case .bool(let b): self = .bool(b)
      case .null: self = .null
      }
    }

    static func == (a: Self, b: Self) -> Bool {
      switch (a, b) {
      case (.object(let x), .object(let y)): return x == y
      case (.array(let x), .array(let y)): return x == y
      case (.string(let x), .string(let y)): return x == y
      case (.number(let x), .number(let y)): return x == y || (x.isNaN && y.isNaN)
      case (.bool(let x), .bool(let y)): return x == y
      case (.null, .null): return true
      default: return false
      }
    }

    static func decode(_ text: String) throws -> FoundationJSON {
      let decoder = JSONDecoder()
      decoder.allowsJSON5 = true
      return try decoder.decode(FoundationJSON.self, from: Data(text.utf8))
    }
  }

  static let differentialDocuments: [String] = [
    """
    // comments, trailing commas, unquoted keys
    {a: 1, 'b': "two", c: [true, false, null,], d: {e: -0x1F, f: .5, g: 5., h: +1, i: 0xff,},}
    """,
    "/* numbers */ [1, 2.5, -3e2, 1E-2, 1.5E+2, Infinity, -Infinity, +Infinity, NaN, -0, 9223372036854775808,]",
    #"{"esc": "\x41\u00e9\uD83D\uDE00\n\t\"\\\/\b\f", 'single': 'it\'s "quoted"'}"#,
    "/* block\n comment */ {$id: 1, _x: 2, ä: 3, a\u{200C}b: 4, nested: [[[{}]]], empty: [], eo: {},}",
    "'a top-level string'",
    "  42  // trailing comment",
    """
    {
      version: 1,
      secure: [{ class: "KeePassXC", name: 'pw' }, { title: "/.*[Bb]ank.*/" }],
      capture: { linger: "500ms", quarantine: "off" },
    }
    """,
  ]

  @Test(arguments: PolicyParserTests.differentialDocuments)
  func differentialAgainstFoundation(_ text: String) throws {
    let theirs = try FoundationJSON.decode(text)
    let ours = FoundationJSON(try JSON5.parse(text, file: "d"))
    #expect(ours == theirs)
  }

  static let invalidDocuments: [String] = [
    "[1,,2]", "{a 1}", "[00]", "[01.5]", #"["\a"]"#, "[0x]", "[.]", "{a:1}x", "[tru]", "[1.5e]",
    #"["\uD83D"]"#, "{a-b:1}", "[\"nl\nx\"]", "[1 /* open", "[NaN1]", "[Infinityx]", "{'a':1 'b':2}",
  ]

  @Test(arguments: PolicyParserTests.invalidDocuments)
  func bothRejectInvalidDocuments(_ text: String) {
    #expect(throws: (any Error).self) { try FoundationJSON.decode(text) }
    #expect(throws: PolicyDiagnostic.self) { try JSON5.parse(text, file: "d") }
  }

  // MARK: - A full valid file

  static let fullPolicy = #"""
    // CaptureShield policy: comments, trailing commas, JSON5 niceties.
    {
      version: 1,
      /* windows to protect */
      secure: [
        { name: 'password manager', class: "KeePassXC", },
        { title: "/.*[Bb]ank.*/", exe: "/usr/bin/firefox*" },
        { uid: 1001, comm: 'signal-desktop' },
      ],
      capture: {
        allow: [{ exe: "/usr/bin/gnome-screenshot" }],
        known: [{ comm: "my-recorder", pid: 0x10 }],
        replaceDefaultKnown: false,
        linger: "500ms",
        quarantine: "3s",
        quarantineOnLaunch: false,
      },
      shield: { when: "always", failMode: "closed", input: "block", label: 'Private', },
      clipboard: {
        enabled: true,
        sources: [{ class: "KeePassXC" }],
        readers: "allowlist",
        allow: [{ comm: "xdotool" }],
        deny: [{ comm: "xclip" }],
        clearAfter: "1m",
        maxReads: 3,
        selections: ["CLIPBOARD"],
      },
    }
    """#

  @Test func fullValidFile() throws {
    let file = try parseOK(PolicyParserTests.fullPolicy, path: "p.json5")
    let policy = PolicyLoader.merge([file])
    func at(_ l: Int, _ c: Int) -> CaptureShield.SourceLocation { loc(l, c, "p.json5") }

    #expect(policy.version == 1)
    #expect(policy.sources == ["p.json5"])
    #expect(
      policy.secure == [
        Matcher(class: pattern("KeePassXC"), name: "password manager", location: at(6, 5)),
        Matcher(title: pattern("/.*[Bb]ank.*/"), exe: pattern("/usr/bin/firefox*"), location: at(7, 5)),
        Matcher(comm: pattern("signal-desktop"), uid: 1001, location: at(8, 5)),
      ])
    #expect(policy.captureAllow == [Matcher(exe: pattern("/usr/bin/gnome-screenshot"), location: at(11, 13))])
    #expect(
      policy.captureKnown
        == Policy.defaultKnownCapturers + [Matcher(comm: pattern("my-recorder"), pid: 16, location: at(12, 13))])
    #expect(policy.linger == .milliseconds(500))
    #expect(policy.quarantine == .seconds(3))
    #expect(!policy.quarantineOnLaunch)
    #expect(policy.when == .always)
    #expect(policy.failMode == .closed)
    #expect(policy.input == .block)
    #expect(policy.label == "Private")
    #expect(policy.clipboard.enabled == true)
    #expect(policy.clipboard.sources == [Matcher(class: pattern("KeePassXC"), location: at(21, 15))])
    #expect(policy.clipboard.readers == .allowList)
    #expect(policy.clipboard.allow == [Matcher(comm: pattern("xdotool"), location: at(23, 13))])
    #expect(policy.clipboard.deny == [Matcher(comm: pattern("xclip"), location: at(24, 12))])
    #expect(policy.clipboard.clearAfter == .seconds(60))
    #expect(policy.clipboard.maxReads == 3)
    #expect(policy.clipboard.selections == ["CLIPBOARD"])
    #expect(policy.secure[0].label == #""password manager" (p.json5:6:5)"#)
  }

  @Test func minimalFileLeavesEverythingUnset() throws {
    let file = try parseOK("{ version: 1 }")
    #expect(file == PolicyFile(path: "t.json5"))
    #expect(
      PolicyLoader.merge([file])
        == {
          var p = Policy()
          p.sources = ["t.json5"]
          return p
        }())
  }

  // MARK: - Pattern semantics

  struct MatchCase: Sendable, CustomTestStringConvertible {
    var pattern: String
    var value: String?
    var matches: Bool
    var testDescription: String { "\(pattern) ~ \(value.map { "\"\($0)\"" } ?? "nil") == \(matches)" }
  }

  @Test(arguments: [
    MatchCase(pattern: "firefox", value: "firefox", matches: true),
    MatchCase(pattern: "firefox", value: "Firefox", matches: false),
    MatchCase(pattern: "firefox", value: "firefox-esr", matches: false),
    MatchCase(pattern: "*", value: "", matches: true),
    MatchCase(pattern: "*", value: "/usr/bin/anything", matches: true),
    MatchCase(pattern: "*/obs", value: "/usr/bin/obs", matches: true),
    MatchCase(pattern: "*/obs", value: "/usr/bin/obs-studio", matches: false),
    MatchCase(pattern: "a*c", value: "abbbc", matches: true),
    MatchCase(pattern: "a*c", value: "abd", matches: false),
    MatchCase(pattern: "?", value: "x", matches: true),
    MatchCase(pattern: "?", value: "", matches: false),
    MatchCase(pattern: "?", value: "xy", matches: false),
    MatchCase(pattern: "?", value: "é", matches: true),
    MatchCase(pattern: "[a-z]1", value: "q1", matches: true),
    MatchCase(pattern: "[a-z]1", value: "Q1", matches: false),
    MatchCase(pattern: "[!x]", value: "y", matches: true),
    MatchCase(pattern: "[!x]", value: "x", matches: false),
    MatchCase(pattern: "[^x]", value: "x", matches: false),
    MatchCase(pattern: #"\*"#, value: "*", matches: true),
    MatchCase(pattern: #"\*"#, value: "a", matches: false),
    MatchCase(pattern: #"a\?"#, value: "a?", matches: true),
    MatchCase(pattern: #"a\?"#, value: "ab", matches: false),
    MatchCase(pattern: #"[\]]"#, value: "]", matches: true),
    MatchCase(pattern: "/bank/", value: "bank", matches: true),
    MatchCase(pattern: "/bank/", value: "mybanking", matches: false),
    MatchCase(pattern: "/.*bank.*/", value: "mybanking", matches: true),
    MatchCase(pattern: "/fire(fox|bird)/", value: "firefox", matches: true),
    MatchCase(pattern: "/fire(fox|bird)/", value: "firefoxes", matches: false),
    MatchCase(pattern: "/[0-9]+/", value: "123", matches: true),
    MatchCase(pattern: "/[0-9]+/", value: "12a", matches: false),
    MatchCase(pattern: "firefox", value: nil, matches: false),
    MatchCase(pattern: "*", value: nil, matches: false),
    MatchCase(pattern: "/.*/", value: nil, matches: false),
  ])
  func patternMatching(_ c: MatchCase) throws {
    #expect(try Pattern.parse(c.pattern).matches(c.value) == c.matches)
  }

  // MARK: - Durations

  struct DurationCase: Sendable, CustomTestStringConvertible {
    var text: String
    var nanoseconds: UInt64?
    var testDescription: String { "\"\(text)\"" }
  }

  @Test(arguments: [
    DurationCase(text: "250ms", nanoseconds: 250_000_000),
    DurationCase(text: "2s", nanoseconds: 2_000_000_000),
    DurationCase(text: "1.5s", nanoseconds: 1_500_000_000),
    DurationCase(text: "1.5m", nanoseconds: 90_000_000_000),
    DurationCase(text: "1h", nanoseconds: 3_600_000_000_000),
    DurationCase(text: "0s", nanoseconds: 0),
    DurationCase(text: "10.s", nanoseconds: 10_000_000_000),
    DurationCase(text: "2 secs", nanoseconds: nil),
    DurationCase(text: "2", nanoseconds: nil),
    DurationCase(text: "s", nanoseconds: nil),
    DurationCase(text: "", nanoseconds: nil),
    DurationCase(text: ".5s", nanoseconds: nil),
    DurationCase(text: "-1s", nanoseconds: nil),
    DurationCase(text: "1.2.3s", nanoseconds: nil),
    DurationCase(text: "1e3s", nanoseconds: nil),
    DurationCase(text: "2d", nanoseconds: nil),
    DurationCase(text: "2S", nanoseconds: nil),
    DurationCase(text: " 2s", nanoseconds: nil),
    DurationCase(text: "99999999999h", nanoseconds: nil),
  ])
  func durationParsing(_ c: DurationCase) {
    #expect(PolicyDuration(parsing: c.text)?.nanoseconds == c.nanoseconds)
  }

  /// `notify.enabled` across files: the last file that sets it wins; on by default.
  @Test(arguments: [
    (files: [String](), notify: true),
    (files: ["{ version: 1 }"], notify: true),
    (files: ["{ version: 1, notify: {} }"], notify: true),
    (files: ["{ version: 1, notify: { enabled: false } }"], notify: false),
    (files: ["{ version: 1, notify: { enabled: false } }", "{ version: 1 }"], notify: false),
    (files: ["{ version: 1, notify: { enabled: false } }", "{ version: 1, notify: { enabled: true } }"], notify: true),
  ])
  func notifyEnabled(files: [String], notify: Bool) throws {
    let parsed = try files.enumerated().map { try parseOK($0.element, path: "f\($0.offset).json5") }
    #expect(PolicyLoader.merge(parsed).notify == notify)
  }
}

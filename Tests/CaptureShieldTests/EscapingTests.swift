// `Escaping.show`, the one escaping function for untrusted text printed on a terminal,
// and the places that use it: policy diagnostics and `shieldctl policy check`.

import Foundation
import Testing

@testable import CaptureShield

/// One input to `Escaping.show` and what it must print.
struct EscapeCase: Sendable, CustomTestStringConvertible {
  var name: String
  var input: String
  var limit: Int = 200
  var expected: String

  var testDescription: String { name }
}

private let escapeCases: [EscapeCase] = [
  // C0 controls, DEL, C1 controls.
  EscapeCase(name: "NUL", input: "a\u{0}b", expected: #"a\u{0}b"#),
  EscapeCase(name: "ESC sequence (clear screen)", input: "\u{1B}[2J", expected: #"\u{1b}[2J"#),
  EscapeCase(name: "line feed, carriage return, tab", input: "a\nb\rc\td", expected: #"a\u{a}b\u{d}c\u{9}d"#),
  EscapeCase(name: "bell, backspace", input: "\u{7}\u{8}", expected: #"\u{7}\u{8}"#),
  EscapeCase(name: "DEL", input: "x\u{7F}", expected: #"x\u{7f}"#),
  EscapeCase(name: "C1 NEL", input: "a\u{85}b", expected: #"a\u{85}b"#),
  EscapeCase(name: "C1 CSI", input: "\u{9B}31m", expected: #"\u{9b}31m"#),
  EscapeCase(name: "C1 first and last", input: "\u{80}\u{9F}", expected: #"\u{80}\u{9f}"#),
  // Bidirectional controls.
  EscapeCase(name: "RLO (U+202E)", input: "evil\u{202E}txt.exe", expected: #"evil\u{202e}txt.exe"#),
  EscapeCase(
    name: "embeddings and overrides (U+202A-U+202E)", input: "\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}",
    expected: #"\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}"#),
  EscapeCase(
    name: "isolates (U+2066-U+2069)", input: "\u{2066}\u{2067}\u{2068}\u{2069}",
    expected: #"\u{2066}\u{2067}\u{2068}\u{2069}"#),
  EscapeCase(name: "LRM, RLM", input: "\u{200E}\u{200F}", expected: #"\u{200e}\u{200f}"#),
  EscapeCase(name: "Arabic letter mark (U+061C)", input: "a\u{61C}b", expected: #"a\u{61c}b"#),
  // Line and paragraph separators.
  EscapeCase(name: "line separator", input: "a\u{2028}b", expected: #"a\u{2028}b"#),
  EscapeCase(name: "paragraph separator", input: "a\u{2029}b", expected: #"a\u{2029}b"#),
  // Invisible format characters.
  EscapeCase(name: "zero-width space", input: "Kee\u{200B}PassXC", expected: #"Kee\u{200b}PassXC"#),
  EscapeCase(name: "zero-width non-joiner", input: "a\u{200C}b", expected: #"a\u{200c}b"#),
  EscapeCase(name: "zero-width joiner between letters", input: "Kee\u{200D}PassXC", expected: #"Kee\u{200d}PassXC"#),
  EscapeCase(name: "word joiner, invisible plus", input: "a\u{2060}b\u{2064}", expected: #"a\u{2060}b\u{2064}"#),
  EscapeCase(name: "deprecated format controls", input: "\u{206A}\u{206F}", expected: #"\u{206a}\u{206f}"#),
  EscapeCase(name: "BOM / zero-width no-break space", input: "\u{FEFF}bom", expected: #"\u{feff}bom"#),
  EscapeCase(name: "soft hyphen", input: "pass\u{AD}word", expected: #"pass\u{ad}word"#),
  EscapeCase(name: "Mongolian vowel separator", input: "a\u{180E}b", expected: #"a\u{180e}b"#),
  EscapeCase(name: "interlinear annotation", input: "\u{FFF9}a\u{FFFB}", expected: #"\u{fff9}a\u{fffb}"#),
  // Valid text kept as is.
  EscapeCase(name: "ASCII", input: "KeePassXC - db.kdbx", expected: "KeePassXC - db.kdbx"),
  EscapeCase(name: "German", input: "Grüße", expected: "Grüße"),
  EscapeCase(name: "Japanese", input: "日本語", expected: "日本語"),
  EscapeCase(name: "Hebrew (right-to-left letters, no controls)", input: "שלום", expected: "שלום"),
  EscapeCase(name: "emoji", input: "\u{1F512} locked", expected: "\u{1F512} locked"),
  EscapeCase(name: "emoji with skin tone", input: "\u{1F44D}\u{1F3FD}", expected: "\u{1F44D}\u{1F3FD}"),
  EscapeCase(name: "emoji with variation selector", input: "\u{2764}\u{FE0F}", expected: "\u{2764}\u{FE0F}"),
  EscapeCase(
    name: "emoji ZWJ sequence (woman technologist)", input: "\u{1F469}\u{200D}\u{1F4BB}",
    expected: "\u{1F469}\u{200D}\u{1F4BB}"),
  EscapeCase(
    name: "emoji ZWJ sequence with skin tone", input: "\u{1F469}\u{1F3FD}\u{200D}\u{1F4BB}",
    expected: "\u{1F469}\u{1F3FD}\u{200D}\u{1F4BB}"),
  EscapeCase(name: "combining accent", input: "e\u{301}", expected: "e\u{301}"),
  EscapeCase(name: "no-break space", input: "a\u{A0}b", expected: "a\u{A0}b"),
  EscapeCase(name: "backslash and quotes", input: #"C:\x "y""#, expected: #"C:\x "y""#),
  EscapeCase(name: "empty", input: "", expected: ""),
  // Truncation, in Unicode scalars.
  EscapeCase(name: "cut after the limit", input: "abcdef", limit: 3, expected: "abc…"),
  EscapeCase(name: "exactly the limit: not cut", input: "abc", limit: 3, expected: "abc"),
  EscapeCase(name: "limit 0", input: "a", limit: 0, expected: "…"),
  EscapeCase(name: "an escape counts as one", input: "\u{1B}\u{1B}\u{1B}", limit: 2, expected: #"\u{1b}\u{1b}…"#),
  EscapeCase(name: "cut non-ASCII", input: "日本語", limit: 2, expected: "日本…"),
  EscapeCase(
    name: "cut a long hostile string", input: String(repeating: "\u{202E}", count: 10_000), limit: 2,
    expected: #"\u{202e}\u{202e}…"#),
]

@Suite("Escaping untrusted text")
struct EscapingTests {
  @Test("Escaping.show", arguments: escapeCases)
  func show(_ c: EscapeCase) {
    #expect(Escaping.show(c.input, limit: c.limit) == c.expected)
  }

  @Test func everyEscapedScalarIsEscapedAndNothingElse() {
    var wrong: [String] = []
    for v in UInt32(0)...0xFFFF {
      guard let c = Unicode.Scalar(v) else { continue }  // surrogates
      let shown = Escaping.show("x\(c)y", limit: 10)
      let expected = Escaping.mustEscape(c) ? "x\\u{\(String(v, radix: 16))}y" : "x\(c)y"
      if shown != expected { wrong.append(String(v, radix: 16)) }
    }
    #expect(wrong.isEmpty, "wrongly shown: \(wrong.prefix(20))")
  }

  @Test func outputHasNoUnsafeScalars() {
    let hostile = (0..<0x3000).compactMap { Unicode.Scalar(UInt32($0)) }.map(String.init).joined()
    let shown = Escaping.show(hostile, limit: .max)
    #expect(!shown.unicodeScalars.contains(where: Escaping.mustEscape))
  }

  @Test func policyDiagnosticsEscapeAHostileKey() {
    // JSON5 escapes in the file: the key itself holds U+202E and ESC [2J.
    let text = #"{version: 1, "safe\u202Egnp.exe\u001B[2J": 1, shield: {when: "\u202Ealways"}}"#
    do {
      _ = try PolicyParser.parse(text, path: "hostile.json5")
      Issue.record("a hostile key was accepted")
    } catch {
      let out = error.description
      #expect(!out.unicodeScalars.contains("\u{202E}"), "\(out)")
      #expect(!out.unicodeScalars.contains("\u{1B}"), "\(out)")
      #expect(out.contains(#"unknown key 'safe\u{202e}gnp.exe\u{1b}[2J'"#), "\(out)")
      #expect(out.contains(#"unknown value '\u{202e}always'"#), "\(out)")
    }
  }

  @Test func policyDiagnosticsEscapeAStrayBidiControl() {
    // A raw U+202E outside any string: the syntax error names it as U+202E.
    do {
      _ = try PolicyParser.parse("{version: 1,\u{202E} }", path: "hostile.json5")
      Issue.record("a stray U+202E was accepted")
    } catch {
      let out = error.description
      #expect(!out.unicodeScalars.contains("\u{202E}"), "\(out)")
      #expect(out.contains("U+202E"), "\(out)")
    }
  }

  @Test func auditFormatsEscapeBidiControls() {
    let record = AuditRecord("secure-decision", [("title", .string("a\u{202E}b\u{200B}c\u{85}"))])
    let time = Date(timeIntervalSince1970: 0)
    for format in AuditFormat.allCases {
      let line = format.format(record, time: time)
      #expect(!line.unicodeScalars.contains(where: Escaping.mustEscape), "\(format): \(line)")
    }
    #expect(AuditFormat.jsonString("a\u{202E}b") == #""a\u202eb""#)
    let syslog = Syslog5424.format(record, time: time, hostname: "h", pid: 1)
    #expect(syslog.contains(#"title="a\u{202E}b\u{200B}c\u{85}""#), "\(syslog)")
  }

  @Test func policyCheckPrintsAHostileKeyEscaped() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("escaping-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    // Raw U+202E in a quoted key, and a JSON5-escaped ESC [2J.
    let file = dir.appendingPathComponent("policy\u{202E}nosj.json5")
    try Data(#"{version: 1, secure: [], "evil\#u{202E}key\u001B[2J": true}"#.utf8).write(to: file)
    try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)

    let r = try ShieldctlBinary.run(["policy", "check", file.path])
    #expect(r.status == 1, "\(r)")
    #expect(r.stdout.isEmpty, "\(r)")
    for raw: Unicode.Scalar in ["\u{202E}", "\u{1B}"] {
      #expect(!r.stderr.unicodeScalars.contains(raw), "\(r)")
    }
    #expect(r.stderr.contains(#"unknown key 'evil\u{202e}key\u{1b}[2J'"#), "\(r)")
    #expect(r.stderr.contains(#"policy\u{202e}nosj.json5"#), "\(r)")
  }

  @Test func policyCheckPrintsAHostileFileNameEscaped() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("escaping-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let file = dir.appendingPathComponent("ok\u{1B}[2J\u{202E}.json5")
    try Data("{version: 1}".utf8).write(to: file)
    try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)

    let r = try ShieldctlBinary.run(["policy", "check", file.path])
    #expect(r.status == 0, "\(r)")
    #expect(!r.stdout.unicodeScalars.contains("\u{202E}") && !r.stdout.unicodeScalars.contains("\u{1B}"), "\(r)")
    #expect(r.stdout.contains(#"ok\u{1b}[2J\u{202e}.json5: ok"#), "\(r)")
  }
}

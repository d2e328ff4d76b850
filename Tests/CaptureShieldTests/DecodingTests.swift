import Foundation
import Testing

@testable import CaptureShield

@Suite struct DecodingTests {
  // MARK: - TagState.decode

  struct TagCase: Sendable, CustomTestStringConvertible {
    var name: String
    var isCardinal: Bool
    var format: UInt8
    var bytes: [UInt8]
    var expected: TagState
    var testDescription: String { name }
  }

  static let tagCases: [TagCase] = [
    TagCase(name: "no property", isCardinal: false, format: 0, bytes: [], expected: .absent),
    TagCase(name: "CARDINAL/32 1", isCardinal: true, format: 32, bytes: [1, 0, 0, 0], expected: .secure),
    TagCase(name: "CARDINAL/32 0", isCardinal: true, format: 32, bytes: [0, 0, 0, 0], expected: .notSecure),
    TagCase(name: "CARDINAL/32 2", isCardinal: true, format: 32, bytes: [2, 0, 0, 0], expected: .malformed),
    TagCase(
      name: "CARDINAL/32 big-endian 1 is not 1", isCardinal: true, format: 32, bytes: [0, 0, 0, 1],
      expected: .malformed),
    TagCase(
      name: "CARDINAL/32 0xffffffff", isCardinal: true, format: 32, bytes: [255, 255, 255, 255],
      expected: .malformed),
    TagCase(name: "CARDINAL/32 empty", isCardinal: true, format: 32, bytes: [], expected: .malformed),
    TagCase(
      name: "CARDINAL/32 two values", isCardinal: true, format: 32, bytes: [1, 0, 0, 0, 1, 0, 0, 0],
      expected: .malformed),
    TagCase(name: "CARDINAL/32 short", isCardinal: true, format: 32, bytes: [1, 0, 0], expected: .malformed),
    TagCase(name: "CARDINAL/8", isCardinal: true, format: 8, bytes: [1], expected: .malformed),
    TagCase(name: "CARDINAL/16", isCardinal: true, format: 16, bytes: [1, 0], expected: .malformed),
    TagCase(name: "CARDINAL format 0", isCardinal: true, format: 0, bytes: [], expected: .malformed),
    TagCase(name: "INTEGER/32 1", isCardinal: false, format: 32, bytes: [1, 0, 0, 0], expected: .malformed),
    TagCase(name: "STRING \"1\"", isCardinal: false, format: 8, bytes: Array("1".utf8), expected: .malformed),
    TagCase(name: "type None with bytes", isCardinal: false, format: 0, bytes: [1], expected: .malformed),
  ]

  @Test("TagState.decode", arguments: tagCases)
  func decodeTag(_ c: TagCase) {
    let tag = TagState.decode(isCardinal: c.isCardinal, format: c.format, bytes: c.bytes)
    #expect(tag == c.expected)
    // Fail safe: anything but absent / 0 makes the window secure whatever the rules.
    let reason = Policy().secureReason(facts: Facts(), tag: tag)
    #expect(reason.isSecure == (c.expected == .secure || c.expected == .malformed))
  }

  // MARK: - PropertyDecoding.text

  struct TextCase: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var utf8: Bool
    var expected: String
    var testDescription: String { name }
  }

  static let textCases: [TextCase] = [
    TextCase(name: "ASCII", bytes: Array("Passwords".utf8), utf8: true, expected: "Passwords"),
    TextCase(name: "empty", bytes: [], utf8: true, expected: ""),
    TextCase(name: "UTF-8 two bytes", bytes: [0x63, 0x61, 0x66, 0xC3, 0xA9], utf8: true, expected: "caf\u{E9}"),
    TextCase(name: "UTF-8 emoji", bytes: [0xF0, 0x9F, 0x94, 0x92], utf8: true, expected: "\u{1F512}"),
    TextCase(name: "UTF-8 bytes read as Latin-1", bytes: [0xC3, 0xA9], utf8: false, expected: "\u{C3}\u{A9}"),
    TextCase(name: "Latin-1 e-acute", bytes: [0x63, 0x61, 0x66, 0xE9], utf8: false, expected: "caf\u{E9}"),
    TextCase(name: "Latin-1 0xff", bytes: [0xFF], utf8: false, expected: "\u{FF}"),
    TextCase(name: "Latin-1 C1 control kept", bytes: [0x85], utf8: false, expected: "\u{85}"),
    TextCase(name: "invalid byte", bytes: [0x61, 0xFF, 0x62], utf8: true, expected: "a\u{FFFD}b"),
    TextCase(name: "lone continuation", bytes: [0x80], utf8: true, expected: "\u{FFFD}"),
    TextCase(name: "truncated sequence at end", bytes: [0x61, 0xE2, 0x82], utf8: true, expected: "a\u{FFFD}"),
    TextCase(name: "overlong slash", bytes: [0xC0, 0xAF], utf8: true, expected: "\u{FFFD}\u{FFFD}"),
    TextCase(name: "encoded surrogate", bytes: [0xED, 0xA0, 0x80], utf8: true, expected: "\u{FFFD}\u{FFFD}\u{FFFD}"),
    TextCase(
      name: "above U+10FFFF", bytes: [0xF4, 0x90, 0x80, 0x80], utf8: true,
      expected: String(repeating: "\u{FFFD}", count: 4)),
    TextCase(name: "NUL ends UTF-8", bytes: [0x61, 0x62, 0x00, 0x63, 0x64], utf8: true, expected: "ab"),
    TextCase(name: "NUL ends Latin-1", bytes: [0x61, 0x62, 0x00, 0x63, 0x64], utf8: false, expected: "ab"),
    TextCase(name: "leading NUL", bytes: [0x00, 0x61], utf8: true, expected: ""),
    TextCase(name: "NUL after invalid bytes", bytes: [0xFF, 0x00, 0xFF], utf8: true, expected: "\u{FFFD}"),
    TextCase(
      name: "control characters are kept (escaping is the audit's job)", bytes: [0x1B, 0x5B, 0x0A], utf8: true,
      expected: "\u{1B}[\n"),
  ]

  @Test("PropertyDecoding.text", arguments: textCases)
  func decodeText(_ c: TextCase) {
    #expect(PropertyDecoding.text(c.bytes, utf8: c.utf8) == c.expected)
  }

  struct CapCase: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var utf8: Bool
    var scalars: Int
    var first: Unicode.Scalar?
    var testDescription: String { name }
  }

  static let cap = PropertyDecoding.maxTextScalars

  static let capCases: [CapCase] = [
    CapCase(name: "1 MiB ASCII", bytes: Array(repeating: 0x61, count: 1 << 20), utf8: true, scalars: cap, first: "a"),
    CapCase(name: "exactly the cap", bytes: Array(repeating: 0x61, count: cap), utf8: true, scalars: cap, first: "a"),
    CapCase(
      name: "one over the cap", bytes: Array(repeating: 0x61, count: cap + 1), utf8: true, scalars: cap, first: "a"),
    CapCase(
      name: "one under the cap", bytes: Array(repeating: 0x61, count: cap - 1), utf8: true, scalars: cap - 1, first: "a"
    ),
    CapCase(
      name: "two-byte UTF-8", bytes: Array([UInt8]([0xC3, 0xA9]).repeated(10_000)), utf8: true, scalars: cap,
      first: "\u{E9}"),
    CapCase(
      name: "four-byte UTF-8", bytes: Array([UInt8]([0xF0, 0x9F, 0x94, 0x92]).repeated(5_000)), utf8: true,
      scalars: cap, first: "\u{1F512}"),
    CapCase(
      name: "invalid UTF-8 (each byte a U+FFFD)", bytes: Array(repeating: 0xFF, count: 100_000), utf8: true,
      scalars: cap, first: "\u{FFFD}"),
    CapCase(name: "Latin-1", bytes: Array(repeating: 0xE9, count: 100_000), utf8: false, scalars: cap, first: "\u{E9}"),
    CapCase(
      name: "combining marks are capped by scalar, not character",
      bytes: Array([UInt8]([0x65, 0xCC, 0x81]).repeated(3_000)), utf8: true, scalars: cap, first: "e"),
    CapCase(
      name: "NUL before the cap wins",
      bytes: Array(repeating: 0x61, count: 10) + [0] + Array(repeating: 0x61, count: 1 << 16),
      utf8: true, scalars: 10, first: "a"),
  ]

  @Test("PropertyDecoding.text caps huge input at maxTextScalars", arguments: capCases)
  func capText(_ c: CapCase) {
    let s = PropertyDecoding.text(c.bytes, utf8: c.utf8)
    #expect(s.unicodeScalars.count == c.scalars)
    #expect(s.unicodeScalars.first == c.first)
    #expect(s.unicodeScalars.allSatisfy { $0 == c.first || $0 == "\u{301}" })
  }

  // MARK: - PropertyDecoding.wmClass

  struct ClassCase: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var instance: String?
    var cls: String?
    var testDescription: String { name }
  }

  static func b(_ s: String) -> [UInt8] { s.unicodeScalars.map { UInt8($0.value) } }

  static let classCases: [ClassCase] = [
    ClassCase(name: "instance and class", bytes: b("xterm\0XTerm\0"), instance: "xterm", cls: "XTerm"),
    ClassCase(name: "no trailing NUL", bytes: b("xterm\0XTerm"), instance: "xterm", cls: "XTerm"),
    ClassCase(name: "instance only, NUL-terminated", bytes: b("xterm\0"), instance: "xterm", cls: nil),
    ClassCase(name: "instance only", bytes: b("xterm"), instance: "xterm", cls: nil),
    ClassCase(name: "empty instance", bytes: b("\0XTerm\0"), instance: nil, cls: "XTerm"),
    ClassCase(name: "empty", bytes: [], instance: nil, cls: nil),
    ClassCase(name: "two NULs", bytes: b("\0\0"), instance: nil, cls: nil),
    ClassCase(name: "extra parts ignored", bytes: b("a\0b\0c\0d\0"), instance: "a", cls: "b"),
    ClassCase(name: "Latin-1", bytes: b("caf\u{E9}\0Caf\u{E9}\0"), instance: "caf\u{E9}", cls: "Caf\u{E9}"),
    ClassCase(
      name: "UTF-8 bytes are read as Latin-1", bytes: [0xC3, 0xA9, 0, 0x41, 0], instance: "\u{C3}\u{A9}", cls: "A"),
    ClassCase(
      name: "huge class is capped", bytes: b("i\0") + Array(repeating: 0x43, count: 100_000), instance: "i",
      cls: String(repeating: "C", count: PropertyDecoding.maxTextScalars)),
  ]

  @Test("PropertyDecoding.wmClass", arguments: classCases)
  func decodeWMClass(_ c: ClassCase) {
    let r = PropertyDecoding.wmClass(c.bytes)
    #expect(r.instance == c.instance)
    #expect(r.class == c.cls)
  }

  // MARK: - PropertyDecoding.cardinal

  struct CardinalCase: Sendable, CustomTestStringConvertible {
    var name: String
    var format: UInt8
    var bytes: [UInt8]
    var expected: UInt32?
    var testDescription: String { name }
  }

  static let cardinalCases: [CardinalCase] = [
    CardinalCase(name: "12345", format: 32, bytes: [0x39, 0x30, 0, 0], expected: 12345),
    CardinalCase(name: "first of two values", format: 32, bytes: [1, 0, 0, 0, 2, 0, 0, 0], expected: 1),
    CardinalCase(name: "max", format: 32, bytes: [255, 255, 255, 255], expected: .max),
    CardinalCase(name: "little-endian", format: 32, bytes: [0x04, 0x03, 0x02, 0x01], expected: 0x0102_0304),
    CardinalCase(name: "short", format: 32, bytes: [1, 2, 3], expected: nil),
    CardinalCase(name: "empty", format: 32, bytes: [], expected: nil),
    CardinalCase(name: "format 16", format: 16, bytes: [1, 0, 0, 0], expected: nil),
    CardinalCase(name: "format 8", format: 8, bytes: [1, 0, 0, 0], expected: nil),
    CardinalCase(name: "format 0", format: 0, bytes: [], expected: nil),
  ]

  @Test("PropertyDecoding.cardinal", arguments: cardinalCases)
  func decodeCardinal(_ c: CardinalCase) {
    #expect(PropertyDecoding.cardinal(format: c.format, bytes: c.bytes) == c.expected)
  }

  // MARK: - AuditFormat

  static let time = Date(timeIntervalSince1970: 1_700_000_000.25)

  struct TextFormatCase: Sendable, CustomTestStringConvertible {
    var name: String
    var value: AuditRecord.Value
    var expected: String
    var testDescription: String { name }
  }

  static let textFormatCases: [TextFormatCase] = [
    TextFormatCase(name: "plain", value: "0x1200004", expected: "0x1200004"),
    TextFormatCase(name: "empty", value: "", expected: #""""#),
    TextFormatCase(name: "space", value: "linger elapsed", expected: #""linger elapsed""#),
    TextFormatCase(name: "equals sign", value: "a=b", expected: #""a=b""#),
    TextFormatCase(name: "quote", value: #"rule #1 "bank""#, expected: #""rule #1 \"bank\"""#),
    TextFormatCase(name: "backslash", value: #"C:\x"#, expected: #""C:\\x""#),
    TextFormatCase(name: "newline", value: "a\nb", expected: #""a\nb""#),
    TextFormatCase(name: "carriage return and tab", value: "a\r\tb", expected: #""a\r\tb""#),
    TextFormatCase(name: "escape sequence", value: "\u{1B}[31mred", expected: #""\u001b[31mred""#),
    TextFormatCase(name: "NUL", value: "a\u{0}b", expected: #""a\u0000b""#),
    TextFormatCase(name: "DEL", value: "a\u{7F}", expected: #""a\u007f""#),
    TextFormatCase(name: "NEL (C1)", value: "a\u{85}b", expected: #""a\u0085b""#),
    TextFormatCase(name: "line separator", value: "a\u{2028}b", expected: #""a\u2028b""#),
    TextFormatCase(name: "paragraph separator", value: "a\u{2029}b", expected: #""a\u2029b""#),
    TextFormatCase(name: "non-ASCII is quoted, kept", value: "caf\u{E9}", expected: "\"caf\u{E9}\""),
    TextFormatCase(name: "int", value: 42, expected: "42"),
    TextFormatCase(name: "negative int", value: -1, expected: "-1"),
    TextFormatCase(name: "double", value: .double(1.5), expected: "1.500"),
    TextFormatCase(name: "bool", value: .bool(false), expected: "false"),
  ]

  @Test("AuditFormat.text quotes values", arguments: textFormatCases)
  func textFormat(_ c: TextFormatCase) throws {
    let line = AuditFormat.text.format(AuditRecord("shield", [("window", "0x100"), ("v", c.value)]), time: Self.time)
    let prefix = try #require(line.firstRange(of: " captureshield "))
    #expect(line[prefix.lowerBound...] == " captureshield event=shield window=0x100 v=\(c.expected)")
    #expect(!Self.hasLineBreak(line))
  }

  @Test("timestamp is ISO 8601 UTC with milliseconds", arguments: AuditFormat.allCases)
  func timestamp(_ format: AuditFormat) throws {
    let line = format.format(AuditRecord("x"), time: Self.time)
    #expect(line.contains("2023-11-14T22:13:20.250"))
    // Without a zone designator an ISO 8601 time is local time, not UTC.
    #expect(line.contains("2023-11-14T22:13:20.250Z"))
  }

  /// Scalars a log reader (or a terminal, or a JavaScript JSON consumer) takes as a line break.
  static func hasLineBreak(_ s: String) -> Bool {
    s.unicodeScalars.contains { [0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029].contains($0.value) }
  }

  static let hostile: [String] = [
    "plain",
    "",
    "a\nb",
    "a\r\nb",
    "x\n2023-11-14T22:13:20.250Z captureshield event=unshield window=0x100 reason=\"forged\"",
    #"x"} {"event":"unshield","window":"0x100"#,
    #"x\"},{"event":"forged"#,
    "\u{2028}{\"event\":\"forged\"}",
    "\u{2029}",
    "\u{85}NEL",
    "\u{0}NUL",
    "\u{1B}[2K\u{1B}[1Gcleared line",
    "\u{7F}\u{9F}",
    "\u{B}\u{C}vertical tab, form feed",
    "\\",
    "\u{202E}RTL override",
    "\u{FEFF}BOM",
    "caf\u{E9} \u{1F512} \u{4E2D}\u{6587}",
    String(repeating: "\u{2028}\"\n", count: 1000),
  ]

  @Test("AuditFormat.json: a hostile title cannot forge a line", arguments: hostile)
  func jsonFormat(_ title: String) throws {
    let record = AuditRecord(
      "secure-decision",
      [
        ("window", "0x100"), ("secure", .bool(true)), ("title", .string(title)), ("pid", 1234),
        ("seconds", .double(2.5)), ("nan", .double(.nan)),
      ])
    let line = AuditFormat.json.format(record, time: Self.time)
    #expect(!Self.hasLineBreak(line))
    #expect(
      line.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F && !(0x80..<0xA0).contains($0.value) })
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
    let dict = try #require(object as? [String: Any])
    #expect(dict.count == 8)
    #expect(dict["event"] as? String == "secure-decision")
    #expect(dict["window"] as? String == "0x100")
    #expect(dict["secure"] as? Bool == true)
    // JSONSerialization on Linux drops a leading U+FEFF inside a string value, so the
    // exact round trip of the title is checked with JSONDecoder.
    #expect((dict["title"] as? String).map { $0 == title || "\u{FEFF}" + $0 == title } == true)
    struct Line: Decodable { var title: String }
    #expect(try JSONDecoder().decode(Line.self, from: Data(line.utf8)).title == title)
    #expect(dict["pid"] as? Int == 1234)
    #expect(dict["seconds"] as? Double == 2.5)
    #expect(dict["nan"] is NSNull)
    #expect((dict["time"] as? String)?.hasPrefix("2023-11-14T22:13:20.250") == true)
    // Keys keep the record's order (time, event, then the fields).
    let keys = [
      "\"time\":", "\"event\":", "\"window\":", "\"secure\":", "\"title\":", "\"pid\":", "\"seconds\":", "\"nan\":",
    ]
    let positions = keys.compactMap { line.range(of: $0)?.lowerBound }
    #expect(positions.count == keys.count && positions == positions.sorted())

    // The text format keeps it on one line too, and quoted.
    let text = AuditFormat.text.format(record, time: Self.time)
    #expect(!Self.hasLineBreak(text))
  }

  @Test func jsonEscapesUseTheShortFormsAndLowercaseHex() {
    #expect(AuditFormat.jsonString("\"\\\n\r\t") == #""\"\\\n\r\t""#)
    #expect(
      AuditFormat.jsonString("\u{1}\u{1F}\u{7F}\u{80}\u{9F}\u{A0}") == "\"\\u0001\\u001f\\u007f\\u0080\\u009f\u{A0}\"")
    #expect(AuditFormat.jsonString("\u{2028}\u{2029}") == #""\u2028\u2029""#)
    #expect(AuditFormat.jsonString("/") == #""/""#)
  }

  @Test func jsonKeepsNumbersAsNumbers() throws {
    let record = AuditRecord(
      "session-end",
      [("session", 3), ("seconds", .double(0.001)), ("big", .double(1e300)), ("inf", .double(.infinity))])
    let line = AuditFormat.json.format(record, time: Self.time)
    let dict = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    #expect(dict["session"] as? Int == 3)
    #expect(dict["seconds"] as? Double == 0.001)
    #expect(dict["big"] as? Double == 1e300)
    #expect(dict["inf"] is NSNull)
  }
}

extension Array {
  fileprivate func repeated(_ n: Int) -> [Element] { Array((0..<n).map { _ in self }.joined()) }
}

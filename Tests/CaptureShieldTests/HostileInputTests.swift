// Hostile input: policy files (nesting, huge strings, many matchers, bad UTF-8, NULs,
// symlinks, permissions), catastrophic regexes, property decoders fed random bytes,
// audit and syslog formatting of hostile titles.

import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield

private func diagnostics(_ text: String, path: String = "t.json5") -> [String] {
  do {
    _ = try PolicyParser.parse(text, path: path)
    return []
  } catch {
    return error.diagnostics.map(\.description)
  }
}

/// A temporary directory removed at the end of the test.
private final class Scratch {
  let path: String
  init() throws {
    path = NSTemporaryDirectory() + "hostile-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }
  deinit { try? FileManager.default.removeItem(atPath: path) }
  func write(_ name: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws -> String {
    let p = path + "/" + name
    try Data(bytes).write(to: URL(fileURLWithPath: p))
    chmod(p, mode)
    return p
  }
}

private func loadDiagnostics(_ paths: [String]) -> [String] {
  do {
    _ = try PolicyLoader.load(paths: paths)
    return []
  } catch {
    return error.diagnostics.map(\.description)
  }
}

@Suite("Hostile input")
struct HostileInputTests {
  // MARK: Catastrophic regexes

  @Test(
    "catastrophic regex shapes are refused with a diagnostic at the string",
    arguments: [
      "(a+)+$", "(a*)*", "(a|a)*", "(a|ab)+", "(\\w|\\d)*", "(aa?)+", "(a+){3}", "(x+x+)+y", "(.*a){12}",
      "(a)\\1", "(?<n>a)\\k<n>", "a*a*a*b", ".*a.*a.*b", "((a+))+", "(?:[a-z]+\\s?)*",
    ])
  func catastrophicRegexRefused(_ body: String) {
    let escaped = body.replacingOccurrences(of: "\\", with: "\\\\")
    let text = "{\n  version: 1,\n  secure: [{title: \"/\(escaped)/\"}],\n}\n"
    let d = diagnostics(text, path: "p.json5")
    #expect(d.count == 1, "\(body): \(d)")
    let first = d.first ?? ""
    #expect(first.hasPrefix("p.json5:3:20: error: bad regular expression"), "\(body): \(first)")
    #expect(
      first.contains("exponential") || first.contains("backreference") || first.contains("repetitions in a row"),
      "\(body): \(first)")
    #expect(throws: RegexSafety.Rejection.self) { try RegexPattern(body) }
  }

  @Test("the ReDoS example: /(a+)+$/ is reported as path:line:col: error")
  func redosExample() {
    let d = diagnostics("{version: 1, secure: [{class: \"/(a+)+$/\"}]}", path: "/etc/x.json5")
    #expect(
      d == [
        "/etc/x.json5:1:31: error: bad regular expression '/(a+)+$/' for 'class': nested repetition: a repeated"
          + " group contains a repeated or optional element (such patterns can take exponential time; rewrite it"
          + " without nested or ambiguous repetition)"
      ], "\(d)")
  }

  @Test(
    "ordinary regexes still pass",
    arguments: [
      ".*bank.*", "KeePassXC|Bitwarden|1Password", "fire(fox|bird)", "(foo|bar)+", "[a-z]+-[0-9]{1,4}",
      ".*?Bank.*?", "^Bank.*$", "\\d+", "(?i)(bank|credit)+", "[0-9]+", "(Bank|Payroll|Tax) 3[: ].*",
      "\\Q(a+)+\\E", "(ab){2,5}", "[(]a+[)]+", "(?:x|y|z){1,3}",
    ])
  func ordinaryRegexAccepted(_ body: String) throws {
    _ = try RegexPattern(body)
    let escaped = body.replacingOccurrences(of: "\\", with: "\\\\")
    #expect(diagnostics("{version: 1, secure: [{title: \"/\(escaped)/\"}]}") == [])
  }

  @Test("values matched against a regex are cut at 4096 scalars; the worst allowed pattern stays fast")
  func regexValueCap() throws {
    let r = try RegexPattern("[a-z]+[a-z]+b")
    let value = String(repeating: "a", count: 1_000_000) + "b"
    let start = ContinuousClock.now
    #expect(!r.matches(value))  // the trailing "b" is beyond the cap
    #expect(ContinuousClock.now - start < .seconds(5))
    #expect(try RegexPattern(".*bank.*").matches(String(repeating: "x", count: 4000) + "bank"))
  }

  // MARK: Policy files

  @Test("deep nesting, huge strings and keys, many matchers: diagnostics, no crash")
  func hostilePolicyShapes() {
    // 100,000 nested arrays.
    let deep = "{version: 1, secure: " + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
    #expect(!diagnostics(deep + "}").isEmpty)
    let deepObjects = String(repeating: "{a:", count: 50_000) + "1" + String(repeating: "}", count: 50_000)
    #expect(!diagnostics(deepObjects).isEmpty)
    // A 900 KB string and a 900 KB key.
    let big = String(repeating: "é", count: 450_000)
    let d1 = diagnostics("{version: 1, secure: [{title: \"\(big)\"}]}")
    #expect(d1.count == 1 && d1[0].contains("too long"), "\(d1.map { $0.prefix(200) })")
    #expect(diagnostics("{version: 1, \"\(big)\": 1}").count == 1)
    // 10,000 matchers pass; 10,001 are refused.
    let rule = "{class: \"/A|B/\", title: \"*x*\"},"
    let many = "{version: 1, secure: [" + String(repeating: rule, count: 10_000) + "]}"
    #expect(diagnostics(many) == [])
    let tooMany = "{version: 1, secure: [" + String(repeating: rule, count: 10_001) + "]}"
    #expect(diagnostics(tooMany).count == 1)
    // NULs and other controls, in strings and outside them.
    #expect(diagnostics("{version: 1, secure: [{title: \"a\u{0}b\"}]}").count <= 1)
    #expect(diagnostics("{version: 1,\u{0} secure: []}").count == 1)
    #expect(!diagnostics("{version: 1, shield: {label: \"\u{202E}\u{2028}\"}}").contains { $0.contains("\n") })
  }

  @Test("random bytes and mutations of a valid policy never crash the parser")
  func randomPolicyText() {
    var g = SplitMix64(seed: 1)
    let valid = Array(
      """
      {version: 1, secure: [{name: "x", class: "/KeePassXC|Bit(warden)?/", title: "*Bank*", pid: 3}],
       capture: {allow: [{exe: "/usr/bin/picom"}], linger: "2s", quarantine: "off"},
       shield: {when: "always", failMode: "closed", label: 'hi\\n'}, // c
      }
      """.utf8)
    for i in 0..<3000 {
      var bytes: [UInt8]
      if i % 3 == 0 {
        bytes = g.bytes(Int(g.next() % 200))
      } else {
        bytes = valid
        for _ in 0..<(1 + Int(g.next() % 4)) {
          let p = Int(g.next() % UInt64(bytes.count))
          switch g.next() % 3 {
          case 0: bytes[p] = UInt8(truncatingIfNeeded: g.next())
          case 1: bytes.remove(at: p)
          default:
            let punctuation = Array("{}[]\"'/\\*+(|:,".utf8)
            bytes.insert(punctuation[Int(g.next() % UInt64(punctuation.count))], at: p)
          }
        }
      }
      let text = String(decoding: bytes, as: UTF8.self)
      for d in diagnostics(text) {
        #expect(!d.contains("\n"), "case \(i): \(d)")
      }
    }
  }

  @Test("invalid UTF-8 and NULs in a policy file: a diagnostic at the right place")
  func invalidUTF8File() throws {
    let dir = try Scratch()
    let bad = try dir.write("bad.json5", Array("{\n  version: 1, // ok\n  x".utf8) + [0xC3, 0x28] + Array("\n}".utf8))
    #expect(loadDiagnostics([bad]) == ["\(bad):3:4: error: the file is not valid UTF-8"])
    let nul = try dir.write("nul.json5", Array("{version: 1}".utf8) + [0])
    let d = loadDiagnostics([nul])
    #expect(d.count == 1 && d[0].hasPrefix(nul + ":1:13: error:"), "\(d)")
  }

  @Test("symlinks are followed; the target's permissions decide; world-writable files are refused")
  func symlinksAndPermissions() throws {
    let dir = try Scratch()
    let good = try dir.write("good.json5", Array("{version: 1}".utf8))
    let link = dir.path + "/link.json5"
    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: good)
    #expect(loadDiagnostics([link]) == [])
    // A symlink to a file others can write is refused (the check is on the target).
    let open = try dir.write("open.json5", Array("{version: 1}".utf8), mode: 0o666)
    let openLink = dir.path + "/open-link.json5"
    try FileManager.default.createSymbolicLink(atPath: openLink, withDestinationPath: open)
    let d = loadDiagnostics([openLink])
    #expect(
      d == [
        "\(openLink):1:1: error: refusing policy file writable by other users (mode 0666); run chmod o-w \(openLink)"
      ])
    #expect(loadDiagnostics([open]).first?.contains("writable by other users") == true)
    // Dangling and looping symlinks, directories, FIFOs.
    let dangling = dir.path + "/dangling.json5"
    try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: dir.path + "/nothing")
    #expect(loadDiagnostics([dangling]).first?.contains("cannot read") == true)
    let loop = dir.path + "/loop.json5"
    try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: loop)
    #expect(loadDiagnostics([loop]).first?.contains("cannot read") == true)
    #expect(loadDiagnostics([dir.path]).first?.contains("is a directory") == true)
    let fifo = dir.path + "/fifo.json5"
    #expect(mkfifo(fifo, 0o644) == 0)
    #expect(loadDiagnostics([fifo]).first?.contains("not a regular file") == true)
    // Oversized.
    let huge = try dir.write("huge.json5", [UInt8](repeating: 0x20, count: PolicyLoader.maxFileSize + 1))
    #expect(loadDiagnostics([huge]).first?.contains("larger than 1 MiB") == true)
  }

  // MARK: Property decoders

  @Test("property decoders on 20,000 random inputs: no trap, bounded output, the fail-safe tag")
  func randomPropertyBytes() {
    var g = SplitMix64(seed: 2)
    for i in 0..<20_000 {
      let count = i % 100 == 0 ? Int(g.next() % 20_000) : Int(g.next() % 64)
      let bytes = g.bytes(count)
      let utf8 = PropertyDecoding.text(bytes, utf8: true)
      let latin1 = PropertyDecoding.text(bytes, utf8: false)
      #expect(utf8.unicodeScalars.count <= PropertyDecoding.maxTextScalars)
      #expect(latin1.unicodeScalars.count <= PropertyDecoding.maxTextScalars)
      #expect(!utf8.unicodeScalars.contains("\u{0}") && !latin1.unicodeScalars.contains("\u{0}"))
      let c = PropertyDecoding.wmClass(bytes)
      #expect((c.instance?.unicodeScalars.count ?? 0) <= PropertyDecoding.maxTextScalars)
      let format = [0, 8, 16, 32, UInt8(truncatingIfNeeded: g.next())][Int(g.next() % 5)]
      let value = PropertyDecoding.cardinal(format: format, bytes: bytes)
      #expect(value == nil || (format == 32 && bytes.count >= 4))
      let isCardinal = g.next() % 2 == 0
      let tag = TagState.decode(isCardinal: isCardinal, format: format, bytes: bytes)
      switch tag {
      case .absent: #expect(!isCardinal && format == 0 && bytes.isEmpty)
      case .secure, .notSecure: #expect(isCardinal && format == 32 && bytes.count == 4)
      case .malformed: break
      }
    }
    // Wrong type/format/length with value 1 is malformed, never "not secure".
    #expect(TagState.decode(isCardinal: false, format: 32, bytes: [1, 0, 0, 0]) == .malformed)
    #expect(TagState.decode(isCardinal: true, format: 8, bytes: [1]) == .malformed)
    #expect(TagState.decode(isCardinal: true, format: 32, bytes: [0, 0, 0, 0, 0, 0, 0, 0]) == .malformed)
    #expect(TagState.decode(isCardinal: false, format: 8, bytes: []) == .malformed)
  }

  @Test("the capture classifier and RECORD reply parsing on random bytes never trap")
  func randomRecordedData() {
    var g = SplitMix64(seed: 3)
    let resolved = CaptureCatalog.standard.resolved(extensions: [
      "MIT-SHM": 130, "Composite": 142, "RENDER": 139, "DRI3": 149, "DAMAGE": 143, "XFIXES": 138, "RECORD": 146,
    ])
    var classified = 0
    for i in 0..<20_000 {
      var bytes = g.bytes(Int(g.next() % 96))
      if bytes.count >= 4, i % 2 == 0 {
        // Plausible headers: a known major opcode and a matching length.
        bytes[0] = [73, 62, 130, 142, 139, 149, 0, 255][Int(g.next() % 8)]
        let words = UInt16(bytes.count / 4)
        bytes[2] = UInt8(words & 0xFF)
        bytes[3] = UInt8(words >> 8)
      }
      let big = g.next() % 2 == 0
      if resolved.classify(bytes, clientBase: 0x0020_0000, resourceMask: 0x001F_FFFF, bigEndian: big) != nil {
        classified += 1
      }
      bytes.withUnsafeBytes { raw in
        if let reply = RecordedReply.decode(raw) {
          #expect(reply.data.lowerBound == 32 && reply.data.upperBound <= raw.count)
          let data = UnsafeRawBufferPointer(rebasing: raw[reply.data])
          let consumed = RecordedReply.forEachRequest(in: data, bigEndian: big) { request in
            _ = resolved.classify(request, clientBase: 1, resourceMask: 0xFFFF, isSecure: { _ in true })
          }
          #expect(consumed <= data.count)
        }
        let consumed = RecordedReply.forEachRequest(in: raw, bigEndian: big) { _ in }
        #expect(consumed <= raw.count)
      }
    }
    #expect(classified > 0)
  }

  // MARK: Audit and syslog formatting

  static let hostileTitles: [String] = [
    "line\nbreak", "cr\rhere", "tab\tz", "\u{2028}ls", "\u{2029}ps", "\u{85}nel", "\u{202E}evil\u{202C}",
    "\u{0}nul", "esc\u{1B}[31m", "quote\" \\ ] [ =", "\u{FEFF}bom", "\u{7F}del", String(repeating: "\n", count: 5000),
  ]

  @Test("audit records with hostile titles never contain a line break, in any format")
  func auditNeverBreaksLines() {
    var g = SplitMix64(seed: 4)
    var titles = Self.hostileTitles
    for _ in 0..<2000 {
      var v = String.UnicodeScalarView()
      for _ in 0..<Int(g.next() % 40) {
        let pick = g.next() % 4
        let value: UInt32 =
          pick == 0
          ? UInt32(g.next() % 0x20) : pick == 1 ? 0x2000 + UInt32(g.next() % 0x70) : UInt32(g.next() % 0x11_0000)
        if let s = Unicode.Scalar(value) { v.append(s) }
      }
      titles.append(String(v))
    }
    let breaks: Set<Unicode.Scalar> = ["\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{2028}", "\u{2029}"]
    for title in titles {
      let r = AuditRecord("shield", [("window", "0x1"), ("title", .string(title)), ("n", 3)])
      for format in AuditFormat.allCases {
        let line = format.format(r, time: Date(timeIntervalSince1970: 0))
        #expect(!line.unicodeScalars.contains { breaks.contains($0) }, "\(format): \(title.debugDescription)")
      }
      let json = AuditFormat.json.format(r, time: Date(timeIntervalSince1970: 0))
      let parsed = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
      // (JSONSerialization drops a U+FEFF at the start of a string; the line itself keeps it.)
      if !title.hasPrefix("\u{FEFF}") {
        #expect(parsed?["title"] as? String == title, "\(title.debugDescription)")
      }
      let syslog = Syslog5424.format(r, time: Date(timeIntervalSince1970: 0), hostname: "h", pid: 1)
      #expect(!syslog.unicodeScalars.contains { breaks.contains($0) }, "syslog: \(title.debugDescription)")
    }
  }

  @Test("RFC 5424: header, structured data with escaping, message")
  func syslogFormat() {
    let r = AuditRecord(
      "shield-tampered", [("window", "0x1200004"), ("title", "a\"b\\c]d"), ("count", 2), ("ok", .bool(true))])
    let line = Syslog5424.format(r, time: Date(timeIntervalSince1970: 1_700_000_000.25), hostname: "host 1", pid: 42)
    #expect(
      line
        == "<28>1 2023-11-14T22:13:20.250Z host1 captureshield 42 shield-tampered [captureshield@32473"
        + " window=\"0x1200004\" title=\"a\\\"b\\\\c\\]d\" count=\"2\" ok=\"true\"] \u{FEFF}event=shield-tampered")
    let info = Syslog5424.format(
      AuditRecord("info", [("message", "watching\ndisplay")]), time: Date(timeIntervalSince1970: 0), hostname: nil,
      pid: 7)
    #expect(
      info
        == "<30>1 1970-01-01T00:00:00.000Z - captureshield 7 info [captureshield@32473 message=\"watching\\u{A}display\"]"
        + " \u{FEFF}watching\\u{A}display")
    let bare = Syslog5424.format(AuditRecord("resume"), time: Date(timeIntervalSince1970: 0), hostname: "h", pid: 1)
    #expect(bare == "<29>1 1970-01-01T00:00:00.000Z h captureshield 1 resume - \u{FEFF}event=resume")
    // Long MSGIDs, odd keys and long values are cut to the RFC's limits.
    let odd = Syslog5424.format(
      AuditRecord(String(repeating: "e", count: 40), [("k=e y]\"", .string(String(repeating: "v", count: 5000)))]),
      time: Date(timeIntervalSince1970: 0), hostname: "h", pid: 1)
    #expect(odd.contains(" \(String(repeating: "e", count: 32)) [captureshield@32473 key=\""))
    #expect(odd.contains(String(repeating: "v", count: Syslog5424.maxValueScalars) + "…\"]"))
  }

  @Test("--syslog sends RFC 5424 datagrams to $CAPTURESHIELD_SYSLOG_SOCKET; a missing socket warns once")
  func syslogSocket() throws {
    let dir = try Scratch()
    let path = dir.path + "/log"
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
    #expect(fd >= 0)
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in path.utf8.enumerated() { raw[i] = b }
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    #expect(bound == 0)
    let log = AuditLog(format: .json, syslog: true, environment: [SyslogSocket.pathVariable: path])
    log.write(AuditRecord("shield", [("window", "0x5"), ("title", "x\ny")]))
    log.info("hello")
    var buffer = [UInt8](repeating: 0, count: 65536)
    var received: [String] = []
    for _ in 0..<2 {
      let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
      if n > 0 { received.append(String(decoding: buffer[..<n], as: UTF8.self)) }
    }
    #expect(received.count == 2, "\(received)")
    #expect(received.first?.hasPrefix("<29>1 ") == true)
    #expect(received.first?.contains(" captureshield \(getpid()) shield [captureshield@32473 window=\"0x5\"") == true)
    #expect(received.last?.hasSuffix("\u{FEFF}hello") == true)
    // No socket there: falls back (no trap, no exception); writes still work.
    let missing = AuditLog(format: .text, syslog: true, environment: [SyslogSocket.pathVariable: dir.path + "/none"])
    missing.info("still fine")
  }
}

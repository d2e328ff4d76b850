// Which script an interpreter runs (`InterpretedProgram`), and what its name is used for:
// naming in audits and notices, `capture.known` — never an allow rule.

import CaptureShield
import Testing

@Suite struct InterpretedProgramTests {
  struct Row: Sendable, CustomTestStringConvertible {
    var exe: String
    var cmdline: [String]
    var script: String?
    var testDescription: String { "\(exe) \(cmdline.dropFirst().joined(separator: " ")) → \(script ?? "none")" }
  }

  static let rows: [Row] = [
    Row(
      exe: "/usr/bin/python3.11", cmdline: ["/usr/bin/python3", "/usr/bin/xpra", "shadow", ":0"],
      script: "/usr/bin/xpra"),
    Row(exe: "/usr/bin/python3.11", cmdline: ["python3", "-u", "-W", "ignore", "./shot.py"], script: "./shot.py"),
    Row(exe: "/usr/bin/python3.11", cmdline: ["python3", "-X", "dev", "--", "-odd.py"], script: "-odd.py"),
    Row(exe: "/usr/bin/python3.11", cmdline: ["python3", "-c", "import x", "/usr/bin/xpra"], script: nil),
    Row(exe: "/usr/bin/python3.11", cmdline: ["python3", "-m", "xpra", "shadow"], script: nil),
    Row(exe: "/usr/bin/python3.11", cmdline: ["python3", "-Bc", "code"], script: nil),
    Row(exe: "/usr/bin/python3.11", cmdline: ["python3"], script: nil),
    Row(
      exe: "/usr/bin/perl", cmdline: ["/usr/bin/perl", "-w", "/usr/bin/shutter", "--min_at_startup"],
      script: "/usr/bin/shutter"),
    Row(exe: "/usr/bin/perl", cmdline: ["perl", "-I", "/tmp/lib", "-e", "print 1"], script: nil),
    Row(exe: "/usr/bin/perl5.36.0", cmdline: ["perl", "-Mstrict", "tool.pl"], script: "tool.pl"),
    Row(exe: "/usr/bin/ruby3.1", cmdline: ["ruby", "-r", "x11", "grab.rb"], script: "grab.rb"),
    Row(exe: "/usr/bin/bash", cmdline: ["bash", "-e", "/usr/local/bin/shoot"], script: "/usr/local/bin/shoot"),
    Row(exe: "/usr/bin/bash", cmdline: ["bash", "-c", "import -window root x.png"], script: nil),
    // not interpreters: no script
    Row(exe: "/usr/bin/ffmpeg", cmdline: ["ffmpeg", "-f", "x11grab", "-i", ":0"], script: nil),
    Row(exe: "/usr/bin/pythonista", cmdline: ["pythonista", "x.py"], script: nil),
    Row(exe: "/usr/bin/shutter", cmdline: ["shutter", "x"], script: nil),
  ]

  @Test("the script argument", arguments: rows)
  func scriptArgument(_ r: Row) {
    #expect(InterpretedProgram.scriptArgument(exe: r.exe, cmdline: r.cmdline) == r.script)
  }

  @Test(
    "lexical normalization",
    arguments: [
      ("/tmp/x/./shot.py", "/tmp/x/shot.py"), ("/tmp/x/../y//z.py", "/tmp/y/z.py"), ("/../a", "/a"),
      ("/usr/bin/xpra", "/usr/bin/xpra"),
    ])
  func normalized(_ c: (String, String)) {
    #expect(InterpretedProgram.lexicallyNormalized(c.0) == c.1)
  }

  static let xpra = ClientIdentity(
    pid: 42, exe: "/usr/bin/python3.11", comm: "xpra", uid: 1000,
    cmdline: ["/usr/bin/python3", "/usr/bin/xpra", "shadow", ":0"])

  static func withScript(_ i: ClientIdentity, _ s: String?) -> ClientIdentity {
    var i = i
    i.script = s
    return i
  }

  @Test func knownByItsScriptByDefault() {
    let p = Policy()
    #expect(p.classify(Self.withScript(Self.xpra, "/usr/bin/xpra")) == .known)
    // control: the same interpreter without the script is an ordinary client
    #expect(p.classify(Self.xpra) == .ordinary)
    #expect(p.classify(Self.withScript(Self.xpra, "/usr/bin/other-tool")) == .ordinary)
  }

  @Test func allowRulesNeverMatchTheScript() throws {
    var p = Policy()
    p.captureAllow = [Matcher(exe: try Pattern.parse("*/xpra"), name: "xpra")]
    p.captureKnown = []
    #expect(p.classify(Self.withScript(Self.xpra, "/usr/bin/xpra")) == .ordinary)
    // control: a program whose executable matches is allowed
    #expect(p.classify(ClientIdentity(pid: 43, exe: "/usr/bin/xpra", uid: 1000)) == .allowed)
  }

  @Test func namedByItsScript() {
    let c = ClientID(0x80_0000)
    #expect(CaptureNotifier.programName(Self.withScript(Self.xpra, "/usr/bin/xpra"), client: c) == "xpra")
    #expect(CaptureNotifier.programName(Self.xpra, client: c) == "python3.11")
    let e = Engine(policy: Policy())
    let fields = e.identityFields(Self.withScript(Self.xpra, "/usr/bin/xpra"))
    #expect(fields.contains { $0.0 == "script" && $0.1 == .string("/usr/bin/xpra") })
    #expect(fields.contains { $0.0 == "exe" && $0.1 == .string("/usr/bin/python3.11") })
  }

  @Test func x0tigervncIsKnown() {
    #expect(Policy().classify(ClientIdentity(pid: 44, exe: "/usr/bin/X0tigervnc", uid: 1000)) == .known)
  }
}

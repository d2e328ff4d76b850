import Foundation
import Testing

@testable import CaptureShield

// `capture.allowInjected`: an allow rule on `exe` trusts whatever runs inside the program,
// so by default it does not count for a process started with LD_PRELOAD/LD_AUDIT or traced.

struct InjectionCase: Sendable, CustomTestStringConvertible {
  var name: String
  var environ: String?
  var status: String?
  var expected: String?
  var testDescription: String { name }
}

private let plainStatus = "Name:\txwd\nUid:\t1000\t1000\t1000\t1000\nTracerPid:\t0\n"

private let injectionCases: [InjectionCase] = [
  InjectionCase(
    name: "plain environment, not traced", environ: "HOME=/root\0PATH=/usr/bin\0", status: plainStatus, expected: nil),
  InjectionCase(
    name: "LD_PRELOAD", environ: "HOME=/root\0LD_PRELOAD=/tmp/evil.so\0", status: plainStatus,
    expected: "LD_PRELOAD=/tmp/evil.so"),
  InjectionCase(
    name: "LD_AUDIT", environ: "LD_AUDIT=/tmp/a.so\0", status: plainStatus, expected: "LD_AUDIT=/tmp/a.so"),
  InjectionCase(
    name: "an empty LD_PRELOAD loads nothing", environ: "LD_PRELOAD=\0X=1\0", status: plainStatus, expected: nil),
  InjectionCase(name: "separators only load nothing", environ: "LD_PRELOAD= : \0", status: plainStatus, expected: nil),
  InjectionCase(
    name: "a variable that only starts the same is not it", environ: "LD_PRELOADX=/tmp/x.so\0MY_LD_PRELOAD=/x\0",
    status: plainStatus, expected: nil),
  InjectionCase(
    name: "traced", environ: "HOME=/root\0", status: "Name:\txwd\nTracerPid:\t4242\n", expected: "traced by PID 4242"),
  InjectionCase(
    name: "traced wins over the environment", environ: "LD_PRELOAD=/x.so\0",
    status: "TracerPid:\t7\n", expected: "traced by PID 7"),
  InjectionCase(
    name: "unreadable environment (another user's process)", environ: nil, status: plainStatus,
    expected: "environment unreadable"),
  InjectionCase(
    name: "LD_LIBRARY_PATH of root's directories", environ: "LD_LIBRARY_PATH=/usr/lib:/lib\0", status: plainStatus,
    expected: nil),
  InjectionCase(
    name: "LD_LIBRARY_PATH naming a directory others can write", environ: "LD_LIBRARY_PATH=/usr/lib:/tmp\0",
    status: plainStatus, expected: "LD_LIBRARY_PATH names /tmp (not root's, or writable by others)"),
  InjectionCase(
    name: "LD_PRELOAD wins over LD_LIBRARY_PATH", environ: "LD_LIBRARY_PATH=/tmp\0LD_PRELOAD=/x.so\0",
    status: plainStatus, expected: "LD_PRELOAD=/x.so"),
]

@Test(arguments: injectionCases)
func injectionIsReadFromProc(_ c: InjectionCase) {
  let got = ProcessInfoReader.injection(
    environ: c.environ.map { Array($0.utf8) }, status: c.status.map { Array($0.utf8) })
  #expect(got == c.expected)
}

@Test func ownProcessIsNotInjectedUnlessItIs() {
  // This test process: its real /proc entries. The expectation follows its real environment.
  let id = ProcessInfoReader.identity(pid: Int(getpid()))
  let preload = ProcessInfo.processInfo.environment["LD_PRELOAD"].map { !$0.isEmpty } ?? false
  #expect((id.injection != nil) == preload)
}

struct AllowCase: Sendable, CustomTestStringConvertible {
  var name: String
  var injection: String?
  var allowInjected: Bool
  var expected: ClientClass
  var refusal: String?
  var testDescription: String { name }
}

private let allowCases: [AllowCase] = [
  AllowCase(name: "clean process: allowed", injection: nil, allowInjected: false, expected: .allowed, refusal: nil),
  AllowCase(
    name: "LD_PRELOAD: not allowed", injection: "LD_PRELOAD=/tmp/x.so", allowInjected: false, expected: .ordinary,
    refusal: "LD_PRELOAD=/tmp/x.so"),
  AllowCase(
    name: "traced: not allowed", injection: "traced by PID 9", allowInjected: false, expected: .ordinary,
    refusal: "traced by PID 9"),
  AllowCase(
    name: "allowInjected true: allowed anyway", injection: "LD_PRELOAD=/tmp/x.so", allowInjected: true,
    expected: .allowed, refusal: nil),
]

private let xwdAllow = Matcher(exe: try! Pattern.parse("*/xwd"), name: "xwd")

@Test(arguments: allowCases)
func allowRulesRefuseInjectedProcesses(_ c: AllowCase) {
  var p = Policy()
  p.captureAllow = [xwdAllow]
  p.allowInjected = c.allowInjected
  let id = ClientIdentity(pid: 10, exe: "/usr/bin/xwd", comm: "xwd", uid: 1000, injection: c.injection)
  #expect(p.classify(id) == c.expected)
  #expect(p.allowRefusal(id) == c.refusal)
  // A client no allow rule matches is never "refused": there was nothing to refuse.
  let other = ClientIdentity(pid: 11, exe: "/usr/bin/other", comm: "other", uid: 1000, injection: c.injection)
  #expect(p.allowRefusal(other) == nil)
}

@Test func injectedAllowedClientStartsASessionAndIsAudited() {
  var p = Policy()
  p.captureAllow = [xwdAllow]
  p.hold = .duration(.seconds(0))
  let w: WindowID = 0x100
  let app = ClientID(0x40_0000)
  let tool = ClientID(0x60_0000)
  for injection in [nil, "LD_PRELOAD=/tmp/x.so"] as [String?] {
    var e = Engine(policy: p)
    _ = e.handle(.windowAppeared(WindowInfo(id: w, client: app, tag: .secure)), now: .seconds(0))
    let id = ClientIdentity(pid: 10, exe: "/usr/bin/xwd", comm: "xwd", uid: 1000, injection: injection)
    let connected = e.handle(.clientConnected(tool, id), now: .seconds(1))
    let fx = e.handle(.captureRequest(tool, CaptureRequest(kind: "GetImage", target: 1)), now: .seconds(1.001))
    let refused = connected.contains {
      if case .audit(let r) = $0 { return r.event == "allow-refused" && r["why"] == .string("LD_PRELOAD=/tmp/x.so") }
      return false
    }
    #expect(refused == (injection != nil))
    #expect(fx.contains(.shield(w)) == (injection != nil))
  }
}

/// `LD_LIBRARY_PATH` entries an allow rule must not trust: any a non-root user could put
/// a library into (`ProcessInfoReader.unsafeLoaderDirectory`).
@Test(
  arguments: [
    ("/usr/lib", nil),
    ("/usr/lib:/lib", nil),
    ("/usr/lib::/lib", "an empty entry (the working directory)"),
    (":/usr/lib", "an empty entry (the working directory)"),
    ("lib", "lib (relative to the working directory)"),
    ("/usr/lib:/home/u/lib", "/home/u/lib (not root's, or writable by others)"),
  ] as [(String, String?)])
func unsafeLoaderDirectory(_ value: String, _ expected: String?) {
  let safe: Set<String> = ["/usr/lib", "/lib"]
  #expect(ProcessInfoReader.unsafeLoaderDirectory(value, isSafe: { safe.contains($0) }) == expected)
}

/// Root's system directories only root can change; /tmp (others may write) and a missing
/// directory do not count.
@Test(arguments: [("/usr/lib", true), ("/", true), ("/tmp", false), ("/nonexistent-captureshield", false)])
func rootOnlyDirectories(_ path: String, _ expected: Bool) {
  #expect(ProcessInfoReader.rootOnly(path) == expected)
}

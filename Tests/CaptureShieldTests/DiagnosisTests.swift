import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

// `shieldctl doctor`'s pure decisions: facts, policy and daemon health to findings.

struct DiagnosisCase: Sendable, CustomTestStringConvertible {
  var name: String
  var facts: DesktopFacts
  var allow: Bool = false
  var daemon: DaemonHealth = .notRunning
  /// The checks that must be problems (and no other).
  var problems: Set<String>
  var testDescription: String { name }
}

private let picom = ClientIdentity(pid: 7, exe: "/usr/bin/picom", comm: "picom", uid: 1000)
private let healthy = DesktopFacts(display: ":0", vendor: "The X.Org Foundation", vendorRelease: 12_101_007)

private func with(_ change: (inout DesktopFacts) -> Void) -> DesktopFacts {
  var f = healthy
  change(&f)
  return f
}

private let diagnosisCases: [DiagnosisCase] = [
  DiagnosisCase(name: "no daemon", facts: healthy, problems: ["daemon"]),
  DiagnosisCase(name: "healthy with a daemon", facts: healthy, daemon: .running(emptyState()), problems: []),
  DiagnosisCase(
    name: "a daemon that does not answer", facts: healthy, daemon: .unhealthy("stopped"), problems: ["daemon"]),
  DiagnosisCase(
    name: "Xwayland", facts: with { $0.isXwayland = true }, daemon: .running(emptyState()), problems: ["X server"]),
  DiagnosisCase(
    name: "no RECORD", facts: with { $0.hasRecord = false }, daemon: .running(emptyState()), problems: ["RECORD"]),
  DiagnosisCase(
    name: "no X-Resource", facts: with { $0.hasXRes = false }, daemon: .running(emptyState()), problems: ["X-Resource"]),
  DiagnosisCase(
    name: "untrusted compositor", facts: with { $0.compositor = picom }, daemon: .running(emptyState()),
    problems: ["compositor"]),
  DiagnosisCase(
    name: "allowed compositor", facts: with { $0.compositor = picom }, allow: true, daemon: .running(emptyState()),
    problems: []),
  DiagnosisCase(
    name: "module that does not trust the daemon",
    facts: with {
      $0.moduleVersion = "1.2"
      $0.moduleTrustsDaemon = false
    }, daemon: .running(emptyState()), problems: ["Xorg module"]),
  DiagnosisCase(
    name: "module, no daemon to ask about",
    facts: with { $0.moduleVersion = "1.2" }, problems: ["daemon"]),
  DiagnosisCase(
    name: "ptrace_scope 0 is a note, not a problem", facts: with { $0.ptraceScope = 0 },
    daemon: .running(emptyState()), problems: []),
  DiagnosisCase(
    name: "no Yama is a note, not a problem", facts: with { $0.ptraceScope = nil }, daemon: .running(emptyState()),
    problems: []),
  DiagnosisCase(
    name: "a compositor the daemon refused under the module",
    facts: with {
      $0.compositor = picom
      $0.moduleVersion = "1.2"
      $0.moduleTrustsDaemon = true
    }, daemon: .running(refusedCompositorState()), problems: ["compositor"]),
]

private func refusedCompositorState() -> DaemonState {
  var s = emptyState()
  s.enforcement = DaemonState.Enforcement(kind: "server")
  s.enforcement?.compositorRefused = "started by PID 401 (/usr/bin/xterm), an untrusted client of this display"
  return s
}

@Test(
  arguments: [
    (nil, Finding.Level.note, "no Yama"), (0, .note, "ptrace_scope is 0: any program of your user"),
    (1, .ok, "ptrace_scope is 1: a program can read another's memory only if it is its parent"),
    (2, .ok, "only root"), (3, .ok, "no program can attach"),
  ] as [(Int?, Finding.Level, String)])
func ptraceFinding(_ scope: Int?, _ level: Finding.Level, _ text: String) {
  let f = Diagnosis.findings(
    facts: with { $0.ptraceScope = scope }, policyFiles: [], policy: .success(Policy()), daemon: .notRunning)
  let finding = f.first { $0.check == "ptrace" }
  #expect(finding?.level == level)
  #expect(finding?.text.contains(text) == true, "\(String(describing: finding))")
}

private func emptyState() -> DaemonState {
  var e = Engine(policy: Policy())
  _ = e.handle(.tick, now: .seconds(1))
  return e.snapshot(pid: 42, display: ":0", startedAt: 0)
}

@Test(arguments: diagnosisCases)
func diagnosis(_ c: DiagnosisCase) {
  var p = Policy()
  if c.allow { p.captureAllow = [Matcher(exe: try! Pattern.parse("/usr/bin/picom"), name: "picom")] }
  let f = Diagnosis.findings(facts: c.facts, policyFiles: [], policy: .success(p), daemon: c.daemon)
  #expect(Set(f.filter { $0.level == .problem }.map(\.check)) == c.problems, "\(f)")
  // Every problem says what to do.
  #expect(f.filter { $0.level == .problem }.allSatisfy { $0.fix != nil }, "\(f)")
}

@Test func anInvalidPolicyIsAProblemWithItsDiagnostics() {
  let error = PolicyError(diagnostics: [
    PolicyDiagnostic(location: SourceLocation(file: "/etc/x.json5", line: 2, column: 3), message: "unknown key 'alow'")
  ])
  let f = Diagnosis.findings(
    facts: healthy, policyFiles: ["/etc/x.json5"], policy: .failure(error), daemon: .notRunning)
  let p = f.first { $0.check == "policy" }
  #expect(p?.level == .problem && p?.text.contains("/etc/x.json5:2:3: error: unknown key 'alow'") == true, "\(f)")
}

/// What `doctor` says of the secure windows, by the daemon's state: client-side shields
/// hide them from the user while a capture runs; under the module the user always sees
/// them and untrusted captures never do, whatever `shield.when` says.
@Test(arguments: [
  ("client-side, nobody capturing", "client", false, false, "visible to you right now: nobody captures"),
  ("client-side, a capture runs", "client", true, false, "hidden right now while these capture: /usr/bin/xwd"),
  ("client-side, paused", "client", true, true, "shown to every capture: shielding is paused"),
  ("server, nobody capturing", "server", false, false, "visible to you; black in every capture"),
  ("server, a capture runs", "server", true, false, "visible to you; black in every capture"),
  ("server, paused", "server", false, true, "shown to every capture: shielding is paused"),
])
func secureWindowsFinding(_ name: String, _ kind: String, _ capturing: Bool, _ paused: Bool, _ prefix: String) {
  var s = emptyState()
  s.enforcement = DaemonState.Enforcement(kind: kind)
  s.paused = paused
  if kind == "server" { s.policy.when = .always }
  if capturing {
    s.sessions = [
      DaemonState.SessionRow(
        id: 1, client: ClientID(0x40_0000), kind: .request, pid: 7, exe: "/usr/bin/xwd", firstRequest: "GetImage",
        requests: 1, ageSeconds: 0.1, endsIn: 1)
    ]
  }
  let f = Diagnosis.findings(facts: healthy, policyFiles: [], policy: .success(Policy()), daemon: .running(s))
  let finding = f.first { $0.check == "secure windows" }
  #expect(finding?.text.hasPrefix(prefix) == true, "\(name): \(String(describing: finding))")
  #expect(finding?.level != .problem, "\(name)")
}

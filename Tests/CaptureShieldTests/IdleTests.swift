// `capture.idle`: a known recorder that sits open stops hiding the secure
// windows after the idle time, and its next sign of capture (a request, a prelude) or a new
// connection of the same program raises them again.

import Testing

@testable import CaptureShieldCore

private let win: WindowID = 0x100
private let app = ClientID(0x40_0000)
private let obs = ClientID(0x60_0000)
private let obs2 = ClientID(0x80_0000)
private let other = ClientID(0xa0_0000)
private let comp = ClientID(0xc0_0000)

private let appID = ClientIdentity(pid: 100, exe: "/usr/bin/keepassxc", comm: "keepassxc", uid: 1000)
private let obsID = ClientIdentity(pid: 200, exe: "/usr/bin/obs", comm: "obs", uid: 1000)
private let obs2ID = ClientIdentity(pid: 200, exe: "/usr/bin/obs", comm: "obs", uid: 1000)
private let otherID = ClientIdentity(pid: 300, exe: "/usr/bin/grabber", comm: "grabber", uid: 1000)
private let compID = ClientIdentity(pid: 400, exe: "/usr/bin/xcompmgr", comm: "xcompmgr", uid: 1000)

private func idlePolicy(_ idle: PolicyDuration?, hold: CaptureHold = .connected) -> Policy {
  var p = Policy()
  p.captureKnown = [Matcher(exe: try! Pattern.parse("/usr/bin/obs"), name: "obs")]
  p.compositors = []
  p.idle = idle
  p.hold = hold
  p.linger = .seconds(2)
  return p
}

private let secure = WindowInfo(
  id: win, client: app, facts: Facts(class: "KeePassXC", title: "Passwords"), tag: .secure)
private let getImage = CaptureRequest(kind: "GetImage", target: 0x2a)
private let attach = CaptureRequest(kind: "MIT-SHM Attach")

/// One scenario: events at times (seconds), then whether the window is shielded at each
/// checkpoint (after the event at that index).
struct IdleScenario: CustomTestStringConvertible, Sendable {
  var name: String
  var policy: Policy
  var events: [(Double, Engine.Event)]
  /// Event index → shielded after it.
  var shielded: [Int: Bool]
  /// Audit record names expected somewhere in the run, in order.
  var audits: [String] = []
  var testDescription: String { name }
}

private let start: [(Double, Engine.Event)] = [
  (0, .windowAppeared(secure)), (0, .clientConnected(app, appID)),
]

private let idleScenarios: [IdleScenario] = [
  IdleScenario(
    name: "a known recorder that sits open: shielded at connect, idle after 5 s",
    policy: idlePolicy(.seconds(5)),
    events: start + [(1, .clientConnected(obs, obsID)), (5.9, .tick), (6, .tick), (30, .tick)],
    shielded: [2: true, 3: true, 4: false, 5: false], audits: ["session-start", "session-idle"]),
  IdleScenario(
    name: "capture.idle off: shielded for the whole wait (today's behaviour)",
    policy: idlePolicy(nil),
    events: start + [(1, .clientConnected(obs, obsID)), (6, .tick), (300, .tick)],
    shielded: [2: true, 3: true, 4: true], audits: ["session-start"]),
  IdleScenario(
    name: "back on the next capture request; idle again 5 s after the last one",
    policy: idlePolicy(.seconds(5)),
    events: start + [
      (1, .clientConnected(obs, obsID)), (6, .tick), (10, .captureRequest(obs, getImage)),
      (14.9, .captureRequest(obs, getImage)), (19.8, .tick), (19.9, .tick),
    ],
    shielded: [3: false, 4: true, 5: true, 6: true, 7: false],
    audits: ["session-start", "session-idle", "session-resume", "session-start", "session-idle", "session-idle"]),
  IdleScenario(
    name: "back on a prelude (MIT-SHM Attach) before any capture request",
    policy: idlePolicy(.seconds(5)),
    events: start + [(1, .clientConnected(obs, obsID)), (6, .tick), (8, .capturePrelude(obs, attach)), (12.9, .tick)],
    shielded: [3: false, 4: true, 5: true], audits: ["session-start", "session-idle", "session-resume"]),
  IdleScenario(
    name: "back on a new connection of the same program",
    policy: idlePolicy(.seconds(5)),
    events: start + [(1, .clientConnected(obs, obsID)), (6, .tick), (8, .clientConnected(obs2, obs2ID))],
    shielded: [3: false, 4: true], audits: ["session-start", "session-idle", "session-start"]),
  IdleScenario(
    name: "a prelude from a client with no session starts none",
    policy: idlePolicy(.seconds(5)),
    events: start + [(1, .clientConnected(other, otherID)), (2, .capturePrelude(other, attach)), (8, .tick)],
    shielded: [3: false, 4: false]),
  IdleScenario(
    name: "an ordinary client's held request session never goes idle (patient capturer)",
    policy: idlePolicy(.seconds(5)),
    events: start + [(1, .clientConnected(other, otherID)), (2, .captureRequest(other, getImage)), (60, .tick)],
    shielded: [3: true, 4: true], audits: ["session-start"]),
  IdleScenario(
    name: "a compositor's session never goes idle",
    policy: idlePolicy(.seconds(5)),
    events: start + [(1, .clientConnected(comp, compID)), (1, .compositorChanged(comp)), (60, .tick)],
    shielded: [3: true, 4: true]),
  IdleScenario(
    name: "an idle recorder's exit does not raise the shields for the linger",
    policy: idlePolicy(.seconds(5)),
    events: start + [(1, .clientConnected(obs, obsID)), (6, .tick), (7, .clientGone(obs)), (7.5, .tick)],
    shielded: [3: false, 4: false, 5: false], audits: ["session-start", "session-idle", "session-end"]),
  IdleScenario(
    name: "pause and resume leave the idle state as it is",
    policy: idlePolicy(.seconds(5)),
    events: start + [
      (1, .clientConnected(obs, obsID)), (2, .pause(until: nil, by: "test")), (6, .tick), (7, .resume(by: "test")),
      (8, .capturePrelude(obs, attach)), (9, .pause(until: nil, by: "test")), (10, .resume(by: "test")),
    ],
    shielded: [2: true, 3: false, 4: false, 5: false, 6: true, 7: false, 8: true]),
  IdleScenario(
    name: "a reload that turns capture.idle off wakes the idle session",
    policy: idlePolicy(.seconds(5)),
    events: start + [(1, .clientConnected(obs, obsID)), (6, .tick), (7, .policyReplaced(idlePolicy(nil)))],
    shielded: [3: false, 4: true], audits: ["session-start", "session-idle", "session-resume"]),
  IdleScenario(
    name: "a request session under a hold duration ends as before",
    policy: idlePolicy(.seconds(5), hold: .duration(.seconds(1))),
    events: start + [(1, .clientConnected(other, otherID)), (2, .captureRequest(other, getImage)), (4.1, .tick)],
    shielded: [3: true, 4: false], audits: ["session-start", "session-end"]),
]

@Suite("capture.idle: recorders that sit open")
struct IdleTests {
  @Test(arguments: idleScenarios)
  func scenario(_ s: IdleScenario) {
    var engine = Engine(policy: s.policy)
    var audits: [String] = []
    for (i, (at, event)) in s.events.enumerated() {
      let fx = engine.handle(event, now: .seconds(at))
      for case .audit(let r) in fx where r.event.hasPrefix("session-") { audits.append(r.event) }
      if let want = s.shielded[i] {
        #expect(engine.shielded.contains(win) == want, "after event \(i) (\(event)) at \(at) s")
      }
    }
    if !s.audits.isEmpty { #expect(audits == s.audits) }
  }

  @Test("the next deadline includes the idle time, so the shell ticks then")
  func deadline() {
    var engine = Engine(policy: idlePolicy(.seconds(5)))
    _ = engine.handle(.windowAppeared(secure), now: .seconds(0))
    _ = engine.handle(.clientConnected(obs, obsID), now: .seconds(1))
    #expect(engine.nextDeadline == .seconds(6))
    _ = engine.handle(.captureRequest(obs, getImage), now: .seconds(3))
    #expect(engine.nextDeadline == .seconds(8))
    _ = engine.handle(.tick, now: .seconds(8))
    #expect(engine.nextDeadline == nil)
    #expect(!engine.shieldsActive)
  }

  @Test("the default is 5 s; \"off\" and a duration parse; a bad value is an error")
  func policyKey() throws {
    #expect(Policy().idle == .seconds(5))
    let off = try PolicyParser.parse(#"{ version: 1, capture: { idle: "off" } }"#, path: "t.json5")
    #expect(off.capture.idle == .off)
    let d = try PolicyParser.parse(#"{ version: 1, capture: { idle: "30s" } }"#, path: "t.json5")
    #expect(d.capture.idle == .duration(.seconds(30)))
    #expect(throws: PolicyError.self) {
      try PolicyParser.parse(#"{ version: 1, capture: { idle: 5 } }"#, path: "t.json5")
    }
    #expect(throws: PolicyError.self) {
      try PolicyParser.parse(#"{ version: 1, capture: { idel: "5s" } }"#, path: "t.json5")
    }
  }

  @Test("the recorded catalog has the preludes; none of them starts a session")
  func preludes() {
    let kinds = Set(CaptureCatalog.standard.preludesOnly.entries.map(\.kind))
    #expect(kinds == CaptureCatalog.preludeKinds)
    #expect(CaptureCatalog.standard.preludesOnly.entries.allSatisfy { !$0.startsSession })
  }
}

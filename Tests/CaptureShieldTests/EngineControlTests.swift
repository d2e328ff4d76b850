import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension EngineTests {
  static let controlScenarios: [Scenario] = [
    Scenario(
      name: "pause with an end time; the pause expires on the tick at its deadline",
      policy: policy(when: .always), setup: desk,
      steps: [
        Step(
          1, .pause(until: t(11), by: "alice"),
          ["audit pause by=alice", "unshield 0x100", "audit unshield window=0x100 reason=paused", "publish"],
          shielded: [], active: false, deadline: .at(11)),
        Step(
          5, .windowAppeared(window(w3, tag: .secure)),
          ["audit secure-decision window=0x102 secure=true reason=tag", "publish"], shielded: []),
        Step(10.9, .tick, [], shielded: []),
        Step(
          11, .tick,
          [
            "audit resume by='pause expired'",
            "shield 0x100", "audit shield window=0x100 reason=tag trigger=shield.when=always",
            "shield 0x102", "audit shield window=0x102 reason=tag trigger=shield.when=always", "publish",
          ],
          shielded: [w1, w3], active: true, deadline: Deadline.none),
      ]),
    Scenario(
      name: "pause without an end holds until resume",
      policy: policy(when: .always), setup: desk,
      steps: [
        Step(
          1, .pause(until: nil, by: "alice"),
          ["audit pause by=alice", "unshield 0x100", "audit unshield window=0x100 reason=paused", "publish"],
          shielded: [], active: false, deadline: Deadline.none),
        Step(100_000, .tick, [], shielded: [], active: false),
        Step(
          100_001, .resume(by: "bob"),
          [
            "audit resume by=bob", "shield 0x100", "audit shield window=0x100 reason=tag trigger=shield.when=always",
            "publish",
          ],
          shielded: [w1], active: true),
        Step(100_002, .resume(by: "bob"), [], shielded: [w1]),
      ]),
    Scenario(
      name: "pause while capturing: shields drop, capture state stays",
      policy: policy(), setup: desk + [.clientConnected(ff, ffmpegID)],
      steps: [
        Step(
          1, .pause(until: nil, by: "alice"),
          ["audit pause by=alice", "unshield 0x100", "audit unshield window=0x100 reason=paused", "publish"],
          shielded: [], capturing: true, active: false),
        Step(
          2, .resume(by: "alice"),
          [
            "audit resume by=alice", "shield 0x100",
            "audit shield window=0x100 reason=tag trigger=known client=0x800000",
            "publish",
          ],
          shielded: [w1], capturing: true, active: true),
      ]),
    Scenario(
      name: "manual unshield holds until the baseline changes (the session ends)",
      policy: policy(), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0x600000 request=GetImage class=ordinary"]
            + startShieldingW1(kind: "request", client: grab, request: "GetImage")
            + ["notify true [0x100]", "publish"]),
        Step(
          1.5, .manualOverride(w1, shielded: false, by: "alice"),
          [
            "audit manual-unshield window=0x100 by=alice", "unshield 0x100",
            "audit unshield window=0x100 reason=manual",
            "publish",
          ],
          shielded: []),
        Step(2, .captureRequest(grab, CaptureRequest(kind: "GetImage")), [], shielded: []),
        Step(3, .tick, [], shielded: []),
        Step(
          4, .tick,
          [
            "audit session-end session=1 kind=request client=0x600000 why='linger elapsed'", "notify false [0x100]",
            "publish",
          ],
          shielded: []),
        Step(
          10, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          startShieldingW1(kind: "request", client: grab, session: 2, request: "GetImage")
            + ["notify true [0x100]", "publish"],
          shielded: [w1]),
      ]),
    Scenario(
      name: "manual shield of a plain window holds until its decision changes",
      policy: policy(when: .always), setup: desk,
      steps: [
        Step(
          1, .manualOverride(w2, shielded: true, by: "alice"),
          [
            "audit manual-shield window=0x101 by=alice", "shield 0x101",
            "audit shield window=0x101 reason=manual trigger=shield.when=always", "publish",
          ],
          shielded: [w1, w2]),
        Step(2, .tick, [], shielded: [w1, w2]),
        Step(3, .windowChanged(window(w2, class: "Firefox", title: "Docs")), [], shielded: [w1, w2]),
        // The decision changes (secure now): the override is dropped, the shield stays.
        Step(
          4, .windowChanged(window(w2, class: "Firefox", title: "Docs", tag: .secure)),
          ["audit secure-decision window=0x101 secure=true reason=tag class=Firefox", "publish"],
          shielded: [w1, w2]),
        // Not secure again: no override any more, so the shield goes.
        Step(
          5, .windowChanged(window(w2, class: "Firefox", title: "Docs")),
          [
            "audit secure-decision window=0x101 secure=false reason='not secure' class=Firefox", "unshield 0x101",
            "audit unshield window=0x101 reason='not secure'", "publish",
          ],
          shielded: [w1]),
      ]),
    Scenario(
      name: "a manual override of an untracked window is ignored",
      policy: policy(when: .always), setup: desk,
      steps: [
        Step(
          1, .manualOverride(0x999, shielded: true, by: "alice"),
          ["audit override-ignored window=0x999 why='window not tracked'"], shielded: [w1])
      ]),
    Scenario(
      name: "a lost shield is re-created and audited",
      policy: policy(when: .always), setup: desk,
      steps: [
        Step(
          1, .shieldLost(w1, how: "destroyed by 0x600000"),
          [
            "audit shield-tampered window=0x100 how='destroyed by 0x600000'", "shield 0x100",
            "audit shield window=0x100 reason=tag trigger=shield.when=always", "publish",
          ],
          shielded: [w1]),
        Step(2, .shieldLost(w2, how: "unmapped"), [], shielded: [w1]),
      ]),
    Scenario(
      name: "a lost frame shield is audited while the window in the frame is shielded (the shell repairs it)",
      policy: policy(when: .always), setup: desk,
      steps: [
        Step(
          1, .frameShieldLost(frame: w4, window: w1, how: "unmapped by another client"),
          ["audit shield-tampered window=0x103 how='unmapped by another client' frame-of=0x100"], shielded: [w1]),
        // The window in the frame is not shielded: nothing to audit (a frame shield is down then).
        Step(2, .frameShieldLost(frame: w3, window: w2, how: "unmapped by another client"), [], shielded: [w1]),
        // A frame the engine shields as a window of its own goes through `shieldLost`.
        Step(3, .frameShieldLost(frame: w1, window: w1, how: "moved"), [], shielded: [w1]),
      ]),
    Scenario(
      name: "policy reload re-evaluates windows; a rejected reload keeps the old policy",
      policy: policy(when: .always), setup: desk,
      steps: [
        Step(
          1, .policyReplaced(policy(when: .always, secure: [bankRule])),
          [
            "audit policy-loaded rules=1 when=always", "shield 0x101",
            #"audit shield window=0x101 reason='rule #1 "bank"' trigger=shield.when=always"#, "publish",
          ],
          shielded: [w1, w2]),
        Step(
          2, .policyRejected("t.json5:3:5: error: bad glob"),
          ["audit policy-rejected error='t.json5:3:5: error: bad glob'"], shielded: [w1, w2]),
        Step(
          3, .policyReplaced(policy(when: .always)),
          [
            "audit policy-loaded rules=0 when=always", "unshield 0x101",
            "audit unshield window=0x101 reason='not secure'", "publish",
          ],
          shielded: [w1]),
        Step(
          4, .policyReplaced(policy(when: .capturing)),
          [
            "audit policy-loaded rules=0 when=capturing", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "publish",
          ],
          shielded: [], active: false),
      ]),
    Scenario(
      name: "a window gone while shielded leaves `shielded` without an unshield effect",
      policy: policy(when: .always), setup: desk,
      steps: [
        Step(1, .windowGone(w1), ["publish"], shielded: []),
        Step(2, .windowGone(0x999), [], shielded: []),
        Step(3, .tick, [], shielded: []),
      ]),
  ]

  /// Decisions the shell once made itself: what it does at once, decided by the
  /// engine as it stands (no clock step, no deadline handled, no state changed).
  static let shellDecisionScenarios: [Scenario] = [
    Scenario(
      name: "a new top-level is shielded at once while shields are up, as the engine stands",
      policy: policy(), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(1, .topLevelCreated(w3), [], active: false),
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0x600000 request=GetImage class=ordinary"]
            + startShieldingW1(kind: "request", client: grab, request: "GetImage")
            + ["notify true [0x100]", "publish"]),
        Step(1.5, .topLevelCreated(w3), ["shield-at-once 0x102"], shielded: [w1], active: true),
        // The linger ended at 3, no event since: the engine as it stands still shields (the
        // safe mistake); the next tick ends the session.
        Step(3.5, .topLevelCreated(w4), ["shield-at-once 0x103"], shielded: [w1], active: true),
        Step(3.5, .tick, lingerEndW1(kind: "request", client: grab), active: false),
        Step(4, .topLevelCreated(w4), [], active: false),
      ]),
    Scenario(
      name: "shield.when always: every new top-level at once; paused: none",
      policy: policy(when: .always), setup: [.clientConnected(app, keepassID), .windowAppeared(secureWindow)],
      steps: [
        Step(1, .topLevelCreated(w3), ["shield-at-once 0x102"], shielded: [w1]),
        Step(
          2, .pause(until: nil, by: "user"),
          ["audit pause by=user", "unshield 0x100", "audit unshield window=0x100 reason=paused", "publish"],
          shielded: [], active: false),
        Step(3, .topLevelCreated(w3), [], shielded: []),
      ]),
    Scenario(
      name: "shields the RECORD thread put up early come down unless the engine wants them",
      policy: policy(when: .always), setup: [.clientConnected(app, keepassID), .windowAppeared(secureWindow)],
      steps: [
        Step(1, .earlyShieldsUp([w3, w1, w3]), ["unshield 0x102"], shielded: [w1]),
        Step(1, .earlyShieldsUp([w1]), [], shielded: [w1]),
        Step(1, .earlyShieldsUp([]), [], shielded: [w1]),
      ]),
  ]

  /// Pause, manual overrides, tampering, reload, gone windows, and the shell's decisions
  /// (shield at once, early shields).
  @Suite struct Controls {
    @Test("pause, overrides, tampering, reload, gone windows", arguments: controlScenarios)
    fileprivate func controls(_ s: Scenario) { _ = run(s) }

    @Test("shell decisions: shield at once, early shields", arguments: shellDecisionScenarios)
    fileprivate func shellDecisions(_ s: Scenario) { _ = run(s) }

    @Test func shellDecisionsLeaveTheEngineAsItWas() {
      var e = Engine(policy: policy(linger: .seconds(2)))
      for ev in desk + [.clientConnected(grab, grabberID), .captureRequest(grab, CaptureRequest(kind: "GetImage"))] {
        _ = e.handle(ev, now: t(1))
      }
      let deadline = e.nextDeadline
      #expect(e.handle(.topLevelCreated(w3), now: t(10)) == [.shieldAtOnce(w3)])
      #expect(e.handle(.earlyShieldsUp([w1, w4]), now: t(10)) == [.unshield(w4)])
      #expect(e.now == t(1) && e.nextDeadline == deadline && e.shielded == [w1] && e.sessions.count == 1)
    }
  }
}

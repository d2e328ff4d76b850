import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension EngineTests {
  static let provisionalScenarios: [Scenario] = [
    Scenario(
      name: "an unknown window of a client owning a secure window is provisional until its facts arrive",
      policy: policy(when: .always),
      setup: [.clientConnected(app, keepassID), .windowAppeared(secureWindow)],
      steps: [
        Step(
          1, .windowAppeared(window(w3, known: false)),
          [
            "audit secure-decision window=0x102 secure=true reason='provisional (facts not known yet)'", "shield 0x102",
            "audit shield window=0x102 reason='provisional (facts not known yet)' trigger=shield.when=always",
            "publish",
          ],
          shielded: [w1, w3]),
        Step(
          2, .windowChanged(window(w3, class: "KeePassXC", title: "About")),
          [
            "audit secure-decision window=0x102 secure=false reason='not secure' class=KeePassXC", "unshield 0x102",
            "audit unshield window=0x102 reason='not secure'", "publish",
          ],
          shielded: [w1]),
      ]),
    Scenario(
      name: "while shields are up any unknown window is provisional; re-decided when they drop",
      policy: policy(), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0x600000 request=GetImage class=ordinary"]
            + startShieldingW1(kind: "request", client: grab, request: "GetImage")
            + ["notify true [0x100]", "publish"]),
        Step(
          1.5, .windowAppeared(window(w4, client: grab, known: false)),
          [
            "audit secure-decision window=0x103 secure=true reason='provisional (facts not known yet)'", "shield 0x103",
            "audit shield window=0x103 reason='provisional (facts not known yet)' trigger=request client=0x600000",
            "publish",
          ],
          shielded: [w1, w4]),
        Step(
          3, .tick,
          [
            "audit session-end session=1 kind=request client=0x600000 why='linger elapsed'",
            "unshield 0x100", "audit unshield window=0x100 reason='no capture session'",
            "unshield 0x103", "audit unshield window=0x103 reason='not secure'",
            "notify false [0x100]", "publish",
          ],
          shielded: []),
      ]),
    Scenario(
      name: "a secure rule's client criteria make an unknown window provisional",
      policy: policy(
        when: .always, secure: [Matcher(class: pat("KeePassXC"), exe: pat("*/keepassxc"), name: "keepass")]),
      setup: [.clientConnected(app, keepassID)],
      steps: [
        Step(
          1, .windowAppeared(window(w3, known: false)),
          [
            "audit secure-decision window=0x102 secure=true reason='provisional (facts not known yet)'", "shield 0x102",
            "audit shield window=0x102 reason='provisional (facts not known yet)' trigger=shield.when=always",
            "publish",
          ],
          shielded: [w3]),
        Step(
          2, .windowChanged(window(w3, class: "KeePassXC", title: "Vault")),
          [#"audit secure-decision window=0x102 secure=true reason='rule #1 "keepass"' class=KeePassXC"#, "publish"],
          shielded: [w3]),
      ]),
    Scenario(
      name: "a window never mapped stops being provisional 1 s after it appeared, decided by its facts",
      policy: policy(when: .always, secure: [Matcher(class: pat("Vault"), name: "vault")]),
      setup: [.clientConnected(app, keepassID), .windowAppeared(secureWindow)],
      steps: [
        Step(
          1, .windowAppeared(window(w3, known: false)),
          [
            "audit secure-decision window=0x102 secure=true reason='provisional (facts not known yet)'", "shield 0x102",
            "audit shield window=0x102 reason='provisional (facts not known yet)' trigger=shield.when=always",
            "publish",
          ],
          shielded: [w1, w3], deadline: .at(2)),
        Step(1.5, .tick, [], shielded: [w1, w3], deadline: .at(2)),
        Step(
          2, .tick, ["unshield 0x102", "audit unshield window=0x102 reason='not secure'", "publish"], shielded: [w1],
          deadline: Deadline.none),
        // Still not mapped: a later property change decides it like a mapped window's.
        Step(
          3, .windowChanged(window(w3, class: "Vault", known: false)),
          [
            #"audit secure-decision window=0x102 secure=true reason='rule #1 "vault"' class=Vault"#, "shield 0x102",
            #"audit shield window=0x102 reason='rule #1 "vault"' trigger=shield.when=always"#, "publish",
          ],
          shielded: [w1, w3]),
        Step(
          4, .windowChanged(window(w3, class: "Other", known: false)),
          [
            "audit secure-decision window=0x102 secure=false reason='not secure' class=Other", "unshield 0x102",
            "audit unshield window=0x102 reason='not secure'", "publish",
          ],
          shielded: [w1]),
      ]),
    Scenario(
      name:
        "while shields are up, a new unknown window is provisional for 1 s at most; mapped earlier, its facts decide",
      policy: policy(), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0x600000 request=GetImage class=ordinary"]
            + startShieldingW1(kind: "request", client: grab, request: "GetImage")
            + ["notify true [0x100]", "publish"]),
        Step(
          1.2, .windowAppeared(window(w4, client: grab, known: false)),
          [
            "audit secure-decision window=0x103 secure=true reason='provisional (facts not known yet)'", "shield 0x103",
            "audit shield window=0x103 reason='provisional (facts not known yet)' trigger=request client=0x600000",
            "publish",
          ],
          shielded: [w1, w4]),
        Step(
          1.4, .windowAppeared(window(w3, client: grab, known: false)),
          [
            "audit secure-decision window=0x102 secure=true reason='provisional (facts not known yet)'", "shield 0x102",
            "audit shield window=0x102 reason='provisional (facts not known yet)' trigger=request client=0x600000",
            "publish",
          ],
          shielded: [w1, w3, w4], deadline: .at(2.2)),
        Step(
          1.6, .windowChanged(window(w3, client: grab, class: "Terminal")),
          [
            "audit secure-decision window=0x102 secure=false reason='not secure' class=Terminal", "unshield 0x102",
            "audit unshield window=0x102 reason='not secure'", "publish",
          ],
          shielded: [w1, w4]),
        Step(
          2.2, .tick, ["unshield 0x103", "audit unshield window=0x103 reason='not secure'", "publish"],
          shielded: [w1], active: true),
      ]),
  ]

  /// Provisional windows: secure until their facts are known.
  @Suite struct Provisional {
    @Test("provisional windows", arguments: provisionalScenarios)
    fileprivate func provisional(_ s: Scenario) { _ = run(s) }

    struct ProvisionalCase: Sendable, CustomTestStringConvertible {
      var name: String
      var policy: Policy
      var before: [Engine.Event]
      var window: WindowInfo
      var after: [Engine.Event] = []
      /// Seconds between the window's appearance and each `after` event (within
      /// `Engine.provisionalLimit` unless a case needs more).
      var afterStep: Double = 0.2
      var expected: SecureReason
      var testDescription: String { name }
    }

    static let keepassRule = Matcher(class: pat("KeePassXC"), exe: pat("*/keepassxc"), name: "keepass")

    static let provisionalCases: [ProvisionalCase] = [
      ProvisionalCase(
        name: "idle: the client owns a secure window", policy: policy(),
        before: [.clientConnected(app, keepassID), .windowAppeared(secureWindow)], window: window(w3, known: false),
        expected: .provisional),
      ProvisionalCase(
        name: "idle: the client's first secure window appears later", policy: policy(),
        before: [.clientConnected(app, keepassID)], window: window(w3, known: false),
        after: [.windowAppeared(secureWindow)], expected: .provisional),
      ProvisionalCase(
        name: "idle: a secure rule's client criteria match the client", policy: policy(secure: [keepassRule]),
        before: [.clientConnected(app, keepassID)], window: window(w3, known: false), expected: .provisional),
      ProvisionalCase(
        name: "idle: client criteria do not match", policy: policy(secure: [keepassRule]),
        before: [.clientConnected(app, grabberID)], window: window(w3, known: false), expected: .none),
      ProvisionalCase(
        name: "idle: another client owns the secure window", policy: policy(),
        before: [.clientConnected(app, keepassID), .windowAppeared(secureWindow), .clientConnected(grab, grabberID)],
        window: window(w3, client: grab, known: false), expected: .none),
      ProvisionalCase(
        name: "idle: no client", policy: policy(), before: [.windowAppeared(secureWindow)],
        window: window(w3, client: nil, known: false), expected: .none),
      ProvisionalCase(
        name: "idle: facts known", policy: policy(),
        before: [.clientConnected(app, keepassID), .windowAppeared(secureWindow)],
        window: window(w3, class: "KeePassXC"), expected: .none),
      ProvisionalCase(
        name: "capturing: any unknown window", policy: policy(),
        before: [.clientConnected(ff, ffmpegID), .clientConnected(grab, grabberID)],
        window: window(w3, client: grab, known: false), expected: .provisional),
      ProvisionalCase(
        name: "capturing: unknown window without a client", policy: policy(), before: [.clientConnected(ff, ffmpegID)],
        window: window(w3, client: nil, known: false), expected: .provisional),
      ProvisionalCase(
        name: "always: any unknown window", policy: policy(when: .always), before: [],
        window: window(w3, client: grab, known: false), expected: .provisional),
      ProvisionalCase(
        name: "capture starts after the window appeared", policy: policy(), before: [.clientConnected(grab, grabberID)],
        window: window(w3, client: grab, known: false), after: [.clientConnected(ff, ffmpegID)],
        expected: .provisional),
      ProvisionalCase(
        name: "capture ended", policy: policy(),
        before: [.clientConnected(ff, ffmpegID), .clientConnected(grab, grabberID)],
        window: window(w3, client: grab, known: false), after: [.clientGone(ff), .tick], afterStep: 5,
        expected: .none),
      ProvisionalCase(
        name: "always: 1 s later, not mapped: decided by its facts", policy: policy(when: .always), before: [],
        window: window(w3, client: grab, known: false), after: [.tick], afterStep: 1, expected: .none),
    ]

    @Test("provisional decisions", arguments: provisionalCases)
    func provisionalReason(_ c: ProvisionalCase) {
      var e = Engine(policy: c.policy)
      for ev in c.before { _ = e.handle(ev, now: t(0)) }
      _ = e.handle(.windowAppeared(c.window), now: t(1))
      for (k, ev) in c.after.enumerated() { _ = e.handle(ev, now: t(1 + c.afterStep * Double(k + 1))) }
      #expect(e.windows[w3]?.reason == c.expected)
      #expect(e.shielded.contains(w3) == (c.expected.isSecure && e.shieldsActive))
    }
  }
}

import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension EngineTests {
  static let captureScenarios: [Scenario] = [
    Scenario(
      name: "a capture request starts a session, a second extends it, the deadline ends it",
      policy: policy(), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage", target: 0x1d0)),
          ["audit capture-request client=0x600000 request=GetImage class=ordinary"]
            + startShieldingW1(kind: "request", client: grab, request: "GetImage")
            + ["notify true [0x100]", "publish"],
          shielded: [w1], capturing: true, active: true, deadline: .at(3),
          sessions: ["#1 request 0x600000 req=1 until 3"]),
        Step(
          2, .captureRequest(grab, CaptureRequest(kind: "GetImage")), [],
          shielded: [w1], deadline: .at(4), sessions: ["#1 request 0x600000 req=2 until 4"]),
        Step(3.5, .tick, [], shielded: [w1], capturing: true),
        Step(
          4, .tick, lingerEndW1(kind: "request", client: grab),
          shielded: [], capturing: false, active: false, deadline: Deadline.none, sessions: []),
      ]),
    Scenario(
      name: "shields stay up for linger after the capturing client exits",
      policy: policy(), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "MIT-SHM ShmGetImage")),
          ["audit capture-request client=0x600000 request='MIT-SHM ShmGetImage' class=ordinary"]
            + startShieldingW1(kind: "request", client: grab, request: "MIT-SHM ShmGetImage")
            + ["notify true [0x100]", "publish"]),
        Step(
          2.5, .clientGone(grab), ["publish"], shielded: [w1], capturing: true, deadline: .at(4.5),
          sessions: ["#1 request 0x600000 req=1 until 4.5"]),
        Step(4.4, .tick, [], shielded: [w1]),
        Step(4.5, .tick, lingerEndW1(kind: "request", client: grab), shielded: [], deadline: Deadline.none),
      ]),
    Scenario(
      name: "a known capturer (ffmpeg) is capturing while connected, then for linger",
      policy: policy(), setup: desk,
      steps: [
        Step(
          1, .clientConnected(ff, ffmpegID),
          startShieldingW1(kind: "known", client: ff) + ["notify true [0x100]", "publish"],
          shielded: [w1], capturing: true, deadline: Deadline.none, sessions: ["#1 known 0x800000 req=0 pinned"]),
        Step(500, .tick, [], shielded: [w1], capturing: true),
        Step(
          501, .clientGone(ff), ["publish"], shielded: [w1], deadline: .at(503),
          sessions: ["#1 known 0x800000 req=0 until 503"]),
        Step(503, .tick, lingerEndW1(kind: "known", client: ff), shielded: [], capturing: false),
      ]),
    Scenario(
      name: "an allowed client starts no session, but a bypass request does (and allow does not end it)",
      policy: policy(allow: [allowShell]), setup: desk + [.clientConnected(shell, shellID)],
      steps: [
        Step(
          1, .captureRequest(shell, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0xa00000 request=GetImage class=allowed", "publish"],
          shielded: [], capturing: false, sessions: []),
        Step(2, .captureRequest(shell, CaptureRequest(kind: "GetImage")), [], sessions: []),
        Step(
          3,
          .captureRequest(
            shell, CaptureRequest(kind: "Composite RedirectWindow(Manual)", target: w1, bypassesShield: true)),
          ["audit shield-bypass-attempt client=0xa00000 request='Composite RedirectWindow(Manual)'"]
            + startShieldingW1(kind: "request", client: shell, request: "Composite RedirectWindow(Manual)")
            + ["notify true [0x100]", "publish"],
          shielded: [w1], capturing: true, sessions: ["#1 request 0xa00000 req=1 until 5"]),
        Step(
          3.5, .clientIdentified(shell, shellID), ["publish"], shielded: [w1],
          sessions: ["#1 request 0xa00000 req=1 until 5"]),
        Step(5, .tick, lingerEndW1(kind: "request", client: shell), shielded: []),
      ]),
    Scenario(
      name: "a secure window appearing during a session is shielded at once",
      policy: policy(), setup: desk + [.clientConnected(ff, ffmpegID)],
      steps: [
        Step(
          1, .windowAppeared(window(w3, class: "Vault", tag: .secure)),
          [
            "audit secure-decision window=0x102 secure=true reason=tag class=Vault", "shield 0x102",
            "audit shield window=0x102 reason=tag trigger=known client=0x800000", "publish",
          ],
          shielded: [w1, w3])
      ]),
    Scenario(
      name: "a request after the session ended starts a new session",
      policy: policy(), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0x600000 request=GetImage class=ordinary"]
            + startShieldingW1(kind: "request", client: grab, request: "GetImage")
            + ["notify true [0x100]", "publish"]),
        Step(3, .tick, lingerEndW1(kind: "request", client: grab)),
        Step(
          10, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          startShieldingW1(kind: "request", client: grab, session: 2, request: "GetImage")
            + ["notify true [0x100]", "publish"],
          sessions: ["#2 request 0x600000 req=1 until 12"]),
      ]),
    Scenario(
      name: "resource-base reuse: the next client on a base starts afresh",
      policy: policy(), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0x600000 request=GetImage class=ordinary"]
            + startShieldingW1(kind: "request", client: grab, request: "GetImage")
            + ["notify true [0x100]", "publish"]),
        Step(1.5, .clientGone(grab), ["publish"], deadline: .at(3.5)),
        Step(3.5, .tick, lingerEndW1(kind: "request", client: grab), shielded: []),
        Step(4, .clientConnected(grab, xtermID), ["publish"], shielded: [], sessions: []),
        // The new client's first request is audited again (per-client state did not survive).
        Step(
          5, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0x600000 request=GetImage class=ordinary"]
            + startShieldingW1(kind: "request", client: grab, session: 2, request: "GetImage")
            + ["notify true [0x100]", "publish"]),
      ]),
  ]

  /// `capture.hold` (a patient capturer waiting longer than the linger
  /// between frames found the shields down for each one).
  static let held = policy(hold: .connected)
  static func heldEnd(_ why: String, _ session: Int) -> [String] {
    [
      "audit session-end session=\(session) kind=request client=0x600000 why=\(show(.string(why)))",
      "unshield 0x100", "audit unshield window=0x100 reason='no capture session'", "notify false [0x100]",
    ]
  }
  static let firstGrab =
    ["audit capture-request client=0x600000 request=GetImage class=ordinary"]
    + startShieldingW1(kind: "request", client: grab, request: "GetImage") + ["notify true [0x100]", "publish"]

  static let holdScenarios: [Scenario] = [
    Scenario(
      name: "connected (default): one frame every linger + 0.5 s never finds the shields down",
      policy: held, setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")), firstGrab, shielded: [w1], capturing: true,
          deadline: Deadline.none, sessions: ["#1 request 0x600000 req=1 pinned"]),
        Step(3.5, .tick, [], shielded: [w1], capturing: true, deadline: Deadline.none),
        Step(
          3.5, .captureRequest(grab, CaptureRequest(kind: "GetImage")), [], shielded: [w1],
          sessions: ["#1 request 0x600000 req=2 pinned"]),
        Step(6, .tick, [], shielded: [w1]),
        Step(
          6, .captureRequest(grab, CaptureRequest(kind: "GetImage")), [], shielded: [w1],
          sessions: ["#1 request 0x600000 req=3 pinned"]),
        Step(3600, .tick, [], shielded: [w1], capturing: true, active: true),
      ]),
    Scenario(
      name: "connected: the client's exit ends the hold after the linger",
      policy: held, setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(1, .captureRequest(grab, CaptureRequest(kind: "GetImage")), firstGrab),
        Step(
          500, .clientGone(grab), ["publish"], shielded: [w1], capturing: true, deadline: .at(502),
          sessions: ["#1 request 0x600000 req=1 until 502"]),
        Step(501.9, .tick, [], shielded: [w1]),
        Step(
          502, .tick, heldEnd("linger elapsed", 1) + ["publish"], shielded: [], capturing: false, active: false,
          deadline: Deadline.none, sessions: []),
      ]),
    Scenario(
      name: "connected: a client identified late as allowed ends its held session",
      policy: policy(allow: [allowShell], hold: .connected), setup: desk + [.clientConnected(shell, nil)],
      steps: [
        Step(
          1, .captureRequest(shell, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0xa00000 request=GetImage class=unidentified"]
            + startShieldingW1(kind: "request", client: shell, request: "GetImage")
            + ["notify true [0x100]", "publish"],
          sessions: ["#1 request 0xa00000 req=1 pinned"]),
        Step(
          1.5, .clientIdentified(shell, shellID),
          [
            "audit session-end session=1 kind=request client=0xa00000 why='client is allowed'", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "notify false [0x100]", "publish",
          ],
          shielded: [], sessions: []),
      ]),
    Scenario(
      name: "a duration: the session lasts that long after the last request",
      policy: policy(hold: .duration(.seconds(10))), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")), firstGrab, deadline: .at(11),
          sessions: ["#1 request 0x600000 req=1 until 11"]),
        Step(
          5, .captureRequest(grab, CaptureRequest(kind: "GetImage")), [], deadline: .at(15),
          sessions: ["#1 request 0x600000 req=2 until 15"]),
        Step(14.9, .tick, [], shielded: [w1]),
        Step(15, .tick, heldEnd("hold elapsed", 1) + ["publish"], shielded: [], sessions: []),
      ]),
    Scenario(
      name: "a duration: the client's exit still ends the session after the linger",
      policy: policy(hold: .duration(.seconds(10))), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(1, .captureRequest(grab, CaptureRequest(kind: "GetImage")), firstGrab),
        Step(2, .clientGone(grab), ["publish"], deadline: .at(11), sessions: ["#1 request 0x600000 req=1 until 11"]),
        Step(11, .tick, heldEnd("linger elapsed", 1) + ["publish"], shielded: []),
      ]),
    Scenario(
      name: "a hold shorter than the linger is the linger",
      policy: policy(hold: .duration(.seconds(1))), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")), firstGrab, deadline: .at(3),
          sessions: ["#1 request 0x600000 req=1 until 3"]),
        Step(3, .tick, heldEnd("linger elapsed", 1) + ["publish"], shielded: []),
      ]),
    Scenario(
      name: "a reload to a duration: the held session ends that long after its last request",
      policy: held, setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(1, .captureRequest(grab, CaptureRequest(kind: "GetImage")), firstGrab),
        Step(
          4, .captureRequest(grab, CaptureRequest(kind: "GetImage")), [],
          sessions: ["#1 request 0x600000 req=2 pinned"]),
        Step(
          8.5, .policyReplaced(policy(hold: .duration(.seconds(5)))),
          ["audit policy-loaded rules=0 when=capturing", "publish"], shielded: [w1], deadline: .at(9),
          sessions: ["#1 request 0x600000 req=2 until 9"]),
        Step(9, .tick, heldEnd("hold elapsed", 1) + ["publish"], shielded: [], sessions: []),
      ]),
    Scenario(
      name: "a reload to connected holds a live session, to a duration unholds it",
      policy: policy(), setup: desk + [.clientConnected(grab, grabberID)],
      steps: [
        Step(
          1, .captureRequest(grab, CaptureRequest(kind: "GetImage")), firstGrab,
          sessions: ["#1 request 0x600000 req=1 until 3"]),
        Step(
          2, .policyReplaced(held), ["audit policy-loaded rules=0 when=capturing", "publish"],
          deadline: Deadline.none, sessions: ["#1 request 0x600000 req=1 pinned"]),
        Step(100, .tick, [], shielded: [w1]),
        Step(
          100, .policyReplaced(policy(hold: .duration(.seconds(0)))),
          ["audit policy-loaded rules=0 when=capturing"] + heldEnd("linger elapsed", 1) + ["publish"],
          shielded: []),
      ]),
    Scenario(
      name: "connected: a known capturer is unchanged (pinned while connected, then the linger)",
      policy: held, setup: desk,
      steps: [
        Step(
          1, .clientConnected(ff, ffmpegID),
          startShieldingW1(kind: "known", client: ff) + ["notify true [0x100]", "publish"],
          sessions: ["#1 known 0x800000 req=0 pinned"]),
        Step(2, .clientGone(ff), ["publish"], deadline: .at(4), sessions: ["#1 known 0x800000 req=0 until 4"]),
        Step(4, .tick, lingerEndW1(kind: "known", client: ff), shielded: []),
      ]),
    Scenario(
      name: "connected: an allowed client's plain capture requests start nothing",
      policy: policy(allow: [allowShell], hold: .connected), setup: desk + [.clientConnected(shell, shellID)],
      steps: [
        Step(
          1, .captureRequest(shell, CaptureRequest(kind: "GetImage")),
          ["audit capture-request client=0xa00000 request=GetImage class=allowed", "publish"],
          shielded: [], sessions: []),
        Step(5, .captureRequest(shell, CaptureRequest(kind: "GetImage")), [], shielded: [], sessions: []),
      ]),
  ]

  /// Capture sessions: a capture request starts one, the linger and `capture.hold` end it;
  /// which recorded requests count as capture.
  @Suite struct Sessions {
    @Test("capture sessions", arguments: captureScenarios)
    fileprivate func captureSessions(_ s: Scenario) { _ = run(s) }

    @Test("capture.hold", arguments: holdScenarios)
    fileprivate func hold(_ s: Scenario) { _ = run(s) }

    struct RecordCase: Sendable, CustomTestStringConvertible {
      var testDescription: String
      var kind: String
      var pixmapOwner: ClientID?
      var byWindowManager: Bool
      var counts: Bool
      var asksWindowManager: Bool
    }

    static let recordCases: [RecordCase] = [
      RecordCase(
        testDescription: "GetImage counts, the window manager is not asked", kind: "GetImage", pixmapOwner: nil,
        byWindowManager: true, counts: true, asksWindowManager: false),
      RecordCase(
        testDescription: "the window manager reparenting the windows it manages does not count",
        kind: "ReparentWindow", pixmapOwner: nil, byWindowManager: true, counts: false, asksWindowManager: true),
      RecordCase(
        testDescription: "another client's ReparentWindow counts", kind: "ReparentWindow", pixmapOwner: nil,
        byWindowManager: false, counts: true, asksWindowManager: true),
      RecordCase(
        testDescription: "a cursor from an allowed client's pixmap counts", kind: "CreateCursor",
        pixmapOwner: ClientID(0xc0_0000), byWindowManager: false, counts: true, asksWindowManager: false),
      RecordCase(
        testDescription: "a cursor from an ordinary client's pixmap does not count", kind: "CreateCursor",
        pixmapOwner: ClientID(0x60_0000), byWindowManager: false, counts: false, asksWindowManager: false),
      RecordCase(
        testDescription: "a cursor from an unknown client's pixmap does not count", kind: "CreateCursor",
        pixmapOwner: ClientID(0x12_0000), byWindowManager: false, counts: false, asksWindowManager: false),
    ]

    @Test("recorded requests the engine counts as capture", arguments: recordCases)
    func recordFilter(_ c: RecordCase) {
      #expect(CaptureCatalog.standard.readsOnlyPixmaps(kind: "CreateCursor"))
      var e = Engine(policy: policy(allow: [allowPicom]))
      _ = e.handle(.clientConnected(comp, picomID), now: t(0))
      _ = e.handle(.clientConnected(grab, grabberID), now: t(0))
      var asked = false
      let counts = e.countsAsCapture(
        CaptureRequest(kind: c.kind, target: c.pixmapOwner.map { $0.base | 1 }),
        catalog: CaptureCatalog.standard.resolved(extensions: [:]), pixmapOwner: c.pixmapOwner,
        isWindowManager: {
          asked = true
          return c.byWindowManager
        })
      #expect(counts == c.counts)
      #expect(asked == c.asksWindowManager)
    }
  }
}

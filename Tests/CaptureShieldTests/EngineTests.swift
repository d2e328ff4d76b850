import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// The engine's tests (`Engine`: events in, effects out), one suite per concern in the
/// `Engine*Tests.swift` files (`make test-one TEST=EngineTests` runs them all,
/// `TEST=EngineTests/Rules` one); here, the fixtures and the scenario runner they share.
enum EngineTests {
  static func t(_ seconds: Double) -> MonotonicTime { .seconds(seconds) }
  static func pat(_ s: String) -> Pattern { try! Pattern.parse(s) }
  static func hex(_ v: UInt32) -> String { "0x" + String(v, radix: 16) }

  /// Windows: a tagged secure one, a plain one (its title matches the "bank" rule below),
  /// and spares.
  static let w1: WindowID = 0x100
  static let w2: WindowID = 0x101
  static let w3: WindowID = 0x102
  static let w4: WindowID = 0x103

  /// Clients (resource-id bases).
  static let app = ClientID(0x40_0000)
  static let grab = ClientID(0x60_0000)
  static let ff = ClientID(0x80_0000)
  static let shell = ClientID(0xa0_0000)
  static let comp = ClientID(0xc0_0000)

  static let keepassID = ClientIdentity(pid: 100, exe: "/usr/bin/keepassxc", comm: "keepassxc", uid: 1000)
  static let grabberID = ClientIdentity(pid: 200, exe: "/usr/bin/grabber", comm: "grabber", uid: 1000)
  static let ffmpegID = ClientIdentity(pid: 300, exe: "/usr/bin/ffmpeg", comm: "ffmpeg", uid: 1000)
  static let shellID = ClientIdentity(pid: 400, exe: "/usr/bin/gnome-shell", comm: "gnome-shell", uid: 1000)
  static let picomID = ClientIdentity(pid: 500, exe: "/usr/bin/picom", comm: "picom", uid: 1000)
  static let xtermID = ClientIdentity(pid: 600, exe: "/usr/bin/xterm", comm: "xterm", uid: 1000)

  static let bankRule = Matcher(title: pat("/.*[Bb]ank.*/"), name: "bank")
  static let allowShell = Matcher(exe: pat("/usr/bin/gnome-shell"), name: "shell")
  static let allowPicom = Matcher(exe: pat("/usr/bin/picom"), name: "picom")

  /// `hold` defaults to `"0s"` (the linger alone) so that the linger's scenarios stay about
  /// the linger; `holdScenarios` test `capture.hold` (default `"connected"`). `capture.idle`
  /// is off here (`IdleTests` test it).
  static func policy(
    when: ShieldWhen = .capturing, secure: [Matcher] = [], allow: [Matcher] = [],
    quarantine: PolicyDuration? = nil, linger: PolicyDuration = .seconds(2),
    hold: CaptureHold = .duration(.seconds(0))
  ) -> Policy {
    var p = Policy()
    // The rules here are the test's own (KeePassXC facts included); the built-in secure list
    // is `BuiltinSecureTests`'.
    p.builtinSecure = []
    p.hold = hold
    p.idle = nil
    p.when = when
    p.secure = secure
    p.captureAllow = allow
    p.quarantine = quarantine
    p.linger = linger
    return p
  }

  static func window(
    _ id: WindowID, client: ClientID? = app, class cls: String? = nil, title: String? = nil,
    tag: TagState = .absent, known: Bool = true
  ) -> WindowInfo {
    WindowInfo(id: id, client: client, facts: Facts(class: cls, title: title), tag: tag, propertiesKnown: known)
  }

  /// It opted in to the capture notices (`_CAPTURE_SHIELD_NOTIFY`): the scenarios show them.
  static let secureWindow = WindowInfo(
    id: w1, client: app, facts: Facts(class: "KeePassXC", title: "Passwords"), tag: .secure, notices: .captureChanged)
  static let plainWindow = window(w2, class: "Firefox", title: "Online Banking")

  /// Two windows of `app`: `w1` tagged secure, `w2` plain.
  static let desk: [Engine.Event] = [.windowAppeared(secureWindow), .windowAppeared(plainWindow)]

  // MARK: - Effect descriptions

  /// Audit fields shown in effect descriptions (identity fields are checked separately).
  static let keyFields: Set<String> = [
    "window", "secure", "reason", "class", "session", "kind", "client", "request", "trigger", "why",
    "by", "how", "error", "rules", "when", "frame-of",
  ]

  static func show(_ v: AuditRecord.Value) -> String {
    let s = v.description
    return s.contains(" ") || s.isEmpty ? "'\(s)'" : s
  }

  /// One effect as a short line: `shield 0x100`, `audit shield window=0x100 reason=tag`,
  /// `notify true [0x100]`, `publish`.
  static func describe(_ e: Engine.Effect) -> String {
    switch e {
    case .shield(let w): return "shield \(hex(w))"
    case .unshield(let w): return "unshield \(hex(w))"
    case .shieldAtOnce(let w): return "shield-at-once \(hex(w))"
    case .publishState: return "publish"
    case .historyChanged: return "history"
    case .secureViews(let w, let rects): return "views \(hex(w)) \(rects.map(\.description).joined(separator: ","))"
    case .notifyCapture(let active, let ws): return "notify \(active) [\(ws.map(hex).joined(separator: ","))]"
    case .audit(let r):
      var s = "audit \(r.event)"
      for f in r.fields where keyFields.contains(f.key) { s += " \(f.key)=\(show(f.value))" }
      return s
    }
  }

  static func describe(_ fx: [Engine.Effect]) -> [String] { fx.map(describe) }

  static func audits(_ fx: [Engine.Effect], _ event: String) -> [AuditRecord] {
    fx.compactMap { if case .audit(let r) = $0, r.event == event { return r } else { return nil } }
  }

  static func sessionSummary(_ e: Engine) -> [String] {
    e.sessions.values.sorted { $0.id < $1.id }.map { s in
      let end = s.pinned ? "pinned" : s.expires.map { String(format: "until %g", Double($0.nanoseconds) / 1e9) } ?? "-"
      return "#\(s.id) \(s.kind.rawValue) \(s.client) req=\(s.requests) \(end)"
    }
  }

  enum Deadline: Sendable, Equatable, CustomStringConvertible {
    case none
    case at(Double)
    init(_ t: MonotonicTime?) { self = t.map { .at(Double($0.nanoseconds) / 1e9) } ?? .none }
    var description: String {
      switch self {
      case .none: return "none"
      case .at(let s): return "\(s)"
      }
    }
  }

  // MARK: - Scenario tables

  /// One event at a time and what must come out; optional checks of derived state.
  struct Step: Sendable {
    var at: Double
    var event: Engine.Event
    var effects: [String]
    var shielded: Set<WindowID>?
    var capturing: Bool?
    var active: Bool?
    var deadline: Deadline?
    var sessions: [String]?

    init(
      _ at: Double, _ event: Engine.Event, _ effects: [String], shielded: Set<WindowID>? = nil,
      capturing: Bool? = nil, active: Bool? = nil, deadline: Deadline? = nil, sessions: [String]? = nil
    ) {
      self.at = at
      self.event = event
      self.effects = effects
      self.shielded = shielded
      self.capturing = capturing
      self.active = active
      self.deadline = deadline
      self.sessions = sessions
    }
  }

  /// A policy, events applied at t=0 whose effects are not checked, then checked steps.
  struct Scenario: Sendable, CustomTestStringConvertible {
    var name: String
    var policy: Policy
    var setup: [Engine.Event]
    var steps: [Step]
    var testDescription: String { name }
  }

  static func run(_ s: Scenario) -> Engine {
    var engine = Engine(policy: s.policy)
    for e in s.setup { _ = engine.handle(e, now: t(0)) }
    for (i, step) in s.steps.enumerated() {
      let fx = engine.handle(step.event, now: t(step.at))
      let context = "step \(i + 1) at t=\(step.at): \(step.event)"
      #expect(describe(fx) == step.effects, "\(context)")
      if let v = step.shielded { #expect(engine.shielded == v, "shielded after \(context)") }
      if let v = step.capturing { #expect(engine.isCapturing == v, "isCapturing after \(context)") }
      if let v = step.active { #expect(engine.shieldsActive == v, "shieldsActive after \(context)") }
      if let v = step.deadline { #expect(Deadline(engine.nextDeadline) == v, "nextDeadline after \(context)") }
      if let v = step.sessions { #expect(sessionSummary(engine) == v, "sessions after \(context)") }
    }
    return engine
  }

  // Frequently expected effect lines.
  static func startShieldingW1(kind: String, client: ClientID, session: Int = 1, request: String? = nil) -> [String] {
    [
      "audit session-start session=\(session) kind=\(kind) client=\(client)"
        + (request.map { " request=\(show(.string($0)))" } ?? ""),
      "shield 0x100",
      "audit shield window=0x100 reason=tag trigger=\(kind) client=\(client)",
    ]
  }

  static func lingerEndW1(kind: String, client: ClientID, session: Int = 1) -> [String] {
    [
      "audit session-end session=\(session) kind=\(kind) client=\(client) why='linger elapsed'",
      "unshield 0x100",
      "audit unshield window=0x100 reason='no capture session'",
      "notify false [0x100]",
      "publish",
    ]
  }
}

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

  /// `capture.hold` (issue 17, finding 8: a patient capturer waiting longer than the linger
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

extension EngineTests {
  static let quarantineScenarios: [Scenario] = [
    Scenario(
      name: "a new client shields secure windows until the quarantine deadline (not capturing)",
      policy: policy(allow: [allowShell], quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(
          1, .clientConnected(grab, grabberID), startShieldingW1(kind: "quarantine", client: grab) + ["publish"],
          shielded: [w1], capturing: false, active: true, deadline: .at(6),
          sessions: ["#1 quarantine 0x600000 req=0 until 6"]),
        Step(2, .clientConnected(shell, shellID), ["publish"], sessions: ["#1 quarantine 0x600000 req=0 until 6"]),
        Step(5.9, .tick, [], shielded: [w1]),
        Step(
          6, .tick,
          [
            "audit session-end session=1 kind=quarantine client=0x600000 why='quarantine over'", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "publish",
          ],
          shielded: [], active: false, deadline: Deadline.none, sessions: []),
      ]),
    Scenario(
      name: "an allowed client is not quarantined",
      policy: policy(allow: [allowShell], quarantine: .seconds(5)), setup: desk,
      steps: [Step(1, .clientConnected(shell, shellID), ["publish"], shielded: [], active: false, sessions: [])]),
    Scenario(
      name: "an unidentified client is quarantined; identified later as allowed, its quarantine ends",
      policy: policy(allow: [allowShell], quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(1, .clientConnected(shell, nil), startShieldingW1(kind: "quarantine", client: shell) + ["publish"]),
        Step(
          2, .clientIdentified(shell, shellID),
          [
            "audit session-end session=1 kind=quarantine client=0xa00000 why='client is allowed'", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "publish",
          ],
          shielded: [], active: false, sessions: []),
      ]),
    Scenario(
      name: "a quarantined client that exits ends its quarantine",
      policy: policy(quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(1, .clientConnected(grab, grabberID), startShieldingW1(kind: "quarantine", client: grab) + ["publish"]),
        Step(
          2, .clientGone(grab),
          [
            "audit session-end session=1 kind=quarantine client=0x600000 why='client exited'", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "publish",
          ],
          shielded: [], sessions: []),
      ]),
    Scenario(
      name: "a known capturer gets a known session, not a quarantine",
      policy: policy(quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(
          1, .clientConnected(ff, ffmpegID),
          startShieldingW1(kind: "known", client: ff) + ["notify true [0x100]", "publish"],
          sessions: ["#1 known 0x800000 req=0 pinned"])
      ]),
    Scenario(
      name: "a quarantined client's capture request starts a capture session",
      policy: policy(quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(1, .clientConnected(grab, grabberID), startShieldingW1(kind: "quarantine", client: grab) + ["publish"]),
        Step(
          2, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          [
            "audit capture-request client=0x600000 request=GetImage class=ordinary",
            "audit session-start session=2 kind=request client=0x600000 request=GetImage", "notify true [0x100]",
            "publish",
          ],
          capturing: true,
          sessions: ["#1 quarantine 0x600000 req=0 until 6", "#2 request 0x600000 req=1 until 4"]),
      ]),
  ]

  static let compositorScenarios: [Scenario] = [
    Scenario(
      name: "a non-allowed compositor keeps a pinned session; linger after it is replaced",
      policy: policy(), setup: desk + [.clientConnected(comp, picomID)],
      steps: [
        Step(
          1, .compositorChanged(comp),
          ["audit compositor client=0xc00000"] + startShieldingW1(kind: "compositor", client: comp)
            + ["notify true [0x100]", "publish"],
          shielded: [w1], capturing: true, deadline: Deadline.none, sessions: ["#1 compositor 0xc00000 req=0 pinned"]),
        Step(100, .tick, [], shielded: [w1]),
        Step(101, .compositorChanged(nil), ["audit compositor client=none", "publish"], deadline: .at(103)),
        Step(103, .tick, lingerEndW1(kind: "compositor", client: comp), shielded: [], sessions: []),
      ]),
    Scenario(
      name: "an allowed compositor has no session",
      policy: policy(allow: [allowPicom]), setup: desk + [.clientConnected(comp, picomID)],
      steps: [
        Step(
          1, .compositorChanged(comp), ["audit compositor client=0xc00000", "publish"],
          shielded: [], capturing: false, sessions: [])
      ]),
    Scenario(
      name: "an unidentified compositor identified later as allowed loses its session",
      policy: policy(allow: [allowPicom]), setup: desk + [.clientConnected(comp, nil)],
      steps: [
        Step(
          1, .compositorChanged(comp),
          ["audit compositor client=0xc00000"] + startShieldingW1(kind: "compositor", client: comp)
            + ["notify true [0x100]", "publish"]),
        Step(
          2, .clientIdentified(comp, picomID),
          [
            "audit session-end session=1 kind=compositor client=0xc00000 why='client is allowed'", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "notify false [0x100]", "publish",
          ],
          shielded: [], capturing: false, sessions: []),
      ]),
    Scenario(
      name: "the compositor exiting ends its pin; linger follows",
      policy: policy(), setup: desk + [.clientConnected(comp, picomID)],
      steps: [
        Step(
          1, .compositorChanged(comp),
          ["audit compositor client=0xc00000"] + startShieldingW1(kind: "compositor", client: comp)
            + ["notify true [0x100]", "publish"]),
        Step(2, .clientGone(comp), ["publish"], shielded: [w1], deadline: .at(4)),
        Step(4, .tick, lingerEndW1(kind: "compositor", client: comp), shielded: []),
      ]),
  ]

  struct QuarantineTargetCase: Sendable, CustomTestStringConvertible {
    var name: String
    var policy: Policy
    var setup: [Engine.Event]
    var expected: [WindowID]
    var testDescription: String { name }
  }

  static let unknownWindow = window(w3, client: ff, known: false)
  static let bankWindow = window(w4, class: "Firefox", title: "My Bank")

  static let quarantineTargetCases: [QuarantineTargetCase] = [
    QuarantineTargetCase(
      name: "idle desktop: every secure window (tag and rule)",
      policy: policy(secure: [bankRule], quarantine: .seconds(1)),
      setup: desk + [.windowAppeared(bankWindow)], expected: [w1, w2, w4]),
    QuarantineTargetCase(
      name: "a window whose facts are unknown is not armed (shielded as provisional)",
      policy: policy(quarantine: .seconds(1)),
      setup: desk + [.windowAppeared(unknownWindow)], expected: [w1]),
    QuarantineTargetCase(
      name: "manually unshielded window is armed (a session clears the override)",
      policy: policy(quarantine: .seconds(1)),
      setup: desk + [.manualOverride(w1, shielded: false, by: "test")], expected: [w1]),
    QuarantineTargetCase(
      name: "quarantine off: nothing", policy: policy(), setup: desk, expected: []),
    QuarantineTargetCase(
      name: "shields already up (someone captures): nothing", policy: policy(quarantine: .seconds(1)),
      setup: desk + [.captureRequest(grab, CaptureRequest(kind: "GetImage"))], expected: []),
    QuarantineTargetCase(
      name: "paused: nothing", policy: policy(quarantine: .seconds(1)),
      setup: desk + [.pause(until: nil, by: "test")], expected: []),
    QuarantineTargetCase(
      name: "when: always (shields up anyway): nothing", policy: policy(when: .always, quarantine: .seconds(1)),
      setup: desk, expected: []),
    QuarantineTargetCase(
      name: "no secure window: nothing", policy: policy(quarantine: .seconds(1)),
      setup: [.windowAppeared(plainWindow)], expected: []),
  ]

  /// `capture.quarantine` (new clients) and the compositor.
  @Suite struct Quarantine {
    @Test("quarantine", arguments: quarantineScenarios)
    fileprivate func quarantine(_ s: Scenario) { _ = run(s) }

    @Test("compositor", arguments: compositorScenarios)
    fileprivate func compositor(_ s: Scenario) { _ = run(s) }

    /// The RECORD pump maps `quarantineTargets` the moment it reads a ClientStarted, before
    /// the engine hears of the client: they must be exactly the windows the engine then
    /// shields for it, but for windows whose facts are still unknown (those become
    /// provisional and are shielded by the loop, which creates their shields anyway).
    @Test("quarantine targets are what a new client's connection shields", arguments: quarantineTargetCases)
    func quarantineTargetsMatchTheEngine(_ c: QuarantineTargetCase) {
      var e = Engine(policy: c.policy)
      for ev in c.setup { _ = e.handle(ev, now: t(0)) }
      let targets = e.quarantineTargets
      #expect(targets == c.expected, "\(c.name)")
      let fx = e.handle(.clientConnected(ClientID(0xe0_0000), nil), now: t(0.5))
      let shielded = fx.compactMap { if case .shield(let w) = $0 { return w } else { return nil } }
      let unknown = Set(e.windows.values.filter { !$0.info.propertiesKnown }.map(\.info.id))
      #expect(Set(targets).isSubset(of: shielded), "\(c.name): armed \(targets), engine shields \(shielded)")
      #expect(Set(shielded).subtracting(targets).isSubset(of: unknown), "\(c.name): \(shielded) vs \(targets)")
    }
  }
}

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

  /// Decisions the shell once made itself (issue 28): what it does at once, decided by the
  /// engine as it stands (no clock step, no deadline handled, no state changed).

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

extension EngineTests {

  /// The secure tag (`_CAPTURE_SHIELD_SECURE`) decides.
  @Suite struct Tags {
    struct TagCase: Sendable, CustomTestStringConvertible {
      var tag: TagState
      var reason: SecureReason
      var firstLine: String
      var testDescription: String { "\(tag)" }
    }

    static let tagCases: [TagCase] = [
      TagCase(tag: .secure, reason: .tag, firstLine: "tag: _CAPTURE_SHIELD_SECURE=1 -> secure"),
      TagCase(
        tag: .malformed, reason: .malformedTag,
        firstLine: "tag: _CAPTURE_SHIELD_SECURE is malformed -> secure (fail safe)"),
      TagCase(tag: .notSecure, reason: .none, firstLine: "tag: _CAPTURE_SHIELD_SECURE=0 (rules still apply)"),
      TagCase(tag: .absent, reason: .none, firstLine: "tag: none"),
    ]

    @Test("tag decides (malformed is secure)", arguments: tagCases)
    func tagDecides(_ c: TagCase) throws {
      var e = Engine(policy: policy(when: .always))
      let fx = e.handle(.windowAppeared(window(w1, tag: c.tag)), now: t(1))
      #expect(e.windows[w1]?.reason == c.reason)
      if c.reason.isSecure {
        #expect(
          describe(fx) == [
            "audit secure-decision window=0x100 secure=true reason=\(show(.string(c.reason.description)))",
            "shield 0x100",
            "audit shield window=0x100 reason=\(show(.string(c.reason.description))) trigger=shield.when=always",
            "publish",
          ])
        #expect(e.shielded == [w1])
      } else {
        // No audit and no shield (whether state is published is `nonSecureWindowDoesNotPublish`).
        #expect(describe(fx).filter { $0 != "publish" } == [])
        #expect(e.shielded.isEmpty)
      }
      let lines = try #require(e.explain(window: w1)).lines
      #expect(
        lines == [
          c.firstLine, "rules: none",
          "decision: \(c.reason.isSecure ? "SECURE" : "not secure") (\(c.reason.description))",
        ])
    }

    struct TagChange: Sendable, CustomTestStringConvertible {
      var from: TagState
      var to: TagState
      var effects: [String]
      var testDescription: String { "\(from) -> \(to)" }
    }

    static let tagChanges: [TagChange] = [
      TagChange(
        from: .secure, to: .absent,
        effects: [
          "audit secure-decision window=0x100 secure=false reason='not secure'", "unshield 0x100",
          "audit unshield window=0x100 reason='not secure'", "publish",
        ]),
      TagChange(
        from: .secure, to: .notSecure,
        effects: [
          "audit secure-decision window=0x100 secure=false reason='not secure'", "unshield 0x100",
          "audit unshield window=0x100 reason='not secure'", "publish",
        ]),
      TagChange(
        from: .malformed, to: .notSecure,
        effects: [
          "audit secure-decision window=0x100 secure=false reason='not secure'", "unshield 0x100",
          "audit unshield window=0x100 reason='not secure'", "publish",
        ]),
      TagChange(
        from: .absent, to: .secure,
        effects: [
          "audit secure-decision window=0x100 secure=true reason=tag", "shield 0x100",
          "audit shield window=0x100 reason=tag trigger=shield.when=always", "publish",
        ]),
      TagChange(
        from: .notSecure, to: .malformed,
        effects: [
          "audit secure-decision window=0x100 secure=true reason='malformed tag (treated as secure)'", "shield 0x100",
          "audit shield window=0x100 reason='malformed tag (treated as secure)' trigger=shield.when=always", "publish",
        ]),
      // Secure either way: the reason changes, the shield stays.
      TagChange(
        from: .secure, to: .malformed,
        effects: [
          "audit secure-decision window=0x100 secure=true reason='malformed tag (treated as secure)'", "publish",
        ]),
      TagChange(from: .absent, to: .notSecure, effects: []),
    ]

    @Test("tag changes in when: always", arguments: tagChanges)
    func tagChange(_ c: TagChange) throws {
      var e = Engine(policy: policy(when: .always))
      _ = e.handle(.windowAppeared(window(w1, tag: c.from)), now: t(1))
      let fx = e.handle(.windowChanged(window(w1, tag: c.to)), now: t(2))
      #expect(describe(fx) == c.effects)
      #expect(e.shielded == (c.to == .secure || c.to == .malformed ? [w1] : []))
      let lines = try #require(e.explain(window: w1)).lines
      #expect(
        lines.last == "decision: \(e.windows[w1]!.reason.isSecure ? "SECURE" : "not secure") (\(e.windows[w1]!.reason))"
      )
    }

    @Test func secureDecisionAuditCarriesFacts() {
      var e = Engine(policy: policy(when: .always))
      _ = e.handle(.clientConnected(app, keepassID), now: t(0))
      let fx = e.handle(.windowAppeared(secureWindow), now: t(1))
      let r = audits(fx, "secure-decision")
      #expect(r.count == 1)
      #expect(r.first?["window"] == "0x100")
      #expect(r.first?["secure"] == .bool(true))
      #expect(r.first?["class"] == "KeePassXC")
      #expect(r.first?["title"] == "Passwords")
      #expect(r.first?["exe"] == "/usr/bin/keepassxc")
      #expect(r.first?["pid"] == .int(100))
    }

    @Test func tagsInCapturingModeAreDecidedButNotShielded() {
      var e = Engine(policy: policy())
      let fx = e.handle(.windowAppeared(window(w1, tag: .malformed)), now: t(1))
      #expect(
        describe(fx) == [
          "audit secure-decision window=0x100 secure=true reason='malformed tag (treated as secure)'", "publish",
        ])
      #expect(e.shielded.isEmpty)
      #expect(!e.shieldsActive)
    }
  }

  /// `secure` rules decide: first match wins, criteria AND-ed; `explain`.
  @Suite struct Rules {
    static let rules: [Matcher] = [
      Matcher(class: pat("KeePassXC"), exe: pat("*/keepassxc"), name: "keepass"),
      bankRule,
      Matcher(class: pat("KeePassXC"), name: "any keepass"),
      Matcher(pid: 4242, uid: 1000, name: "pid"),
      Matcher(instance: pat("xterm*"), comm: pat("bash")),
      Matcher(title: pat("/secret/"), name: "exact secret"),
    ]

    struct RuleCase: Sendable, CustomTestStringConvertible {
      var name: String
      var facts: Facts
      var identity: ClientIdentity?
      var rule: Int?
      var testDescription: String { name }
    }

    static let ruleCases: [RuleCase] = [
      RuleCase(name: "class and exe both match", facts: Facts(class: "KeePassXC"), identity: keepassID, rule: 0),
      RuleCase(
        name: "AND: exe does not match, a later rule decides", facts: Facts(class: "KeePassXC"),
        identity: grabberID, rule: 2),
      RuleCase(
        name: "first match wins", facts: Facts(class: "KeePassXC", title: "Bank login"), identity: keepassID,
        rule: 0),
      RuleCase(name: "title regex", facts: Facts(class: "Firefox", title: "Online Banking"), identity: nil, rule: 1),
      RuleCase(name: "regex is case-sensitive", facts: Facts(title: "BANK"), identity: nil, rule: nil),
      RuleCase(name: "regex is anchored: exact", facts: Facts(title: "secret"), identity: nil, rule: 5),
      RuleCase(name: "regex is anchored: no substring", facts: Facts(title: "top secret"), identity: nil, rule: nil),
      RuleCase(
        name: "pid and uid from the client", facts: Facts(),
        identity: ClientIdentity(pid: 4242, exe: "/bin/x", uid: 1000), rule: 3),
      RuleCase(
        name: "pid matches but uid does not", facts: Facts(),
        identity: ClientIdentity(pid: 4242, exe: "/bin/x", uid: 0), rule: nil),
      RuleCase(
        name: "instance glob and comm", facts: Facts(instance: "xterm-256color"),
        identity: ClientIdentity(pid: 7, comm: "bash"), rule: 4),
      RuleCase(
        name: "the window's own fact wins over the client's", facts: Facts(class: "KeePassXC", exe: "/opt/keepassxc"),
        identity: grabberID, rule: 0),
      RuleCase(name: "unknown facts never match", facts: Facts(), identity: nil, rule: nil),
      RuleCase(name: "class glob is case-sensitive", facts: Facts(class: "keepassxc"), identity: keepassID, rule: nil),
    ]

    @Test("rules: first match wins, criteria AND-ed, client facts merged", arguments: ruleCases)
    func ruleDecides(_ c: RuleCase) throws {
      var e = Engine(policy: policy(when: .always, secure: Self.rules))
      if let id = c.identity { _ = e.handle(.clientConnected(app, id), now: t(0)) }
      let info = WindowInfo(id: w1, client: app, facts: c.facts)
      let fx = e.handle(.windowAppeared(info), now: t(1))
      let expected = c.rule.map { SecureReason.rule(index: $0, label: Self.rules[$0].label) } ?? SecureReason.none
      #expect(e.windows[w1]?.reason == expected)
      #expect(e.policy.secureReason(facts: e.effectiveFacts(info), tag: .absent) == expected)
      #expect(e.policy.firstSecureRule(e.effectiveFacts(info)) == c.rule)
      #expect(e.shielded == (c.rule == nil ? [] : [w1]))
      if c.rule != nil {
        #expect(audits(fx, "secure-decision").first?["reason"] == .string(expected.description))
      }
      let explanation = try #require(e.explain(window: w1))
      #expect(explanation.reason == expected)
      #expect(explanation.rules.map(\.matched).firstIndex(of: true) == c.rule)
    }

    @Test func explainLinesNameTheDecidingRule() throws {
      var e = Engine(policy: policy(when: .always, secure: Array(Self.rules.prefix(3))))
      _ = e.handle(.clientConnected(app, keepassID), now: t(0))
      _ = e.handle(.windowAppeared(window(w1, class: "KeePassXC", title: "Bank")), now: t(1))
      #expect(
        try #require(e.explain(window: w1)).lines == [
          "tag: none",
          #"rule #1 "keepass": class = "KeePassXC" (is "KeePassXC"), exe = "*/keepassxc" (is "/usr/bin/keepassxc") -> MATCH -> secure (first match wins)"#,
          #"rule #2 "bank": title = "/.*[Bb]ank.*/" (is "Bank") -> matches, but an earlier rule already decided"#,
          #"rule #3 "any keepass": class = "KeePassXC" (is "KeePassXC") -> matches, but an earlier rule already decided"#,
          #"decision: SECURE (rule #1 "keepass")"#,
        ])
      // The same through the policy directly, with the merged facts.
      let facts = e.effectiveFacts(e.windows[w1]!.info)
      #expect(e.policy.explainWindow(facts: facts, tag: .absent) == e.explain(window: w1))
    }

    @Test func explainLinesWhenNothingMatches() throws {
      var e = Engine(policy: policy(when: .always, secure: Array(Self.rules.prefix(3))))
      _ = e.handle(.windowAppeared(window(w1, client: nil, class: "Firefox")), now: t(1))
      #expect(
        try #require(e.explain(window: w1)).lines == [
          "tag: none",
          #"rule #1 "keepass": class != "KeePassXC" (is "Firefox"), exe != "*/keepassxc" (is unknown) -> no match"#,
          #"rule #2 "bank": title != "/.*[Bb]ank.*/" (is unknown) -> no match"#,
          #"rule #3 "any keepass": class != "KeePassXC" (is "Firefox") -> no match"#,
          "decision: not secure (not secure)",
        ])
      #expect(e.explain(window: 0x999) == nil)
    }

    @Test func explainShowsProvisionalDecision() throws {
      var e = Engine(policy: policy(when: .always, secure: [Self.rules[0]]))
      _ = e.handle(.clientConnected(app, keepassID), now: t(0))
      _ = e.handle(.windowAppeared(window(w3, known: false)), now: t(1))
      let x = try #require(e.explain(window: w3))
      #expect(x.reason == .provisional)
      #expect(x.lines.last == "decision: SECURE (provisional (facts not known yet))")
    }
  }
}

extension EngineTests {

  /// Client classes (`capture.allow`, `capture.known`) and client lifetimes.
  @Suite struct Clients {
    struct ClassCase: Sendable, CustomTestStringConvertible {
      var name: String
      var identity: ClientIdentity?
      var allowFFmpeg = false
      var expected: ClientClass
      var testDescription: String { name }
    }

    static let classCases: [ClassCase] = [
      ClassCase(name: "no identity", identity: nil, expected: .unidentified),
      ClassCase(
        name: "no pid, even with an allowed exe",
        identity: ClientIdentity(exe: "/usr/bin/gnome-shell", failure: "TCP client"), expected: .unidentified),
      ClassCase(name: "allowed", identity: shellID, expected: .allowed),
      ClassCase(name: "default known: ffmpeg", identity: ffmpegID, expected: .known),
      ClassCase(
        name: "default known: obs", identity: ClientIdentity(pid: 9, exe: "/snap/obs-studio/bin/obs"), expected: .known),
      ClassCase(
        name: "default known: vokoscreen*", identity: ClientIdentity(pid: 9, exe: "/usr/bin/vokoscreenNG"),
        expected: .known),
      ClassCase(
        name: "*/ffmpeg needs a directory", identity: ClientIdentity(pid: 9, exe: "ffmpeg"), expected: .ordinary),
      ClassCase(
        name: "*/ffmpeg is whole-value", identity: ClientIdentity(pid: 9, exe: "/usr/bin/ffmpeg-static"),
        expected: .ordinary),
      ClassCase(name: "ordinary", identity: grabberID, expected: .ordinary),
      ClassCase(name: "allow is checked before known", identity: ffmpegID, allowFFmpeg: true, expected: .allowed),
    ]

    @Test("capture.allow / capture.known classification", arguments: classCases)
    func classify(_ c: ClassCase) {
      var allow = [allowShell]
      if c.allowFFmpeg { allow.append(Matcher(exe: pat("*/ffmpeg"))) }
      var e = Engine(policy: policy(allow: allow))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      #expect(e.policy.classify(c.identity) == c.expected)
      let fx = e.handle(.clientConnected(grab, c.identity), now: t(1))
      #expect(e.clients[grab]?.clientClass == c.expected)
      #expect(e.isCapturing == (c.expected == .known))
      let kinds: [AuditRecord.Value?] = c.expected == .known ? ["known"] : []
      #expect(audits(fx, "session-start").map { $0["kind"] } == kinds)
    }

    @Test(
      "unidentified clients are never allowed: a request starts a session",
      arguments: [
        ClientIdentity?.none, ClientIdentity(exe: "/usr/bin/gnome-shell", failure: "TCP client"),
        ClientIdentity(exe: "/usr/bin/gnome-shell", comm: "gnome-shell", uid: 1000, failure: "process gone"),
      ])
    func unidentifiedNeverAllowed(_ identity: ClientIdentity?) {
      var e = Engine(policy: policy(allow: [allowShell]))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(shell, identity), now: t(0))
      let fx = e.handle(.captureRequest(shell, CaptureRequest(kind: "GetImage")), now: t(1))
      #expect(audits(fx, "capture-request").first?["class"] == "unidentified")
      #expect(audits(fx, "session-start").count == 1)
      #expect(e.shielded == [w1])
      #expect(e.isCapturing)
    }

    @Test func captureRequestFromAnUnconnectedClientIsUnidentified() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      let fx = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage", target: 0x1d0)), now: t(1))
      let r = audits(fx, "capture-request").first
      #expect(r?["class"] == "unidentified")
      #expect(r?["target"] == "0x1d0")
      #expect(r?["identity"] == "unknown")
      #expect(e.clients[grab]?.captureRequests == 1)
      #expect(e.shielded == [w1])
    }

    /// A request recorded before its client's end but handled after it (the shell reads
    /// RECORD in batches; the order of its parts is not the server's): the session must not
    /// be pinned to a connection that is over (issue 29: a shield that never came down).
    struct LateRequestCase: Sendable, CustomTestStringConvertible {
      var name: String
      var before: [Engine.Event]
      /// Sessions after the request; then after `linger` (2 s) whether the shield is down.
      var sessions: [String]
      var downAfterLinger: Bool
      var testDescription: String { name }
    }

    static let lateRequestCases: [LateRequestCase] = [
      LateRequestCase(
        name: "handled after its client went: detached at once, ends after the linger",
        before: [.clientConnected(grab, grabberID), .clientGone(grab)],
        sessions: ["#1 request 0x600000 req=1 until 3"], downAfterLinger: true),
      LateRequestCase(
        name: "never seen connecting, gone, then its request: the same",
        before: [.clientGone(grab)], sessions: ["#1 request 0x600000 req=1 until 3"], downAfterLinger: true),
      // controls: a client that is connected keeps its session pinned
      LateRequestCase(
        name: "control: connected, its request: pinned while connected",
        before: [.clientConnected(grab, grabberID)], sessions: ["#1 request 0x600000 req=1 pinned"],
        downAfterLinger: false),
      LateRequestCase(
        name: "control: gone, then a new client with the same base connects: pinned",
        before: [.clientConnected(grab, grabberID), .clientGone(grab), .clientConnected(grab, xtermID)],
        sessions: ["#1 request 0x600000 req=1 pinned"], downAfterLinger: false),
    ]

    @Test("a capture request handled after its client's end", arguments: lateRequestCases)
    func lateRequest(_ c: LateRequestCase) {
      var e = Engine(policy: policy(hold: .connected))
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      for ev in c.before { _ = e.handle(ev, now: t(0.5)) }
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage(own window)", target: 0x60_0001)), now: t(1))
      #expect(sessionSummary(e) == c.sessions)
      #expect(e.shielded == [w1])
      _ = e.handle(.tick, now: t(3))
      #expect(e.shielded.isEmpty == c.downAfterLinger, "shielded after the linger: \(e.shielded)")
      #expect(e.sessions.isEmpty == c.downAfterLinger)
    }

    /// InputOnly windows have no pixels: never shielded, even secure, provisional or forced
    /// (a shield inside one fails with BadMatch: issue 29's "error" records at shutter's start).
    @Test("an InputOnly window is never shielded", arguments: [false, true])
    func inputOnlyNeverShielded(_ inputOnly: Bool) {
      var e = Engine(policy: policy())
      var tagged = window(w3, tag: .secure)
      tagged.inputOnly = inputOnly
      var unknown = window(w4, known: false)
      unknown.inputOnly = inputOnly
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      _ = e.handle(.windowAppeared(tagged), now: t(0))
      _ = e.handle(.clientConnected(grab, grabberID), now: t(0))
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(1))
      _ = e.handle(.windowAppeared(unknown), now: t(1.1))
      _ = e.handle(.manualOverride(w2, shielded: true, by: "test"), now: t(1.2))
      // control (inputOnly false): the tagged and the provisional window are shielded
      #expect(e.shielded == (inputOnly ? [w1, w2] : [w1, w2, w3, w4]))
      #expect(e.windows[w3]?.reason.isSecure == true)
      var forced = window(w2, class: "Firefox", title: "Online Banking")
      forced.inputOnly = inputOnly
      _ = e.handle(.windowChanged(forced), now: t(1.3))
      #expect(e.shielded.contains(w2) == !inputOnly)
    }

    @Test func departedClientsAreBounded() {
      var e = Engine(policy: policy())
      let n = Engine.departedLimit + 10
      for i in 0..<n { _ = e.handle(.clientGone(ClientID(UInt32(i + 1) << 21)), now: t(0)) }
      #expect(e.departed.count == Engine.departedLimit)
      #expect(!e.departed.contains(ClientID(1 << 21)))
      #expect(e.departed.contains(ClientID(UInt32(n) << 21)))
      _ = e.handle(.clientConnected(ClientID(UInt32(n) << 21), nil), now: t(1))
      #expect(!e.departed.contains(ClientID(UInt32(n) << 21)))
    }

    @Test func auditsCarryTheCapturerIdentity() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      let fx = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      for event in ["session-start", "shield"] {
        let r = audits(fx, event).first
        #expect(r?["pid"] == .int(300), "\(event)")
        #expect(r?["exe"] == "/usr/bin/ffmpeg", "\(event)")
        #expect(r?["comm"] == "ffmpeg", "\(event)")
        #expect(r?["uid"] == .int(1000), "\(event)")
      }
      _ = e.handle(.clientGone(ff), now: t(2))
      let end = audits(e.handle(.tick, now: t(4)), "session-end").first
      #expect(end?["seconds"] == .double(3))
      #expect(end?["requests"] == .int(0))
      #expect(end?["pid"] == .int(300))
    }

    @Test func reusedBaseDoesNotCarryClientState() {
      var e = Engine(policy: policy(allow: [allowShell]))
      _ = e.handle(.clientConnected(grab, grabberID), now: t(0))
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(1))
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(1))
      _ = e.handle(.clientGone(grab), now: t(2))
      #expect(e.clients[grab] == nil)
      _ = e.handle(.clientConnected(grab, shellID), now: t(2.5))
      let c = e.clients[grab]
      #expect(c?.identity == shellID)
      #expect(c?.clientClass == .allowed)
      #expect(c?.captureRequests == 0)
      #expect(c?.firstCaptureAt == nil)
      #expect(c?.connectedAt == t(2.5))
    }
  }
}

extension EngineTests {

  /// Derived state: the snapshot, deadlines, pause, policy reloads.
  @Suite struct DerivedState {
    @Test func snapshotPublishesSecureWindowsSessionsAndClients() throws {
      let p = policy(secure: [bankRule], allow: [allowShell], quarantine: .seconds(5))
      var e = Engine(policy: p)
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.windowAppeared(plainWindow), now: t(0))
      _ = e.handle(.windowAppeared(window(w4, class: "XTerm", title: "bash")), now: t(0))
      _ = e.handle(.clientConnected(app, keepassID), now: t(0))  // quarantined until 5
      _ = e.handle(.clientConnected(shell, shellID), now: t(0.5))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      _ = e.handle(.clientConnected(comp, picomID), now: t(2))
      _ = e.handle(.compositorChanged(comp), now: t(2))
      #expect(e.shielded == [w1, w2])
      _ = e.handle(.pause(until: t(13), by: "alice"), now: t(3))
      #expect(e.shielded.isEmpty)

      let s = e.snapshot(pid: 42, display: ":1", startedAt: 1_700_000_000)
      #expect(s.version == 1)
      #expect(s.pid == 42)
      #expect(s.display == ":1")
      #expect(s.paused)
      #expect(s.pauseRemaining == 10)
      #expect(s.capturing)
      #expect(!s.shieldsActive)
      #expect(
        s.policy
          == DaemonState.PolicySummary(
            sources: [], when: .capturing, failMode: .open, rules: 1, quarantineMs: 5000, lingerMs: 2000,
            hold: "0s"))
      #expect(
        s.windows == [
          .init(
            id: w1, title: nil, class: "KeePassXC", exe: "/usr/bin/keepassxc", secure: true, reason: "tag",
            shielded: false),
          .init(
            id: w2, title: nil, class: "Firefox", exe: "/usr/bin/keepassxc", secure: true,
            reason: #"rule #1 "bank""#, shielded: false),
        ])
      // No title in the published state (any client reads it); the daemon's user gets them
      // over the command socket.
      let published = String(decoding: try JSONEncoder().encode(s), as: UTF8.self)
      for title in ["Passwords", "Online Banking", "bash"] { #expect(!published.contains(title), "\(title) published") }
      #expect(!published.contains("\"title\""))
      #expect(e.secureWindowTitles() == [w1: "Passwords", w2: "Online Banking"])
      #expect(s.sessions.map(\.id) == [1, 2, 3, 4])
      #expect(s.sessions.map(\.kind) == [.quarantine, .known, .quarantine, .compositor])
      #expect(s.sessions.map(\.client) == [app, ff, comp, comp])
      #expect(s.sessions.map(\.endsIn) == [2, nil, 4, nil])
      #expect(s.sessions.map(\.ageSeconds) == [3, 2, 1, 1])
      #expect(s.sessions.map(\.pid) == [100, 300, 500, 500])
      #expect(s.clients.map(\.client) == [app, ff, shell, comp])
      #expect(s.clients.map(\.class) == [.ordinary, .known, .allowed, .ordinary])
      #expect(s.clients.map(\.capturing) == [false, true, false, true])
      #expect(s.clients.map(\.compositor) == [false, false, false, true])
      #expect(s.compositor?.client == comp)

      // Round trip through the published JSON.
      let data = try JSONEncoder().encode(s)
      #expect(try JSONDecoder().decode(DaemonState.self, from: data) == s)
    }

    @Test func snapshotAfterEverythingEnds() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      _ = e.handle(.clientGone(ff), now: t(2))
      #expect(e.snapshot(pid: 1, display: ":0", startedAt: 0).sessions.map(\.endsIn) == [2])
      _ = e.handle(.tick, now: t(4))
      let s = e.snapshot(pid: 1, display: ":0", startedAt: 0)
      #expect(!s.capturing && !s.shieldsActive && !s.paused)
      #expect(s.pauseRemaining == nil)
      #expect(s.sessions.isEmpty && s.clients.isEmpty)
      #expect(s.compositor == nil)
      #expect(s.windows.map(\.id) == [w1])
      #expect(s.windows.map(\.shielded) == [false])
    }

    @Test func nextDeadlineIsTheEarliestOfSessionsAndPause() {
      var e = Engine(policy: policy(quarantine: .seconds(10)))
      #expect(e.nextDeadline == nil)
      _ = e.handle(.clientConnected(grab, grabberID), now: t(1))  // quarantine until 11
      #expect(e.nextDeadline == t(11))
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(2))  // until 4
      #expect(e.nextDeadline == t(4))
      _ = e.handle(.pause(until: t(3), by: "alice"), now: t(2))
      #expect(e.nextDeadline == t(3))
      _ = e.handle(.tick, now: t(3))
      #expect(!e.isPaused)
      #expect(e.nextDeadline == t(4))
      _ = e.handle(.tick, now: t(4))
      #expect(e.nextDeadline == t(11))
      _ = e.handle(.tick, now: t(11))
      #expect(e.nextDeadline == nil)
      #expect(e.sessions.isEmpty)
    }

    /// Provisional windows' deadlines (`provisionalLimit`, 1 s): `w3` appears at 0 (due at 1),
    /// `w4` at 0.5 (due at 1.5); then these events, each `(time, event)`.
    static let provisionalDeadlineCases: [(name: String, events: [(Double, Engine.Event)], deadline: Double?)] = [
      ("nothing else: the earliest", [], 1),
      ("the earliest is destroyed: the later one's", [(0.6, .windowGone(w3))], 1.5),
      ("the earliest is mapped (its facts known): the later one's", [(0.6, .windowChanged(window(w3)))], 1.5),
      ("the later one is destroyed: still the earliest", [(0.6, .windowGone(w4))], 1),
      ("the earliest settles at its deadline: the later one's", [(1, .tick)], 1.5),
      ("both go", [(0.6, .windowGone(w3)), (0.7, .windowChanged(window(w4)))], nil),
      ("both settle", [(1.5, .tick)], nil),
      (
        "the earliest is destroyed and its id comes back unmapped: behind the later one",
        [(0.6, .windowGone(w3)), (0.7, .windowAppeared(window(w3, known: false)))], 1.5
      ),
      (
        "the later one is destroyed and its id comes back: the earliest, then the new one",
        [(0.6, .windowGone(w4)), (0.7, .windowAppeared(window(w4, known: false))), (1, .tick)], 1.7
      ),
    ]

    @Test(arguments: provisionalDeadlineCases)
    func nextDeadlineFollowsTheProvisionalWindows(
      name: String, events: [(Double, Engine.Event)], deadline: Double?
    ) {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(window(w3, known: false)), now: t(0))
      _ = e.handle(.windowAppeared(window(w4, known: false)), now: t(0.5))
      for (at, event) in events { _ = e.handle(event, now: t(at)) }
      #expect(e.nextDeadline == deadline.map(t), "\(name)")
      // The deadline is what the loop wakes for: a tick then settles what is due, and the
      // next deadline is a later one (never the same, never in the past).
      if let d = deadline {
        _ = e.handle(.tick, now: t(d))
        if let next = e.nextDeadline { #expect(next > t(d), "\(name)") }
      }
    }

    /// `DeadlineQueue`: the earliest deadline at every step, against the minimum over a
    /// plain dictionary, for keys set, replaced, removed and taken when due in any order.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func deadlineQueueKeepsTheEarliest(seed: UInt64) {
      var rng = SplitMix64(seed: seed)
      var q = DeadlineQueue<UInt32>()
      var plain: [UInt32: MonotonicTime] = [:]
      var now = 10.0
      for step in 0..<2000 {
        let key = UInt32(rng.next() % 12)
        switch rng.next() % 4 {
        case 0, 1:
          // Mostly in time order (as the engine sets them), sometimes earlier.
          let at = t(now + (rng.next() % 5 == 0 ? -0.5 : 1))
          q[key] = at
          plain[key] = at
        case 2:
          q[key] = nil
          plain[key] = nil
        default:
          now += 0.1
          let due = plain.filter { $0.value <= t(now) }.keys.sorted()
          #expect(q.removeDue(at: t(now)) == due, "step \(step)")
          for k in due { plain[k] = nil }
        }
        #expect(q.earliest == plain.values.min(), "step \(step)")
        #expect(q.count == plain.count)
        #expect(q[key] == plain[key])
      }
    }

    @Test func pauseAuditsItsLength() {
      var e = Engine(policy: policy(when: .always))
      let fx = e.handle(.pause(until: t(31.5), by: "alice"), now: t(1.5))
      #expect(audits(fx, "pause").first?["seconds"] == .double(30))
      let fx2 = e.handle(.pause(until: nil, by: "bob"), now: t(2))
      #expect(audits(fx2, "pause").first?["seconds"] == "until resume")
      #expect(e.isPaused)
    }

    @Test func policyReplacedReclassifiesClients() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(0))
      #expect(e.isCapturing)
      var p = policy()
      p.captureKnown = []
      let fx = e.handle(.policyReplaced(p), now: t(1))
      #expect(
        describe(fx) == [
          "audit policy-loaded rules=0 when=capturing",
          "audit session-end session=1 kind=known client=0x800000 why='client no longer known'",
          "unshield 0x100", "audit unshield window=0x100 reason='no capture session'", "notify false [0x100]",
          "publish",
        ])
      #expect(e.clients[ff]?.clientClass == .ordinary)
      // And back: a known capturer again.
      let fx2 = e.handle(.policyReplaced(policy()), now: t(2))
      #expect(audits(fx2, "session-start").map { $0["kind"] } == ["known"])
      #expect(e.shielded == [w1])
    }

    @Test func policyRejectedKeepsThePolicy() {
      let p = policy(when: .always, secure: [bankRule])
      var e = Engine(policy: p)
      _ = e.handle(.windowAppeared(plainWindow), now: t(0))
      let fx = e.handle(.policyRejected("boom"), now: t(1))
      #expect(describe(fx) == ["audit policy-rejected error=boom"])
      #expect(audits(fx, "policy-rejected").first?["kept"] == "last good policy")
      #expect(e.policy == p)
      #expect(e.shielded == [w2])
    }

    @Test func wantsPromptRecordsWhileSessionsOrUnidentifiedClients() {
      var e = Engine(policy: policy())
      #expect(!e.wantsPromptRecords)
      _ = e.handle(.clientConnected(grab, nil), now: t(0))
      #expect(e.wantsPromptRecords)
      _ = e.handle(.clientIdentified(grab, grabberID), now: t(0))
      #expect(!e.wantsPromptRecords)
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(1))
      #expect(e.wantsPromptRecords)
      _ = e.handle(.tick, now: t(3))
      #expect(!e.wantsPromptRecords)
    }
  }

  /// Engine bugs found once, each kept as a test.
  @Suite struct KnownIssues {
    /// A client's identity that arrives after its windows (stalled lookup, start-up order)
    /// must re-evaluate those windows: `exe` rules depend on it.
    @Test("client facts arriving later re-evaluate the client's windows", arguments: [true, false])
    func lateIdentityReevaluatesWindows(connectedFirst: Bool) {
      var e = Engine(policy: policy(when: .always, secure: [Matcher(exe: pat("*/keepassxc"), name: "keepass")]))
      if connectedFirst { _ = e.handle(.clientConnected(app, nil), now: t(0)) }
      _ = e.handle(.windowAppeared(window(w1, class: "KeePassXC")), now: t(0))
      #expect(e.windows[w1]?.reason == SecureReason.none)
      let late: Engine.Event = connectedFirst ? .clientIdentified(app, keepassID) : .clientConnected(app, keepassID)
      let fx = e.handle(late, now: t(1))
      #expect(e.windows[w1]?.reason == .rule(index: 0, label: #""keepass""#))
      #expect(describe(fx).contains("shield 0x100"))
      #expect(e.shielded == [w1])
    }

    @Test func knownCapturerReusingABaseWithinLingerIsPinned() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      _ = e.handle(.clientGone(ff), now: t(2))  // linger until 4
      let second = ClientIdentity(pid: 301, exe: "/usr/bin/ffmpeg", comm: "ffmpeg", uid: 1000)
      _ = e.handle(.clientConnected(ff, second), now: t(2.5))  // same base, new ffmpeg
      _ = e.handle(.tick, now: t(10))
      #expect(e.isCapturing)
      #expect(e.shielded == [w1])
      #expect(e.sessions.values.contains { $0.kind == .known && $0.pinned && $0.identity == second })
    }

    @Test func allowedClientOnAReusedBaseDoesNotEndThePreviousClientsLinger() {
      var e = Engine(policy: policy(allow: [allowShell]))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      _ = e.handle(.clientGone(ff), now: t(2))  // linger until 4
      _ = e.handle(.clientConnected(ff, nil), now: t(2.5))
      let fx = e.handle(.clientIdentified(ff, shellID), now: t(3))
      #expect(audits(fx, "session-end").isEmpty)
      #expect(e.shielded == [w1])
      #expect(e.sessions.values.first?.identity == ffmpegID)
      _ = e.handle(.tick, now: t(4))
      #expect(e.shielded.isEmpty)
    }

    struct PlainWindowCase: Sendable, CustomTestStringConvertible {
      var name: String
      var info: WindowInfo
      var testDescription: String { name }
    }

    static let plainWindows: [PlainWindowCase] = [
      PlainWindowCase(name: "no tag", info: window(w4, class: "XTerm")),
      PlainWindowCase(name: "tag 0", info: window(w4, class: "XTerm", tag: .notSecure)),
      PlainWindowCase(name: "no rule matches", info: window(w4, class: "XTerm", title: "Dashboard")),
      PlainWindowCase(name: "unknown facts, no client", info: window(w4, client: nil, known: false)),
    ]

    /// `_CAPTURE_SHIELD_STATE` only lists secure or shielded windows, so a plain window
    /// appearing must not make the shell rewrite it.
    @Test("a non-secure window appearing does not publish state", arguments: plainWindows)
    func nonSecureWindowDoesNotPublish(_ c: PlainWindowCase) {
      var e = Engine(policy: policy(secure: [bankRule]))
      let before = e.snapshot(pid: 1, display: ":0", startedAt: 0)
      let fx = e.handle(.windowAppeared(c.info), now: t(0))
      #expect(e.snapshot(pid: 1, display: ":0", startedAt: 0) == before)
      #expect(describe(fx) == [])
    }

    @Test func secureWindowTitleChangeRepublishes() {
      var e = Engine(policy: policy(when: .always))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      let fx = e.handle(.windowChanged(window(w1, class: "KeePassXC", title: "Renamed", tag: .secure)), now: t(1))
      #expect(e.secureWindowTitles()[w1] == "Renamed")
      #expect(e.snapshot(pid: 1, display: ":0", startedAt: 0).windows.first?.title == nil)
      #expect(describe(fx) == ["publish"])
    }

    @Test func sessionsEndedByAReloadAreAuditedInSessionOrder() {
      var e = Engine(policy: policy())
      let clients = (0..<8).map { ClientID(0x100_0000 + $0 * 0x20_0000) }
      for (i, c) in clients.enumerated() {
        _ = e.handle(.clientConnected(c, ClientIdentity(pid: 1000 + i, exe: "/usr/bin/ffmpeg")), now: t(0))
      }
      var p = policy()
      p.captureKnown = []
      let ended = audits(e.handle(.policyReplaced(p), now: t(1)), "session-end").map { $0["session"] }
      #expect(ended.count == 8)
      #expect(ended == (1...8).map { AuditRecord.Value.int($0) })
    }

    /// Provisional windows count as the client's secure windows (`secureByClient`), so two
    /// unknown windows of one client keep each other provisional once the shields drop.
    @Test func unknownWindowsAreNotProvisionalAfterTheShieldsDrop() {
      var e = Engine(policy: policy())
      _ = e.handle(.clientConnected(grab, grabberID), now: t(0))
      _ = e.handle(.windowAppeared(window(w3, client: grab, known: false)), now: t(0.5))
      _ = e.handle(.windowAppeared(window(w4, client: grab, known: false)), now: t(0.5))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      #expect(e.shielded == [w3, w4])
      _ = e.handle(.clientGone(ff), now: t(2))
      let fx = e.handle(.tick, now: t(4))
      #expect(!e.shieldsActive)
      #expect(e.shielded.isEmpty)
      #expect(e.windows[w3]?.reason == SecureReason.none)
      #expect(e.windows[w4]?.reason == SecureReason.none)
      #expect(describe(fx).contains("notify false []"))
      #expect(e.snapshot(pid: 1, display: ":0", startedAt: 0).windows.isEmpty)
    }

    /// `Session.bypass` is only set when a bypass request starts a session; one that
    /// extends a live session leaves it unset, so a later `allow` classification ends a
    /// session whose client attempted a bypass.
    @Test func bypassRequestExtendingASessionSurvivesAllow() {
      var e = Engine(policy: policy(allow: [allowShell]))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(shell, nil), now: t(0))
      _ = e.handle(.captureRequest(shell, CaptureRequest(kind: "GetImage")), now: t(1))
      let fx = e.handle(
        .captureRequest(
          shell, CaptureRequest(kind: "Composite RedirectWindow(Manual)", target: w1, bypassesShield: true)),
        now: t(1.5))
      #expect(audits(fx, "shield-bypass-attempt").count == 1)
      let fx2 = e.handle(.clientIdentified(shell, shellID), now: t(2))
      #expect(audits(fx2, "session-end").isEmpty)
      #expect(e.shielded == [w1])
    }

    /// `handle` keeps `self.now` monotonic but computes deadlines from the `now` parameter,
    /// so an event stamped before the previous one gets deadlines in the past.
    @Test func eventStampedInThePastUsesTheEngineClock() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.tick, now: t(10))
      let fx = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(7))
      #expect(e.now == t(10))
      #expect(audits(fx, "session-end").isEmpty)
      #expect(e.shielded == [w1])
      #expect(e.nextDeadline == t(12))
    }

    @Test func regexAlternationAndLazyQuantifiersMatchTheWholeValue() {
      let alternation = pat("/Bank|Banking/")
      let lazy = pat("/.*?Bank.*?/")
      #expect(alternation.matches("Bank"))
      #expect(!alternation.matches("Bankin"))
      #expect(alternation.matches("Banking"))
      #expect(lazy.matches("My Bank account"))
    }
  }
}

extension EngineTests {
  // MARK: Launches (`capture.quarantineOnLaunch`)

  /// A timed event for a launch case.
  struct TimedEvent: Sendable {
    var at: Double
    var event: Engine.Event
  }

  struct LaunchCase: Sendable, CustomTestStringConvertible {
    var name: String
    var policy: Policy
    var events: [TimedEvent]
    /// After the last event.
    var shielded: Set<WindowID>
    var launches: Int
    var testDescription: String { name }
  }

  static func aged(_ id: ClientIdentity, _ age: Double?) -> ClientIdentity {
    var id = id
    id.processAge = age
    return id
  }

  static func launchPolicy(onLaunch: Bool = true, quarantine: PolicyDuration? = .seconds(1)) -> Policy {
    var p = policy(allow: [allowShell], quarantine: quarantine)
    p.quarantineOnLaunch = onLaunch
    return p
  }

  static let tool = ClientID(0xc0_0000)
  static let deskAt0 = desk.map { TimedEvent(at: 0, event: $0) }

  static let launchCases: [LaunchCase] = [
    LaunchCase(
      name: "a launch shields the secure windows before any client connects", policy: launchPolicy(),
      events: deskAt0 + [TimedEvent(at: 1, event: .clientLaunching(program: nil))], shielded: [w1], launches: 1),
    LaunchCase(
      name: "no client comes: the launch ends with the quarantine duration", policy: launchPolicy(),
      events: deskAt0 + [TimedEvent(at: 1, event: .clientLaunching(program: nil)), TimedEvent(at: 2.01, event: .tick)],
      shielded: [], launches: 0),
    LaunchCase(
      name: "the launched process connects and is allowed: shields come down", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
      ], shielded: [], launches: 0),
    LaunchCase(
      name: "identity with the connection (quarantine path off): the launch is matched too", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, aged(shellID, 0.01))),
      ], shielded: [], launches: 0),
    LaunchCase(
      name: "a new connection of a long-running process does not end a launch", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 600))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "a young process's second connection does not end a later launch (one libxcb load per process)",
      policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
        TimedEvent(at: 1.1, event: .clientGone(shell)),
        TimedEvent(at: 1.2, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.21, event: .clientConnected(grab, nil)),
        TimedEvent(at: 1.211, event: .clientIdentified(grab, aged(shellID, 0.22))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "a process started after the launch is not its client", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.5, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.5, event: .clientIdentified(shell, aged(shellID, 0.1))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "no process age (remote client, process gone): the launch stays (fail safe)", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, nil))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "two launches, one client: the other launch keeps the shields up", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.001, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "the launched tool is not allowed: its own quarantine holds the shields", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(tool, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(tool, aged(grabberID, 0.01))),
      ], shielded: [w1], launches: 0),
    LaunchCase(
      name: "a program start is matched by a young client running that program", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: "gnome-shell")),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
      ], shielded: [], launches: 0),
    LaunchCase(
      name: "a program start is not matched by a client running another program", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: "xwd")),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "quarantineOnLaunch false: a launch does nothing", policy: launchPolicy(onLaunch: false),
      events: deskAt0 + [TimedEvent(at: 1, event: .clientLaunching(program: nil))], shielded: [], launches: 0),
    LaunchCase(
      name: "quarantine off: a launch does nothing", policy: launchPolicy(quarantine: nil),
      events: deskAt0 + [TimedEvent(at: 1, event: .clientLaunching(program: nil))], shielded: [], launches: 0),
    LaunchCase(
      name: "paused: a launch shields nothing", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 0.5, event: .pause(until: nil, by: "test")),
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
      ], shielded: [], launches: 1),
    LaunchCase(
      name: "a reload that turns the quarantine off drops pending launches", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.1, event: .policyReplaced(launchPolicy(quarantine: nil))),
      ], shielded: [], launches: 0),
  ]

  /// `capture.quarantineOnLaunch`.
  @Suite struct Launches {
    /// `capture.quarantineOnLaunch`: the shell reports processes loading libxcb; the engine
    /// keeps the shields up from then until a client young enough to be that process is
    /// identified, or until the quarantine duration ends.
    @Test("launches", arguments: launchCases)
    func launch(_ c: LaunchCase) {
      var e = Engine(policy: c.policy)
      for te in c.events { _ = e.handle(te.event, now: t(te.at)) }
      #expect(e.shielded == c.shielded, "\(c.name)")
      #expect(e.launches.count == c.launches, "\(c.name)")
    }

    @Test func launchEndsAreAudited() {
      var e = Engine(policy: launchPolicy())
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      _ = e.handle(.clientLaunching(program: nil), now: t(1))
      _ = e.handle(.clientLaunching(program: nil), now: t(1.5))
      _ = e.handle(.clientConnected(shell, nil), now: t(1.52))
      let matched = audits(e.handle(.clientIdentified(shell, aged(shellID, 0.03)), now: t(1.53)), "launch-end")
      #expect(matched.count == 1)
      #expect(matched.first?["why"] == .string("client identified"))
      #expect(matched.first?["exe"] == .string("/usr/bin/gnome-shell"))
      #expect(e.launches.count == 1)  // the launch at 1.0 s: the shell's process started after it
      let expired = audits(e.handle(.tick, now: t(2.01)), "launch-end")
      #expect(expired.count == 1)
      #expect(expired.first?["why"] == .string("no client connected"))
      #expect(e.launches.isEmpty && e.shielded.isEmpty)
    }

    /// A client ends the start of its own program before an earlier libxcb open (which may
    /// be another process's), and the audit record names the program.
    @Test func aClientPrefersItsOwnProgramsStart() {
      var e = Engine(policy: launchPolicy())
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      _ = e.handle(.clientLaunching(program: nil), now: t(1))
      _ = e.handle(.clientLaunching(program: "gnome-shell"), now: t(1.001))
      _ = e.handle(.clientConnected(shell, nil), now: t(1.004))
      let ended = audits(e.handle(.clientIdentified(shell, aged(shellID, 0.01)), now: t(1.005)), "launch-end")
      #expect(ended.count == 1)
      #expect(ended.first?["program"] == .string("gnome-shell"))
      #expect(e.launches.map(\.program) == [nil])
    }

    @Test func aLaunchIsADeadline() {
      var e = Engine(policy: launchPolicy())
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      let fx = e.handle(.clientLaunching(program: nil), now: t(1))
      #expect(fx.contains(.shield(w1)))
      #expect(e.nextDeadline == t(2))
      #expect(e.shieldsActive && !e.isCapturing)  // shields up, nobody captures yet
      #expect(e.quarantineTargets.isEmpty)  // up already: nothing to arm
    }
  }
}

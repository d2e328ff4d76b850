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

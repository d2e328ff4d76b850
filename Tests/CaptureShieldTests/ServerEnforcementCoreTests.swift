// Server enforcement's pure part: from the engine's decisions to what the Xorg module is
// told (policy tags, grants, protection) and the rate-limited audit of censored reads.

import Testing

@testable import CaptureShield

private let app = ClientID(0x40_0000)
private let picom = ClientID(0x60_0000)
private let grabber = ClientID(0x80_0000)
private let tagged: WindowID = 0x40_0001
private let byRule: WindowID = 0x40_0002
private let plain: WindowID = 0x40_0003
private let appID = ClientIdentity(pid: 10, exe: "/usr/bin/keepassxc", comm: "keepassxc", uid: 1000)
private let picomID = ClientIdentity(pid: 11, exe: "/usr/bin/picom", comm: "picom", uid: 1000)
private let grabberID = ClientIdentity(pid: 12, exe: "/usr/bin/grabber", comm: "grabber", uid: 1000)

/// The policy as the daemon runs it under server enforcement.
private func serverPolicy(allowPicom: Bool = true) -> Policy {
  var p = Policy()
  p.when = .always
  p.builtinSecure = []  // its KeePassXC windows are the test's
  p.secure = [Matcher(class: try! Pattern.parse("Bank"), name: "bank")]
  if allowPicom { p.captureAllow = [Matcher(exe: try! Pattern.parse("/usr/bin/picom"), name: "picom")] }
  return p
}

private func window(_ id: WindowID, class cls: String?, tag: TagState = .absent) -> WindowInfo {
  WindowInfo(id: id, client: app, facts: Facts(class: cls, title: nil), tag: tag, propertiesKnown: true)
}

/// Feeds `events` to an engine and the enforcement after each, as the daemon does; returns
/// the enforcement effects of the last event.
private func run(_ events: [Engine.Event], engine: inout Engine, enforcement: inout ServerEnforcement)
  -> [ServerEnforcement.Effect]
{
  var last: [ServerEnforcement.Effect] = []
  for (i, e) in events.enumerated() {
    _ = engine.handle(e, now: .seconds(Double(i)))
    last = enforcement.sync(engine: engine)
  }
  return last
}

struct EnforcementCase: CustomTestStringConvertible, Sendable {
  let name: String
  let events: [Engine.Event]
  let effects: [ServerEnforcement.Effect]
  var testDescription: String { name }
}

private let desk: [Engine.Event] = [
  .clientConnected(app, appID), .windowAppeared(window(tagged, class: "KeePassXC", tag: .secure)),
  .windowAppeared(window(byRule, class: "Bank")), .windowAppeared(window(plain, class: "XTerm")),
]

private let cases: [EnforcementCase] = [
  .init(name: "a window a rule makes secure gets the policy tag", events: desk, effects: []),
  .init(
    name: "a window the app tagged itself gets none",
    events: [.windowAppeared(window(tagged, class: nil, tag: .secure))],
    effects: []),
  .init(
    name: "a window that stops matching loses the policy tag",
    events: desk + [.windowChanged(window(byRule, class: "XTerm"))], effects: [.untag(byRule)]),
  .init(
    name: "a malformed tag is protected by the policy tag",
    events: [.windowAppeared(window(plain, class: nil, tag: .malformed))], effects: [.tag(plain)]),
  .init(
    name: "an allowed client is granted once identified", events: desk + [.clientConnected(picom, picomID)],
    effects: [.grant(picom)]),
  .init(
    name: "an unidentified client is not granted", events: desk + [.clientConnected(picom, nil)], effects: []),
  .init(
    name: "an allowed client identified later is granted then",
    events: desk + [.clientConnected(picom, nil), .clientIdentified(picom, picomID)], effects: [.grant(picom)]),
  .init(name: "others are not granted", events: desk + [.clientConnected(grabber, grabberID)], effects: []),
  .init(
    name: "a client gone needs no revoke", events: desk + [.clientConnected(picom, picomID), .clientGone(picom)],
    effects: []),
  .init(
    name: "pause turns protection off and removes the policy tags",
    events: desk + [.pause(until: nil, by: "test")], effects: [.protect(false), .untag(byRule)]),
  .init(
    name: "resume turns it back on",
    events: desk + [.pause(until: nil, by: "test"), .resume(by: "test")], effects: [.protect(true), .tag(byRule)]),
  .init(
    name: "while paused nobody new is granted",
    events: desk + [.pause(until: nil, by: "test"), .clientConnected(picom, picomID)], effects: []),
  .init(
    name: "shieldctl shield of a plain window tags it",
    events: desk + [.manualOverride(plain, shielded: true, by: "test")], effects: [.tag(plain)]),
]

@Suite("Server enforcement (ServerEnforcement)")
struct ServerEnforcementCoreTests {
  @Test(arguments: cases)
  func effects(_ c: EnforcementCase) {
    var engine = Engine(policy: serverPolicy())
    var enforcement = ServerEnforcement()
    #expect(run(c.events, engine: &engine, enforcement: &enforcement) == c.effects)
  }

  /// While the daemon classifies (it follows every window), each window is answered once,
  /// when it is mapped with its facts read: the rule's window by its tag, the others by
  /// `classify` (not secure), the app-tagged one included (the module stops holding it;
  /// its own tag keeps it secure).
  @Test func classifiesEachMappedWindowOnce() {
    var engine = Engine(policy: serverPolicy())
    var enforcement = ServerEnforcement()
    enforcement.classifies = true
    var all: [ServerEnforcement.Effect] = []
    for (i, e) in desk.enumerated() {
      _ = engine.handle(e, now: .seconds(Double(i)))
      all += enforcement.sync(engine: engine)
    }
    #expect(all == [.classify(tagged), .tag(byRule), .classify(plain)])
    _ = engine.handle(.windowChanged(window(plain, class: "XTerm2")), now: .seconds(9))
    #expect(enforcement.sync(engine: engine) == [])
    #expect(enforcement.classified == [tagged, byRule, plain])
    _ = engine.handle(.windowGone(plain), now: .seconds(10))
    _ = enforcement.sync(engine: engine)
    #expect(enforcement.classified == [tagged, byRule])
  }

  /// Not mapped, or its facts not read yet: not answered (the module holds it only once
  /// mapped); not classifying: nothing.
  @Test func classifiesOnlyMappedWindowsWithFacts() {
    var engine = Engine(policy: serverPolicy())
    var enforcement = ServerEnforcement()
    enforcement.classifies = true
    var hidden = window(plain, class: "XTerm")
    hidden.mapped = false
    var unread = window(byRule, class: nil)
    unread.propertiesKnown = false
    #expect(
      run([.clientConnected(app, appID), .windowAppeared(hidden)], engine: &engine, enforcement: &enforcement) == [])
    _ = engine.handle(.windowAppeared(unread), now: .seconds(5))
    #expect(!enforcement.sync(engine: engine).contains(.classify(byRule)))
    var off = ServerEnforcement()
    var engine2 = Engine(policy: serverPolicy())
    #expect(
      !run(desk, engine: &engine2, enforcement: &off).contains(where: { if case .classify = $0 { true } else { false } }
      ))
  }

  @Test func theDeskTagsExactlyTheRuleWindow() {
    var engine = Engine(policy: serverPolicy())
    var enforcement = ServerEnforcement()
    var all: [ServerEnforcement.Effect] = []
    for (i, e) in desk.enumerated() {
      _ = engine.handle(e, now: .seconds(Double(i)))
      all += enforcement.sync(engine: engine)
    }
    #expect(all == [.tag(byRule)])
    #expect(enforcement.tagged == [byRule])
  }

  @Test func aPolicyThatNoLongerAllowsRevokes() {
    var engine = Engine(policy: serverPolicy())
    var enforcement = ServerEnforcement()
    _ = run(desk + [.clientConnected(picom, picomID)], engine: &engine, enforcement: &enforcement)
    #expect(enforcement.granted == [picom])
    _ = engine.handle(.policyReplaced(serverPolicy(allowPicom: false)), now: .seconds(10))
    #expect(enforcement.sync(engine: engine) == [.revoke(picom)])
  }

  @Test func censoredReadsAreAuditedOncePerIntervalWithTheRepeats() {
    var enforcement = ServerEnforcement()
    let first = enforcement.censored(
      reader: grabber, drawable: 0x123, request: "GetImage", denied: false, identity: grabberID, now: .seconds(1))
    #expect(first.count == 1)
    guard case .audit(let r) = first.first else { return #expect(Bool(false)) }
    #expect(r.event == "capture-censored")
    #expect(r.fields.contains { $0.0 == "exe" && $0.1 == "/usr/bin/grabber" })
    for t in 2...5 {
      #expect(
        enforcement.censored(
          reader: grabber, drawable: 0x123, request: "GetImage", denied: false, identity: grabberID,
          now: .seconds(Double(t))
        ).isEmpty)
    }
    // Another drawable is audited at once; the same one again after the interval, with
    // the 4 repeats counted.
    #expect(
      enforcement.censored(
        reader: grabber, drawable: 0x999, request: "GetImage", denied: true, identity: grabberID, now: .seconds(5)
      ).count == 1)
    let later = enforcement.censored(
      reader: grabber, drawable: 0x123, request: "GetImage", denied: false, identity: grabberID, now: .seconds(7))
    guard case .audit(let r2) = later.first else { return #expect(Bool(false)) }
    #expect(r2.fields.contains { $0.0 == "repeats" && $0.1 == 4 })
  }

  @Test func aReusedResourceBaseIsAnotherReader() {
    var enforcement = ServerEnforcement()
    let next = ClientIdentity(pid: 13, exe: "/usr/bin/scrot", comm: "scrot", uid: 1000)
    #expect(
      enforcement.censored(
        reader: grabber, drawable: 0x123, request: "GetImage", denied: false, identity: grabberID, now: .seconds(1)
      ).count == 1)
    #expect(
      enforcement.censored(
        reader: grabber, drawable: 0x123, request: "MIT-SHM 4", denied: false, identity: next, now: .seconds(1.1)
      ).count == 1)
  }

  /// Which windows the daemon follows: every one only when a rule looks at windows or the
  /// module cannot report tags.
  @Test(arguments: [
    ("no rules, module 1.2", false, false, true, ServerEnforcement.WindowWatch.tagged),
    ("a secure rule", true, false, true, .all),
    ("clipboard.sources", false, true, true, .all),
    ("no rules, module 1.1", false, false, false, .all),
  ])
  func windowWatch(_ c: (String, Bool, Bool, Bool, ServerEnforcement.WindowWatch)) {
    var p = Policy()
    p.builtinSecure = []  // replaceDefaultSecure: true
    p.passwordFields = false  // password fields need every window (PasswordViewsTests)
    if c.1 { p.secure = [Matcher(class: try! Pattern.parse("Bank"))] }
    if c.2 { p.clipboard.sources = [Matcher(exe: try! Pattern.parse("/usr/bin/keepassxc"))] }
    #expect(ServerEnforcement.windowWatch(policy: p, moduleReportsTags: c.3) == c.4, "\(c.0)")
  }

  /// The built-in secure rules look at windows (class, exe): every window is followed.
  @Test func windowWatchWithTheBuiltInList() {
    #expect(ServerEnforcement.windowWatch(policy: Policy(), moduleReportsTags: true) == .all)
    #expect(ServerEnforcement.windowWatch(policy: PolicyLoader.merge([]), moduleReportsTags: true) == .all)
  }
}

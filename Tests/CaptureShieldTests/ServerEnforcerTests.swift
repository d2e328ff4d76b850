// The server enforcement component (`ServerEnforcer`) without an X server: what each kind of
// the module's CaptureNotify asks of the loop (a window to follow, an audit record, censored
// reads rate-limited), when the reader's identity is looked up, and the published state in
// client-side mode.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

@Suite struct ServerEnforcerTests {
  static let reader: UInt32 = 0x60_0000
  static let secret: UInt32 = 0x40_0001
  static let tool = ClientIdentity(pid: 4242, exe: "/usr/bin/import", comm: "import", uid: 1000)

  static func notice(_ kind: ServerModule.NotifyKind, major: UInt8 = 73, drawable: UInt32 = secret)
    -> ServerModule.Notify
  {
    ServerModule.Notify(
      kind: kind.rawValue, reader: reader, drawable: drawable, requestMajor: major, requestMinor: 2, pid: 4242)
  }

  static func field(_ r: AuditRecord, _ key: String) -> AuditRecord.Value? {
    r.fields.first { $0.key == key }?.value
  }

  @Test func aTagNoticeIsFollowedWithoutAnIdentityLookup() {
    let s = ServerEnforcer(channel: nil, daemonUID: 1000)
    var lookups = 0
    let out = s.notified(
      Self.notice(.secure),
      identity: {
        lookups += 1
        return Self.tool
      }, now: .seconds(1))
    #expect(out == .follow(Self.secret))
    #expect(lookups == 0)
  }

  @Test func refusedInputIsAuditedAndCountedForTheState() throws {
    let s = ServerEnforcer(channel: nil, daemonUID: 1000)
    s.requestNames = [132: "XTEST"]
    let out = s.notified(Self.notice(.input, major: 132), identity: { Self.tool }, now: .seconds(1))
    guard case .audit(let r, let changed) = out else {
      Issue.record("not audited: \(out)")
      return
    }
    #expect(changed)
    #expect(r.event == "input-refused")
    #expect(r.fields.map(\.key) == ["client", "window", "request", "pid", "exe"])
    #expect(Self.field(r, "request") == .string("XTEST"))  // no minor for input
    #expect(s.inputRefusals == 1)
    #expect(s.lastInputRefusal == "pid 4242 /usr/bin/import")
  }

  @Test func trustAndDefenceRefusalsAreAuditedEveryTime() {
    let s = ServerEnforcer(channel: nil, daemonUID: 1000)
    for _ in 0..<2 {
      guard
        case .audit(let r, false) = s.notified(
          Self.notice(.trust, drawable: 1), identity: { Self.tool }, now: .seconds(1))
      else {
        Issue.record("trust not audited")
        return
      }
      #expect(r.event == "trust-refused")
      #expect(Self.field(r, "reason") == .string("injected code"))
      guard case .audit(let d, false) = s.notified(Self.notice(.killRefused), identity: { Self.tool }, now: .seconds(1))
      else {
        Issue.record("defence not audited")
        return
      }
      #expect(d.event == "defence-refused")
      #expect(Self.field(d, "tried") == .string("kill a trusted client's connection"))
    }
    #expect(s.inputRefusals == 0)
  }

  /// shieldctl's other commands (status, list, history) are untrusted clients by design:
  /// the module's kind 7 for them (reason 6) is no refusal to audit; every other reason is.
  @Test func shieldctlCommandsAreNotTrustRefused() {
    let s = ServerEnforcer(channel: nil, daemonUID: 1000)
    let own = ClientIdentity(pid: 4243, exe: "/usr/bin/shieldctl", comm: "shieldctl", uid: 1000)
    #expect(s.notified(Self.notice(.trust, drawable: 6), identity: { own }, now: .seconds(1)) == .nothing)
    for reason: UInt32 in [1, 4, 7] {
      guard
        case .audit(let r, _) = s.notified(Self.notice(.trust, drawable: reason), identity: { own }, now: .seconds(1))
      else {
        Issue.record("reason \(reason) not audited")
        continue
      }
      #expect(r.event == "trust-refused")
    }
  }

  /// Every extension the server has names its requests (no bare "request 146.1"): the
  /// core requests the module reports have names too.
  @Test func coreRequestsTheModuleReportsAreNamed() {
    let s = ServerEnforcer(channel: nil, daemonUID: 1000)
    s.requestNames = ServerEnforcer.coreRequestNames
    for major: UInt8 in [25, 26, 28, 31, 33, 44, 62, 63, 73] {
      #expect(!s.requestName(major: major, minor: 0, withMinor: true).hasPrefix("request "), "\(major)")
    }
  }

  @Test func censoredReadsAreRateLimitedAndNamedWithTheirMinor() {
    let s = ServerEnforcer(channel: nil, daemonUID: 1000)
    s.requestNames = [73: "GetImage", 130: "MIT-SHM"]
    guard
      case .censored(let reader, let id, _, let fx) = s.notified(
        Self.notice(.censored, major: 130), identity: { Self.tool }, now: .seconds(1))
    else {
      Issue.record("not censored")
      return
    }
    #expect(reader == ClientID(Self.reader))
    #expect(id == Self.tool)
    guard case .audit(let r)? = fx.first else {
      Issue.record("no audit: \(fx)")
      return
    }
    #expect(r.event == "capture-censored")
    #expect(Self.field(r, "request") == .string("MIT-SHM 2"))
    #expect(Self.field(r, "action") == .string("censored"))
    // The same read again at once: held back (the loop still tells the notices).
    guard
      case .censored(_, _, _, let again) = s.notified(
        Self.notice(.censored, major: 130), identity: { Self.tool }, now: .seconds(1.5))
    else {
      Issue.record("not censored")
      return
    }
    #expect(again.isEmpty)
  }

  @Test func clientSideModeFollowsEveryWindowAndPublishesItsMode() {
    let s = ServerEnforcer(channel: nil, daemonUID: 1000)
    #expect(s.wantedWindowWatch(policy: Policy()) == .all)
    var snap = Engine(policy: Policy()).snapshot(pid: 1, display: ":9", startedAt: 0)
    s.describe(&snap, engine: Engine(policy: Policy()))
    #expect(snap.enforcement?.kind == "client")
    #expect(snap.enforcement?.inputProtected == false)
  }

  // MARK: On the fake module channel

  /// What the module was sent and asked, and how it answers `trust(of:)`.
  final class FakeModuleChannel: ModuleChannel {
    let module = ServerModuleTests.module
    var grants: [(ClientID, Bool)] = []
    var protection: [Bool] = []
    var trustAnswer: ServerModule.Trust? = .granted
    var trustAsked: [UInt32] = []

    func grant(_ client: ClientID, granted: Bool) { grants.append((client, granted)) }
    func setProtection(_ on: Bool) { protection.append(on) }
    func trust(of xid: UInt32) -> ServerModule.Trust? {
      trustAsked.append(xid)
      return trustAnswer
    }
  }

  static let picom = ClientIdentity(pid: 77, exe: "/usr/bin/picom", comm: "picom", uid: 1000)

  @Test func aModuleNoticeInTheAuditAndTheStatusOut() throws {
    let module = FakeModuleChannel()
    let s = ServerEnforcer(channel: module, daemonUID: 1000)
    s.requestNames = [132: "XTEST", 73: "GetImage"]
    let engine = Engine(policy: Policy())
    // Refused input: audited, counted, and in the published state with the module's facts.
    guard
      case .audit(let r, true) = s.notified(Self.notice(.input, major: 132), identity: { Self.tool }, now: .seconds(1))
    else {
      Issue.record("input refusal not audited")
      return
    }
    #expect(r.event == "input-refused")
    var snap = engine.snapshot(pid: 1, display: ":9", startedAt: 0)
    s.describe(&snap, engine: engine)
    let e = try #require(snap.enforcement)
    #expect(e.kind == "server" && e.moduleVersion == "1.2" && e.moduleMode == "censor")
    #expect(e.inputProtected == true && e.inputRefusals == 1 && e.lastInputRefusal == "pid 4242 /usr/bin/import")
    // A censored read: its rate-limited audit record comes out of `carryOut`; nothing is
    // sent to the module for it.
    guard
      case .censored(let reader, _, _, let effects) = s.notified(
        Self.notice(.censored), identity: { Self.tool }, now: .seconds(1))
    else {
      Issue.record("not censored")
      return
    }
    #expect(reader == ClientID(Self.reader))
    let carried = effects.compactMap { s.carryOut($0, engine: engine) }
    #expect(carried.flatMap(\.audits).map(\.event) == ["capture-censored"])
    #expect(carried.allSatisfy { !$0.stateChanged && $0.expose.isEmpty })
    #expect(module.grants.isEmpty && module.protection.isEmpty)
    // Policy tags are the loop's (`XEffects`), not the module channel's.
    #expect(s.carryOut(.tag(Self.secret), engine: engine) == nil)
  }

  @Test func grantsAndProtectionGoToTheModuleAndARefusedGrantIsAudited() throws {
    let module = FakeModuleChannel()
    let s = ServerEnforcer(channel: module, daemonUID: 1000)
    var engine = Engine(policy: Policy())
    let c = ClientID(0x80_0000)
    _ = engine.handle(.clientConnected(c, Self.picom), now: .seconds(1))
    let granted = try #require(s.carryOut(.grant(c), engine: engine))
    #expect(granted.audits.map(\.event) == ["grant"] && granted.stateChanged)
    #expect(Self.field(granted.audits[0], "exe") == .string("/usr/bin/picom"))
    #expect(module.grants.map(\.0) == [c] && module.grants.map(\.1) == [true] && module.trustAsked == [c.base])
    // The module re-checks the grantee and refuses it: audited, remembered as refused.
    module.trustAnswer = ServerModule.Trust.none
    let refused = try #require(s.carryOut(.grant(c), engine: engine))
    #expect(refused.audits.map(\.event) == ["grant-refused"] && refused.stateChanged)
    #expect(s.enforcement.grantRefused.contains(c) && !s.enforcement.granted.contains(c))
    let revoked = try #require(s.carryOut(.revoke(c), engine: engine))
    #expect(revoked.audits.map(\.event) == ["revoke"])
    #expect(module.grants.map(\.1) == [true, true, false])
    let paused = try #require(s.carryOut(.protect(false), engine: engine))
    #expect(module.protection == [false])
    #expect(paused.audits.first.flatMap { Self.field($0, "enabled") } == .bool(false))
    // Client-side mode: no module, nothing carried out.
    #expect(ServerEnforcer(channel: nil, daemonUID: 1000).carryOut(.protect(true), engine: engine) == nil)
  }
}

// The compositor's grant under server enforcement (`CompositorGrant.decide`): who runs it
// and who started it, and the enforcement's grants and `compositor-refused` audits.

import Glibc
import Testing

@testable import CaptureShield

private let user = 1000
private let picomPID = 500
private let picomID = ClientIdentity(
  pid: picomPID, exe: "/usr/bin/picom", comm: "picom", uid: user, exeRootOwned: true)

typealias Ancestor = CompositorOrigin.Ancestor

private func a(_ pid: Int, _ exe: String, uid: Int = user, _ standing: CompositorOrigin.Standing = .notAClient)
  -> Ancestor
{
  Ancestor(pid: pid, exe: exe, uid: uid, exeRootOwned: exe.hasPrefix("/usr/"), standing: standing)
}

private let systemdUser = a(300, "/usr/lib/systemd/systemd")
private let lightdm = a(200, "/usr/sbin/lightdm", uid: 0)

struct GrantCase: CustomTestStringConvertible, Sendable {
  let name: String
  var identity: ClientIdentity? = picomID
  let ancestors: [Ancestor]?
  var complete = true
  /// nil: granted; else a part of the refusal's reason.
  let refusal: String?
  var testDescription: String { name }
}

private let grantCases: [GrantCase] = [
  .init(
    name: "XFCE: xfwm4 started by xfce4-session (an untrusted client, a session manager) under lightdm",
    ancestors: [a(400, "/usr/bin/xfce4-session", .untrusted), lightdm], refusal: nil),
  .init(
    name: "MATE: started by mate-session", ancestors: [a(400, "/usr/bin/mate-session", .untrusted), lightdm],
    refusal: nil),
  .init(
    name: "GNOME on Xorg: started by systemd --user (not a client)", ancestors: [systemdUser], refusal: nil),
  .init(
    name: "KDE: started by ksmserver under startplasma-x11",
    ancestors: [a(401, "/usr/bin/ksmserver", .untrusted), a(400, "/usr/bin/startplasma-x11", .untrusted), lightdm],
    refusal: nil),
  .init(
    name: "i3 + picom: i3 (the window manager) execs it through sh",
    ancestors: [a(402, "/usr/bin/dash"), a(401, "/usr/bin/i3", .windowManager), lightdm], refusal: nil),
  .init(
    name: "startx: xfwm4 under xfce4-session under xinit (both untrusted clients)",
    ancestors: [
      a(402, "/usr/bin/xfce4-session", .untrusted), a(401, "/usr/bin/dash"), a(400, "/usr/bin/xinit", .untrusted),
    ], refusal: nil),
  .init(
    name: "a trusted client (the admin's Trust list) started it",
    ancestors: [a(401, "/usr/local/bin/session-tool", .trusted)], refusal: nil),
  .init(name: "re-parented to init (no ancestor left)", ancestors: [], refusal: nil),
  .init(
    name: "started from a terminal: xterm is an untrusted client",
    ancestors: [a(402, "/usr/bin/bash"), a(401, "/usr/bin/xterm", .untrusted), systemdUser],
    refusal: "started by PID 401 (/usr/bin/xterm), an untrusted client of this display"),
  .init(
    name: "started by an untrusted client's child process (the client above the shell)",
    ancestors: [a(402, "/tmp/evil", .untrusted)], refusal: "an untrusted client"),
  .init(
    name: "a session manager's name in /tmp is not a session manager",
    ancestors: [a(402, "/tmp/xfce4-session", .untrusted)], refusal: "an untrusted client"),
  .init(
    name: "an untrusted client running as root started it",
    ancestors: [a(402, "/usr/bin/xdotool", uid: 0, .untrusted)], refusal: "an untrusted client"),
  .init(
    name: "a process of another user started it",
    ancestors: [a(402, "/usr/bin/bash", uid: 1001), systemdUser], refusal: "of uid 1001, another user"),
  .init(
    name: "a parent whose user cannot be read",
    ancestors: [Ancestor(pid: 402, exe: nil, uid: nil, standing: .notAClient)], refusal: "cannot be read"),
  .init(
    name: "the chain could not be read to its end", ancestors: [systemdUser], complete: false,
    refusal: "could not all be read"),
  .init(
    name: "another user's compositor",
    identity: ClientIdentity(pid: picomPID, exe: "/usr/bin/picom", uid: 1001, exeRootOwned: true),
    ancestors: [systemdUser], refusal: "runs as uid 1001, not as the daemon's user"),
  .init(
    name: "a compositor whose user is unknown", identity: ClientIdentity(pid: picomPID, exe: "/usr/bin/picom"),
    ancestors: [systemdUser], refusal: "its user is not known"),
  .init(name: "no origin yet", ancestors: nil, refusal: "not known yet"),
  .init(name: "no identity", identity: nil, ancestors: [], refusal: "not known"),
]

@Suite("Compositor grant (CompositorGrant)")
struct CompositorGrantTests {
  @Test(arguments: grantCases)
  func decide(_ c: GrantCase) {
    let origin = c.ancestors.map { CompositorOrigin(pid: picomPID, ancestors: $0, complete: c.complete) }
    let d = CompositorGrant.decide(identity: c.identity, origin: origin, daemonUID: user)
    if let refusal = c.refusal {
      guard case .refuse(let why) = d else {
        Issue.record("granted, expected a refusal with \(refusal)")
        return
      }
      #expect(why.contains(refusal), "\(why)")
    } else {
      #expect(d == .grant)
    }
  }

  @Test func anOriginOfAnotherProcessDoesNotCount() {
    let origin = CompositorOrigin(pid: picomPID + 1, ancestors: [], complete: true)
    #expect(!CompositorGrant.decide(identity: picomID, origin: origin, daemonUID: user).isGranted)
  }

  /// The engine with picom owning the compositor selection.
  static func engineWithPicom() -> (Engine, ClientID) {
    var engine = Engine(policy: Policy())
    let picom = ClientID(0x60_0000)
    _ = engine.handle(.clientConnected(picom, picomID), now: .seconds(0))
    _ = engine.handle(.compositorChanged(picom), now: .seconds(1))
    return (engine, picom)
  }

  @Test func theCompositorIsGrantedOnceItsOriginIsKnownAndAccepted() {
    let (engine, picom) = Self.engineWithPicom()
    var enforcement = ServerEnforcement(daemonUID: user)
    #expect(enforcement.originsNeeded(engine: engine) == [picomPID])
    enforcement.learned(CompositorOrigin(pid: picomPID, ancestors: [systemdUser], complete: true))
    #expect(enforcement.originsNeeded(engine: engine).isEmpty)
    #expect(enforcement.sync(engine: engine) == [.grant(picom)])
    #expect(enforcement.refusedCompositors.isEmpty)
  }

  @Test func aRefusedCompositorIsAuditedOnceAndNotGranted() throws {
    let (engine, picom) = Self.engineWithPicom()
    var enforcement = ServerEnforcement(daemonUID: user)
    enforcement.learned(
      CompositorOrigin(pid: picomPID, ancestors: [a(401, "/usr/bin/xterm", .untrusted)], complete: true))
    let fx = enforcement.sync(engine: engine)
    #expect(fx.count == 1)
    guard case .audit(let r) = try #require(fx.first) else {
      Issue.record("expected an audit record, got \(fx)")
      return
    }
    #expect(r.event == "compositor-refused")
    #expect(r["pid"] == .int(picomPID))
    #expect(r["exe"] == .string("/usr/bin/picom"))
    guard case .string(let reason)? = r["reason"] else {
      Issue.record("no reason in \(r)")
      return
    }
    #expect(reason.contains("xterm"))
    #expect(enforcement.granted.isEmpty)
    #expect(enforcement.refusedCompositors[picom]?.contains("xterm") == true)
    #expect(enforcement.sync(engine: engine).isEmpty, "audited again")
  }

  @Test func anAllowedCompositorNeedsNoOrigin() {
    var p = Policy()
    p.captureAllow = [Matcher(exe: try! Pattern.parse("/usr/bin/picom"), name: "picom")]
    var engine = Engine(policy: p)
    let picom = ClientID(0x60_0000)
    _ = engine.handle(.clientConnected(picom, picomID), now: .seconds(0))
    _ = engine.handle(.compositorChanged(picom), now: .seconds(1))
    var enforcement = ServerEnforcement(daemonUID: user)
    #expect(enforcement.originsNeeded(engine: engine).isEmpty)
    #expect(enforcement.sync(engine: engine) == [.grant(picom)])
  }

  @Test func aGrantTheModuleRefusedIsNotRetried() {
    let (engine, picom) = Self.engineWithPicom()
    var enforcement = ServerEnforcement(daemonUID: user)
    enforcement.learned(CompositorOrigin(pid: picomPID, ancestors: [], complete: true))
    #expect(enforcement.sync(engine: engine) == [.grant(picom)])
    enforcement.moduleRefusedGrant(picom)
    #expect(enforcement.granted.isEmpty)
    #expect(enforcement.sync(engine: engine).isEmpty)
    #expect(enforcement.grantRefused == [picom])
  }

  @Test(
    "the parent's PID from /proc/PID/stat, after a command name with spaces and parentheses",
    arguments: [
      ("500 (picom) S 401 500 500 0 -1", 401), ("7 (a) b (c)) R 1 7 7", 1), ("9 (x) S", nil), ("garbage", nil),
    ] as [(String, Int?)])
  func parentPID(_ stat: String, _ parent: Int?) {
    #expect(ProcessInfoReader.parentPID(stat: Array(stat.utf8)) == parent)
  }

  @Test func theOriginOfThisProcessReachesPID1() {
    let origin = ProcessInfoReader.origin(pid: Int(getpid())) { _ in .notAClient }
    #expect(origin.complete)
    #expect(origin.ancestors.first?.pid == Int(getppid()))
    #expect(origin.ancestors.allSatisfy { $0.uid != nil })
  }
}

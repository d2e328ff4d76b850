import Testing

@testable import CaptureShield

// Compositors trusted by default, safely: a standard compositing manager
// is trusted as the owner of _NET_WM_CM_Sn when it runs a root-owned program from a system
// directory; a copy in /tmp named like one is not.

struct TrustCase: Sendable, CustomTestStringConvertible {
  var name: String
  var identity: ClientIdentity?
  var trusted: Bool
  var testDescription: String { name }
}

private func id(_ exe: String, rootOwned: Bool? = true, injection: String? = nil) -> ClientIdentity {
  ClientIdentity(
    pid: 9, exe: exe, comm: String(exe.split(separator: "/").last ?? ""), uid: 1000, injection: injection,
    exeRootOwned: rootOwned)
}

private let trustCases: [TrustCase] = [
  TrustCase(name: "picom in /usr/bin", identity: id("/usr/bin/picom"), trusted: true),
  TrustCase(name: "xfwm4 in /usr/bin", identity: id("/usr/bin/xfwm4"), trusted: true),
  TrustCase(name: "kwin_x11", identity: id("/usr/bin/kwin_x11"), trusted: true),
  TrustCase(name: "gnome-shell", identity: id("/usr/bin/gnome-shell"), trusted: true),
  TrustCase(name: "a copy in /tmp named picom", identity: id("/tmp/picom"), trusted: false),
  TrustCase(name: "in a home directory", identity: id("/home/u/bin/xfwm4"), trusted: false),
  TrustCase(name: "not root-owned", identity: id("/usr/bin/picom", rootOwned: false), trusted: false),
  TrustCase(name: "ownership unknown", identity: id("/usr/bin/picom", rootOwned: nil), trusted: false),
  TrustCase(name: "preloaded", identity: id("/usr/bin/picom", injection: "LD_PRELOAD=/x.so"), trusted: false),
  TrustCase(name: "not a compositor", identity: id("/usr/bin/xterm"), trusted: false),
  TrustCase(name: "unidentified", identity: nil, trusted: false),
  TrustCase(name: "a prefix trick: /usr/binx", identity: id("/usr/binx/picom"), trusted: false),
]

@Test(arguments: trustCases)
func compositorTrust(_ c: TrustCase) {
  #expect(Policy().compositorTrust(c.identity).isTrusted == c.trusted)
}

@Test func replacingTheDefaultListTrustsOnlyWhatItNames() throws {
  let file = try PolicyParser.parse(
    #"{ version: 1, capture: { replaceDefaultCompositors: true, compositors: [{ exe: "/usr/bin/xcompmgr" }] } }"#,
    path: "t.json5")
  let p = PolicyLoader.merge([file])
  #expect(!p.compositorTrust(id("/usr/bin/picom")).isTrusted)
  #expect(p.compositorTrust(id("/usr/bin/xcompmgr")).isTrusted)
}

private let comp = ClientID(0xc0_0000)
private let tool = ClientID(0xa0_0000)
private let app = ClientID(0x40_0000)
private let w: WindowID = 0x100

/// The engine with a secure window and `compositor` as the compositor.
private func engine(_ identity: ClientIdentity, ownsSelection: Bool = true) -> (Engine, [Engine.Effect]) {
  var e = Engine(policy: Policy())
  var fx = e.handle(.windowAppeared(WindowInfo(id: w, client: app, tag: .secure)), now: .seconds(0))
  fx += e.handle(.clientConnected(comp, identity), now: .seconds(1))
  fx += e.handle(.compositorChanged(comp, ownsSelection: ownsSelection), now: .seconds(1))
  fx += e.handle(.captureRequest(comp, CaptureRequest(kind: "Composite NameWindowPixmap", target: w)), now: .seconds(1))
  return (e, fx)
}

@Test func aTrustedCompositorStartsNoSession() {
  let (e, fx) = engine(id("/usr/bin/picom"))
  #expect(e.isTrustedCompositor(comp))
  #expect(e.sessions.isEmpty)
  #expect(!fx.contains(.shield(w)))
  // Another client's capture is still one.
  var e2 = e
  let more = e2.handle(.captureRequest(tool, CaptureRequest(kind: "GetImage", target: 1)), now: .seconds(2))
  #expect(more.contains(.shield(w)))
}

@Test(arguments: [("/tmp/picom", true), ("/usr/bin/picom", false)])
func anUntrustedCompositorCountsAsCapturing(_ exe: String, _ ownsSelection: Bool) {
  // A copy outside the system directories, or a client that redirects without owning the
  // selection: a compositor session, shields up.
  let (e, fx) = engine(id(exe), ownsSelection: ownsSelection)
  #expect(!e.isTrustedCompositor(comp))
  #expect(fx.contains(.shield(w)))
  #expect(e.sessions.values.contains { $0.kind == .compositor })
}

@Test func trustEndsWhenTheSelectionGoes() {
  var (e, _) = engine(id("/usr/bin/picom"))
  _ = e.handle(.compositorChanged(nil), now: .seconds(2))
  #expect(!e.isTrustedCompositor(comp))
  let fx = e.handle(.captureRequest(comp, CaptureRequest(kind: "GetImage", target: 1)), now: .seconds(3))
  #expect(fx.contains(.shield(w)))
}

/// mutter talks to X over two connections of one process: the one that owns the selection,
/// and one that reads pixmaps (GLX, MIT-SHM), sometimes before the selection is taken.
@Test func anotherConnectionOfTheTrustedCompositorsProcessIsTrustedToo() {
  let sibling = ClientID(0xe0_0000)
  let stranger = ClientID(0x100_0000)
  var e = Engine(policy: Policy())
  _ = e.handle(.windowAppeared(WindowInfo(id: w, client: app, tag: .secure)), now: .seconds(0))
  _ = e.handle(.clientConnected(sibling, id("/usr/bin/mutter")), now: .seconds(1))
  var other = id("/usr/bin/mutter")
  other.pid = 10  // the same program, another process
  _ = e.handle(.clientConnected(stranger, other), now: .seconds(1))
  // The second connection reads first: a session, shields up.
  let early = e.handle(.captureRequest(sibling, CaptureRequest(kind: "GLX CreatePixmap", target: w)), now: .seconds(1))
  #expect(early.contains(.shield(w)))
  // The first connection takes the selection: trusted, and its sibling's session ends.
  _ = e.handle(.clientConnected(comp, id("/usr/bin/mutter")), now: .seconds(2))
  let taken = e.handle(.compositorChanged(comp, ownsSelection: true), now: .seconds(2))
  #expect(e.isTrustedCompositor(comp) && e.isTrustedCompositor(sibling))
  #expect(taken.contains(.unshield(w)), "\(taken)")
  #expect(e.sessions.isEmpty)
  // Its later reads start nothing; another process of the same program is not trusted.
  #expect(
    !e.handle(.captureRequest(sibling, CaptureRequest(kind: "MIT-SHM ShmGetImage", target: 1)), now: .seconds(3))
      .contains(.shield(w)))
  #expect(!e.isTrustedCompositor(stranger))
  #expect(
    e.handle(.captureRequest(stranger, CaptureRequest(kind: "GetImage", target: 1)), now: .seconds(3)).contains(
      .shield(w)))
  // The selection gone, neither is trusted.
  _ = e.handle(.compositorChanged(nil), now: .seconds(4))
  #expect(!e.isTrustedCompositor(sibling))
}

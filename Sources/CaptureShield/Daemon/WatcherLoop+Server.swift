// Server enforcement: with the CaptureShield Xorg module loaded, the daemon maps no shields;
// it tags what the policy makes secure, grants what `capture.allow` names, and audits what
// the module censored (see `ServerEnforcement`).

internal import CXCB
import Foundation

extension WatcherLoop {
  /// The CaptureShield Xorg module when it enforces (nil: client-side shields).
  var module: ServerModule? { server.module }

  /// The policy as the engine runs it. Under server enforcement the module protects secure
  /// windows all the time (so `shield.when` is `always` for the engine), and a new client's
  /// quarantine has nothing to race (the module decides inside each request).
  static func effectivePolicy(_ p: Policy, serverEnforced: Bool) -> Policy {
    guard serverEnforced else { return p }
    var e = p
    e.when = .always
    e.quarantine = nil
    return e
  }

  /// Names of the requests the module reports (the core ones it reports, and every
  /// extension of this server by its major opcode: the module reports reads and refused
  /// input through any of them, XInputExtension, XTEST, XKEYBOARD, Present, ...).
  func readRequestNames() -> [UInt8: String] {
    var names = ServerEnforcer.coreRequestNames
    for ext in x.listExtensions() {
      let major = x.majorOpcode(ext)
      if major != 0 { names[major] = ext }
    }
    return names
  }

  /// The policy the engine runs: server enforcement's (see `effectivePolicy`), and without
  /// capture detection `shield.when: capturing` becomes `always` (fail safe).
  func enginePolicy(_ p: Policy) -> Policy {
    var e = Self.effectivePolicy(p, serverEnforced: module != nil)
    if detector == nil, e.when == .capturing { e.when = .always }
    return e
  }

  /// After every engine event, under server enforcement: tell the module what changed.
  func syncServerEnforcement() {
    guard let module else { return }
    let needed = server.enforcement.originsNeeded(engine: engine)
    if !needed.isEmpty {
      let standing = clientStandings()
      for pid in needed {
        server.enforcement.learned(ProcessInfoReader.origin(pid: pid) { standing[$0] ?? .notAClient })
      }
    }
    let refused = server.enforcement.refusedCompositors
    for e in server.enforcement.sync(engine: engine) { performServer(e, module: module) }
    if server.enforcement.refusedCompositors != refused { loop.stateDirty = true }
  }

  /// How this display sees each local client's process (by PID), for the compositor's
  /// origin (`CompositorGrant`): trusted by the module (or granted), the window manager (the
  /// owner of `WM_Sn`), or an ordinary untrusted client. Round trips: one X-Resource
  /// query, one GetSelectionOwner, one GetClientTrust per client; only when a compositor
  /// process is new.
  func clientStandings() -> [Int: CompositorOrigin.Standing] {
    let wmOwner = x.selectionOwner(x.atom("WM_S" + String(x.screenNumber)))
    let wm = wmOwner == 0 ? nil : x.clientBase(of: wmOwner)
    var out: [Int: CompositorOrigin.Standing] = [:]
    for (base, pid) in x.clientPIDs() {
      let trusted =
        server.enforcement.granted.contains(ClientID(base))
        || (server.channel?.trust(of: base).map { $0 != .none } ?? false)
      let s: CompositorOrigin.Standing = trusted ? .trusted : (base == wm ? .windowManager : .untrusted)
      // A process with several connections counts by its least trusted one's standing.
      switch (out[pid], s) {
      case (nil, _), (.trusted?, _), (.windowManager?, .untrusted): out[pid] = s
      default: break
      }
    }
    return out
  }

  /// Carries out a server-enforcement effect: policy tags through `XEffects`, the module's
  /// part through `ServerEnforcer.carryOut` (its audit records written, its state published,
  /// the windows it names redrawn).
  func performServer(_ e: ServerEnforcement.Effect, module: ServerModule) {
    switch e {
    case .tag(let w): effects.policyTag(w, atom: atoms.policyTag)
    case .untag(let w): effects.policyUntag(w, atom: atoms.policyTag)
    case .classify(let w): effects.policyClassify(w, atom: atoms.policyTag)
    default:
      guard let done = server.carryOut(e, engine: engine) else { return }
      for r in done.audits { log.write(r) }
      if done.stateChanged { loop.stateDirty = true }
      for w in done.expose { effects.exposeWindow(w) }
    }
  }

  /// Starts or stops following every window: at start, before the first scan, and after
  /// each policy reload. Following only tagged windows, the X server delivers no event per
  /// new window to the daemon (the module reports each tag, kind 6).
  func updateWindowWatch(initial: Bool = false) {
    let want = server.wantedWindowWatch(policy: engine.policy)
    guard initial || want != server.windowWatch else { return }
    server.windowWatch = want
    loop.stateDirty = true
    switch want {
    case .all:
      effects.watchRoot()
      if !initial { scanExistingWindows() }  // run() scans at start
    case .tagged:
      if !initial {  // at start, run() drops the untagged windows after its scan
        effects.unwatchRoot()
        tracker.dropPending()
        dropUntaggedWindows()
      }
    }
    guard module != nil else { return }  // client-side mode always follows every window
    // the module holds untrusted clients' new windows until the daemon answers, while it
    // follows every window (and so answers each)
    server.enforcement.classifies = want == .all
    effects.announceClassification(want == .all, atom: x.atom(ProtocolAtom.classify))
    log.info(
      want == .all
        ? "following every window (the policy has rules about windows, or the module does not report tags)"
        : "following tagged windows only (the policy has no rules about windows; the module reports each tag)")
  }

  /// Following only tagged windows: the others are let go; the rest are followed by their
  /// own structure events (the root's are not selected).
  func dropUntaggedWindows() {
    for w in tracker.tracked.keys.sorted() {
      if engine.windows[w]?.reason.isSecure == true || tracker.tracked[w]?.tag != .absent {
        effects.watchWindow(w, nested: true)
      } else {
        effects.unwatchWindow(w)
        windowGone(w)
      }
    }
  }

  /// Following only tagged windows, one that a command names is followed from then on.
  func follow(_ w: WindowID) {
    guard server.windowWatch == .tagged, tracker.tracked[w] == nil, !isOwn(w) else { return }
    track([w], initial: false, nested: [w])
  }

  /// A CaptureNotify from the module (see `ServerEnforcer.notified`).
  func moduleNotified(_ n: ServerModule.Notify) {
    guard let module else { return }
    let reader = ClientID(n.reader)
    // The PID in the event first: the reader was alive when the server sent it, and /proc is
    // read at once (a short-lived tool can be gone before an X-Resource round trip, which
    // also waits behind a tool's GrabServer).
    let identity = { () -> ClientIdentity in
      if let known = self.engine.clients[reader]?.identity ?? self.capture.identities[n.reader], known.exe != nil {
        return known
      }
      if n.pid != 0 { return ProcessInfoReader.identity(pid: Int(n.pid)) }
      return self.identify(base: n.reader)
    }
    switch server.notified(n, identity: identity, now: Clock.now()) {
    case .follow(let w): follow(w)
    case .audit(let r, let stateChanged):
      log.write(r)
      if stateChanged { loop.stateDirty = true }
    case .censored(let reader, let identity, let request, let effects):
      for e in effects { performServer(e, module: module) }
      // The reader captures: its sessions count it (a recording recorder is not idle),
      // and `capture.learn` learns its program.
      apply(.captureCensored(reader, CaptureRequest(kind: request, target: n.drawable), identity))
      noticeCensored(reader: reader, identity: identity)
    case .nothing: break
    }
  }
}

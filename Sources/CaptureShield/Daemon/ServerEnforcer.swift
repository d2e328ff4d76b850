// Server enforcement's state in the loop: with the CaptureShield Xorg module loaded, the
// daemon maps no shields; it tags what the policy makes secure, grants what `capture.allow`
// names, follows the windows the module reports, and audits what the module refused. The
// decisions are `ServerEnforcement`'s (core); the requests go out through `XEffects`
// (`WatcherLoop+Server`).

/// What server enforcement sends the module and asks it (real: `XModuleChannel`, the module
/// on the main connection, its writes through `XEffects`; tests: `FakeModuleChannel`).
protocol ModuleChannel: AnyObject {
  /// The module as probed (version, mode, what it reports).
  var module: ServerModule { get }
  /// Grants or revokes a client (any XID of it).
  func grant(_ client: ClientID, granted: Bool)
  /// Protection of secure windows on or off (pause).
  func setProtection(_ on: Bool)
  /// How the module trusts a client (any XID of it); nil: no answer (a round trip).
  func trust(of xid: UInt32) -> ServerModule.Trust?
}

/// The module on the daemon's main connection.
final class XModuleChannel: ModuleChannel {
  let module: ServerModule
  let x: XConnection
  let effects: XEffects

  init(module: ServerModule, x: XConnection, effects: XEffects) {
    self.module = module
    self.x = x
    self.effects = effects
  }

  func grant(_ client: ClientID, granted: Bool) { effects.grant(client, granted: granted, module: module) }
  func setProtection(_ on: Bool) { effects.setProtection(on, module: module) }
  func trust(of xid: UInt32) -> ServerModule.Trust? { module.trust(of: xid, on: x) }
}

/// The server enforcement component: the module (nil in client-side mode), what it has been
/// told (`ServerEnforcement`), which windows the daemon follows, and the module's notices
/// turned into audit records and engine-free outcomes. Runs on the loop's thread.
final class ServerEnforcer {
  /// What a CaptureNotify from the module asks of the loop.
  enum Outcome: Equatable {
    /// A window's tag was written (or it stopped being secure): follow it.
    case follow(WindowID)
    /// Audited (a refused trust, secure input, or one of the daemon's own defences);
    /// `stateChanged`: the published state changed (input refusals are counted there).
    case audit(AuditRecord, stateChanged: Bool)
    /// A read the module censored or denied: carry out `effects` (rate-limited audit
    /// records), then tell the capture notices about `reader`.
    /// `request`: its name, for the engine (`Engine.Event.captureCensored`).
    case censored(reader: ClientID, identity: ClientIdentity, request: String, effects: [ServerEnforcement.Effect])
    /// Nothing to do (shieldctl's own commands, not run as `watch`).
    case nothing
  }

  /// The channel to the CaptureShield Xorg module, when it is loaded and trusts this
  /// daemon: then the module enforces, and the daemon maps no shields.
  let channel: ModuleChannel?
  var module: ServerModule? { channel?.module }
  /// What the module has been told (policy tags, grants, protection).
  var enforcement: ServerEnforcement
  /// Which windows the daemon follows (`WatcherLoop.updateWindowWatch`); client-side mode: all.
  var windowWatch = ServerEnforcement.WindowWatch.all
  /// Names of the requests the module reports, by major opcode (`WatcherLoop.readRequestNames`).
  var requestNames: [UInt8: String] = [:]
  /// `input-refused` records audited since the start, and the last one's client.
  private(set) var inputRefusals = 0
  private(set) var lastInputRefusal: String?

  init(channel: ModuleChannel?, daemonUID: Int) {
    self.channel = channel
    enforcement = ServerEnforcement(daemonUID: daemonUID)
  }

  /// The windows the policy and the module call for (client-side mode: every window).
  func wantedWindowWatch(policy: Policy) -> ServerEnforcement.WindowWatch {
    guard let module else { return .all }
    return ServerEnforcement.windowWatch(policy: policy, moduleReportsTags: module.reportsSecureWindows)
  }

  /// The core requests the module reports (reads, and refused input: grabs, SendEvent).
  static let coreRequestNames: [UInt8: String] = [
    25: "SendEvent", 26: "GrabPointer", 28: "GrabButton", 31: "GrabKeyboard", 33: "GrabKey", 44: "QueryKeymap",
    62: "CopyArea", 63: "CopyPlane", 73: "GetImage",
  ]

  /// The name an audit record gives a request the module reports.
  func requestName(major: UInt8, minor: UInt16, withMinor: Bool) -> String {
    requestNames[major].map { $0 + (withMinor && major >= 128 ? " \(minor)" : "") } ?? "request \(major).\(minor)"
  }

  /// A CaptureNotify from the module. `identity` is asked only when the notice is about a
  /// reader (not for a tag notice, which costs no lookup).
  func notified(_ n: ServerModule.Notify, identity: () -> ClientIdentity, now: MonotonicTime) -> Outcome {
    if n.kind == ServerModule.NotifyKind.secure.rawValue {
      // Following every window, its PropertyNotify tells the same.
      return .follow(n.drawable)
    }
    let reader = ClientID(n.reader)
    let identity = identity()
    let who: [(String, AuditRecord.Value)] = [
      ("pid", identity.pid.map { .int($0) } ?? "-"), ("exe", .string(identity.exe ?? "-")),
    ]
    if n.kind == ServerModule.NotifyKind.trust.rawValue, n.drawable == ServerModule.NotifyKind.notRunAsWatch {
      // shieldctl's other commands (status, list, history): the user's own, untrusted
      // clients by design; nothing was refused that they asked for.
      return .nothing
    }
    if n.kind == ServerModule.NotifyKind.trust.rawValue {
      // The module refused (or ended) a client's trust: a Trust or Daemon program that failed
      // its kernel identity checks, or a grantee. Audited every time (once per connection).
      let r = AuditRecord(
        "trust-refused",
        [
          ("client", .string(reader.description)),
          ("reason", .string(ServerModule.NotifyKind.trustReason(n.drawable))),
        ] + who)
      return .audit(r, stateChanged: false)
    }
    if n.kind == ServerModule.NotifyKind.input.rawValue {
      // Secure input (the module sends one per client per focus period): a listener, a
      // grab, or XTEST / SendEvent into the focused secure window, refused.
      let r = AuditRecord(
        "input-refused",
        [
          ("client", .string(reader.description)),
          ("window", .string("0x" + String(n.drawable, radix: 16))),
          ("request", .string(requestName(major: n.requestMajor, minor: n.requestMinor, withMinor: false))),
        ] + who)
      inputRefusals += 1
      lastInputRefusal = "pid \(identity.pid.map(String.init) ?? "?") \(identity.exe ?? "(unknown executable)")"
      return .audit(r, stateChanged: true)
    }
    if let kind = ServerModule.NotifyKind(rawValue: n.kind), let defence = kind.defence {
      // One of the daemon's own defences held: the module refused it. Audited every time
      // (nobody does this by accident).
      let r = AuditRecord(
        "defence-refused",
        [
          ("client", .string(reader.description)), ("tried", .string(defence)),
          ("target", .string("0x" + String(n.drawable, radix: 16))),
        ] + who)
      return .audit(r, stateChanged: false)
    }
    let request = requestName(major: n.requestMajor, minor: n.requestMinor, withMinor: true)
    let effects = enforcement.censored(
      reader: reader, drawable: n.drawable, request: request,
      denied: n.kind == ServerModule.NotifyKind.denied.rawValue, identity: identity, now: now)
    return .censored(reader: reader, identity: identity, request: request, effects: effects)
  }

  /// What carrying out a server-enforcement effect on the module asks of the loop.
  struct Carried: Equatable {
    /// To write to the audit log, in order.
    var audits: [AuditRecord] = []
    /// The published state changed.
    var stateChanged = false
    /// Secure windows to redraw: the trusted compositor, granted now, may have painted them
    /// black before.
    var expose: [WindowID] = []
  }

  /// Carries out `e` on the module (grants, revocations, protection) and says what the loop
  /// is to write and redraw; nil for the effects that are not the module's (policy tags:
  /// the loop's `XEffects`) and in client-side mode.
  func carryOut(_ e: ServerEnforcement.Effect, engine: Engine) -> Carried? {
    guard let channel else { return nil }
    func who(_ c: ClientID) -> [(String, AuditRecord.Value)] {
      guard let id = engine.clients[c]?.identity else { return [] }
      return [("pid", id.pid.map { .int($0) } ?? "-"), ("exe", .string(id.exe ?? "-"))]
    }
    var out = Carried()
    switch e {
    case .tag, .untag, .classify: return nil
    case .grant(let c):
      channel.grant(c, granted: true)
      out.stateChanged = true
      // The module re-checks the grantee's kernel identity and may refuse (BadAccess): ask.
      if channel.trust(of: c.base) == ServerModule.Trust.none {
        enforcement.moduleRefusedGrant(c)
        out.audits.append(
          AuditRecord(
            "grant-refused",
            [("client", .string(c.description))] + who(c) + [
              ("reason", "the module refused it (its identity checks: injected code, a handed-over connection, ...)")
            ]))
        return out
      }
      out.audits.append(AuditRecord("grant", [("client", .string(c.description))] + who(c)))
      if engine.isTrustedCompositor(c) {
        out.expose = engine.windows.sorted(by: { $0.key < $1.key }).filter { $0.value.reason.isSecure }.map(\.key)
      }
    case .revoke(let c):
      channel.grant(c, granted: false)
      out.audits.append(AuditRecord("revoke", [("client", .string(c.description))] + who(c)))
      out.stateChanged = true
    case .protect(let on):
      channel.setProtection(on)
      out.audits.append(
        AuditRecord(
          "server-protection",
          [("enabled", .bool(on)), ("why", .string(on ? "resumed" : "paused: tagged windows readable by anyone"))]))
      out.stateChanged = true
    case .audit(let r): out.audits.append(r)
    }
    return out
  }

  /// The published state's server-enforcement part (`_CAPTURE_SHIELD_STATE`): in client-side
  /// mode only the mode; under the module, what it was told, and the windows as protected
  /// (no shield windows: what the engine "shields", the module protects while not paused).
  func describe(_ snap: inout DaemonState, engine: Engine) {
    guard let module else {
      var e = DaemonState.Enforcement(kind: "client")
      e.inputProtected = false
      snap.enforcement = e
      return
    }
    var e = DaemonState.Enforcement(kind: "server")
    e.moduleVersion = module.versionString
    e.moduleMode = module.mode.rawValue
    e.granted = enforcement.granted.sorted { $0.base < $1.base }
    e.policyTagged = enforcement.tagged.count
    e.protecting = enforcement.protecting
    e.follows = windowWatch
    e.inputProtected = module.protectsInput
    if module.protectsInput {
      e.inputRefusals = inputRefusals
      e.lastInputRefusal = lastInputRefusal
    }
    if let c = engine.compositor, let why = enforcement.refusedCompositors[c] {
      e.compositorRefused = why
      snap.compositorTrust = "not granted by the daemon: \(why)"
    }
    snap.enforcement = e
    for i in snap.clients.indices where enforcement.granted.contains(snap.clients[i].client) {
      snap.clients[i].granted = true
    }
    snap.shieldsActive = false
    for i in snap.windows.indices {
      let w = snap.windows[i]
      let tagged = engine.windows[w.id]?.info.tag == .secure
      snap.windows[i].protected = enforcement.protecting && (w.shielded || tagged)
      snap.windows[i].shielded = false
    }
  }
}

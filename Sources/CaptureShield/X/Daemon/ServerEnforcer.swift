// Server enforcement's state in the loop: with the CaptureShield Xorg module loaded, the
// daemon maps no shields; it tags what the policy makes secure, grants what `capture.allow`
// names, follows the windows the module reports, and audits what the module refused. The
// decisions are `ServerEnforcement`'s (core); the requests go out through `XEffects`
// (`WatcherLoop+Server`).

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
    case censored(reader: ClientID, identity: ClientIdentity, effects: [ServerEnforcement.Effect])
  }

  /// The CaptureShield Xorg module, when it is loaded and trusts this daemon: then the
  /// module enforces, and the daemon maps no shields.
  let module: ServerModule?
  /// What the module has been told (policy tags, grants, protection).
  var enforcement: ServerEnforcement
  /// Which windows the daemon follows (`WatcherLoop.updateWindowWatch`); client-side mode: all.
  var windowWatch = ServerEnforcement.WindowWatch.all
  /// Names of the requests the module reports, by major opcode (`WatcherLoop.readRequestNames`).
  var requestNames: [UInt8: String] = [:]
  /// `input-refused` records audited since the start, and the last one's client.
  private(set) var inputRefusals = 0
  private(set) var lastInputRefusal: String?

  init(module: ServerModule?, daemonUID: Int) {
    self.module = module
    enforcement = ServerEnforcement(daemonUID: daemonUID)
  }

  /// The windows the policy and the module call for (client-side mode: every window).
  func wantedWindowWatch(policy: Policy) -> ServerEnforcement.WindowWatch {
    guard let module else { return .all }
    return ServerEnforcement.windowWatch(policy: policy, moduleReportsTags: module.reportsSecureWindows)
  }

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
    let effects = enforcement.censored(
      reader: reader, drawable: n.drawable,
      request: requestName(major: n.requestMajor, minor: n.requestMinor, withMinor: true),
      denied: n.kind == ServerModule.NotifyKind.denied.rawValue, identity: identity, now: now)
    return .censored(reader: reader, identity: identity, effects: effects)
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

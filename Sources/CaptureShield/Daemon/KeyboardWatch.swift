// Client-side mode of secure input (docs/security.md, "Input"): without the Xorg module the
// daemon cannot keep a client from reading the keyboard, so it notices the clients that
// listen (`KeyloggerRecorder`, RECORD), audits each once per kind (`keylogger-suspected`,
// `KeyloggerWatch`) and tells the user when a secure window has the focus while one is
// connected. `keyloggers.allow` names the programs that listen by design (input methods,
// hotkey daemons).

/// The keyboard watch's RECORD context (real: `KeyloggerRecorder`).
protocol KeylogSource: AnyObject {
  /// Its connections' resource bases (the capture detector does not record them).
  var ownBases: [UInt32] { get }
  var fileDescriptor: Int32 { get }
  /// The context ended (a connection killed, or the server ended it).
  var hasError: Bool { get }
  func drain() -> [KeyloggerRecorder.Item]
  /// The focus window or its nearest ancestor for which `isSecure` is true; nil when none.
  func secureFocus(isSecure: (UInt32) -> Bool) -> UInt32?
}

extension KeyloggerRecorder: KeylogSource {}

/// What the keyboard watch asks of X on the main connection (real: `XConnection`): who owns
/// the window manager's selection (`WM_S<screen>`), and whose an XID is.
protocol KeyboardWatchConnection: AnyObject {
  var screenNumber: Int32 { get }
  func atom(_ name: String) -> UInt32
  func selectionOwner(_ selection: UInt32) -> UInt32
  func clientBase(of xid: UInt32) -> UInt32
}

extension XConnection: KeyboardWatchConnection {}

/// The keyboard watch: its RECORD source and `KeyloggerWatch` (core), on and off with the
/// policy. Runs on the loop's thread. Findings and notices are audited here; the rest comes
/// back to the loop as `Effect`s.
final class KeyboardWatch {
  /// What the watch reads of the loop's state at each call.
  struct View {
    var policy: KeyloggerPolicy
    /// The daemon's own clients (their records are skipped; asked only when needed).
    var own: () -> Set<ClientID>
    /// A client's identity (the engine's, else looked up now).
    var identity: (ClientID) -> ClientIdentity
    /// A client's identity as audit fields (`Engine.identityFields`).
    var identityFields: (ClientIdentity) -> [(String, AuditRecord.Value)]
  }

  /// What the loop does for the watch.
  enum Effect {
    /// The source's connections opened (the capture detector excludes them).
    case opened([UInt32])
    /// The source's connections closed (the capture detector stops excluding them).
    case closed([UInt32])
    /// The focus may have moved, or a finding came: the loop reads its pending window
    /// events (a secure window mapped, tagged) and calls `focusChanged`.
    case focusMayHaveMoved
    /// The source ended (after the other effects of this drain): the loop drops it
    /// (`dropSource`) and audits the kill; the next `sync` starts a new one.
    case ended
  }

  let connection: KeyboardWatchConnection
  let audit: (AuditRecord) -> Void
  /// Makes the source (`KeyloggerRecorder` over its own connections; `unrecorded`: bases
  /// not to record).
  let makeSource: (_ unrecorded: [UInt32]) throws -> KeylogSource
  private(set) var source: KeylogSource?
  /// Starting failed: not tried again until the policy is reloaded (`reloaded`).
  private(set) var failed = false
  private(set) var watch = KeyloggerWatch()
  /// `keyloggers.allow` as the watch's decisions were made.
  private var allow: [Matcher] = []

  init(
    connection: KeyboardWatchConnection, makeSource: @escaping ([UInt32]) throws -> KeylogSource,
    audit: @escaping (AuditRecord) -> Void
  ) {
    self.connection = connection
    self.makeSource = makeSource
    self.audit = audit
  }

  /// The policy was reloaded: a watch that failed to start may start again.
  func reloaded() { failed = false }

  /// Starts or stops the watch (`wanted`: `keyloggers.enabled` and no Xorg module; `whyNot`:
  /// which of the two is missing), and re-decides the clients when `keyloggers.allow` changed.
  func sync(wanted: Bool, whyNot: String, _ view: View, log: (String) -> Void) -> [Effect] {
    var out: [Effect] = []
    if wanted && source == nil && !failed {
      do {
        let r = try makeSource(view.own().map(\.base).sorted())
        out.append(.opened(r.ownBases))
        source = r
        allow = view.policy.allow
        audit(
          AuditRecord(
            "keylogger-watch",
            [
              ("enabled", .bool(true)),
              ("clients", .string(r.ownBases.map { ClientID($0).description }.joined(separator: ", "))),
            ]))
      } catch {
        failed = true
        log("cannot watch for keyboard listeners (\(error)): keyloggers are not detected")
      }
    } else if !wanted, let r = source {
      out.append(.closed(r.ownBases))
      source = nil
      watch = KeyloggerWatch()
      audit(AuditRecord("keylogger-watch", [("enabled", .bool(false)), ("why", .string(whyNot))]))
    }
    if source != nil, allow != view.policy.allow {
      allow = view.policy.allow
      for c in watch.decided.keys { watch.decide(c, allowed: allowed(c, view)) }
    }
    return out
  }

  /// Reads the source's records: audits each new finding; says when the focus may have
  /// moved and when the source ended.
  func drain(_ view: View) -> [Effect] {
    guard let r = source else { return [] }
    let items = r.drain()
    var out: [Effect] = []
    if !items.isEmpty {
      let own = view.own().union(r.ownBases.map(ClientID.init))
      var focusMayHaveMoved = false
      for item in items {
        switch item {
        case .clientDied(let c):
          watch.clientGone(c)
          focusMayHaveMoved = true
        case .record(let c, _, _) where own.contains(c):
          continue
        case .record(_, .focusSet, _):
          focusMayHaveMoved = true
        case .record(let c, .keymapQuery, let ms):
          decideIfNeeded(c, view)
          if let f = watch.keymapQueried(c, atMs: ms) {
            auditFinding(f, view)
            focusMayHaveMoved = true
          }
        case .record(let c, .listens(let signal), _):
          decideIfNeeded(c, view)
          if let f = watch.observe(c, signal) {
            auditFinding(f, view)
            focusMayHaveMoved = true
          }
        }
      }
      if focusMayHaveMoved { out.append(.focusMayHaveMoved) }
    }
    if r.hasError { out.append(.ended) }
    return out
  }

  /// Drops a source that ended, and what it saw; its connections' bases (nil: none).
  func dropSource() -> [UInt32]? {
    guard let r = source else { return nil }
    source = nil
    watch = KeyloggerWatch()
    return r.ownBases
  }

  /// Asks where the focus is (`isSecure`: whether a window is secure, as the engine says);
  /// the notice about the suspects not told in this focus period while a secure window has
  /// it, audited; nil when none is due.
  func focusChanged(_ view: View, isSecure: (UInt32) -> Bool) -> CaptureNotifier.Notice? {
    guard let r = source else { return nil }
    watch.focusChanged(secureWindow: r.secureFocus(isSecure: isSecure))
    let due = watch.noticeDue()
    guard !due.isEmpty else { return nil }
    let notice = watch.notice(due: due) { c in
      let id = view.identity(c)
      return (CaptureNotifier.programName(id, client: c), id.pid)
    }
    audit(notice.audit)
    return CaptureNotifier.Notice(keylogger: notice)
  }

  private func decideIfNeeded(_ c: ClientID, _ view: View) {
    guard watch.needsDecision(c) else { return }
    watch.decide(c, allowed: allowed(c, view))
  }

  /// Allowed by `keyloggers.allow`, or the window manager (the owner of `WM_S<screen>`,
  /// ICCCM): it grabs the keyboard for its menus and window switching, and could do
  /// anything a keylogger does anyway.
  private func allowed(_ c: ClientID, _ view: View) -> Bool {
    if view.policy.allowRule(view.identity(c)) != nil { return true }
    let wm = connection.selectionOwner(connection.atom("WM_S\(connection.screenNumber)"))
    return wm != 0 && connection.clientBase(of: wm) == c.base
  }

  private func auditFinding(_ f: KeyloggerWatch.Finding, _ view: View) {
    audit(f.audit(identity: view.identityFields(view.identity(f.client))))
  }
}

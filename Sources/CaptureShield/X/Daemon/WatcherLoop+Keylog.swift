// Client-side mode of secure input (issue 27, points 6 and 7): without the Xorg module the
// daemon cannot keep a client from reading the keyboard, so it notices the clients that
// listen (`KeyloggerRecorder`, RECORD), audits each once per kind (`keylogger-suspected`,
// `KeyloggerWatch`) and tells the user when a secure window has the focus while one is
// connected (the capture notices' path: `DesktopNotifier`). `keyloggers.allow` names the
// programs that listen by design (input methods, hotkey daemons).

import Foundation

extension WatcherLoop {
  /// Starts or stops the keyboard watch with the policy (`keyloggers.enabled`; never under
  /// the Xorg module), and re-decides the clients when `keyloggers.allow` changed.
  func syncKeylogWatch() {
    let wanted = module == nil && engine.policy.keyloggers.enabled
    if wanted && keylog == nil && !keylogFailed {
      do {
        let own = daemonClients.union(detector?.excludedClients ?? [])
        let r = try KeyloggerRecorder(display: display, unrecorded: own.map(\.base).sorted())
        for b in r.ownBases { detector?.excludeNewConnection(b) }
        keylog = r
        keylogAllow = engine.policy.keyloggers.allow
        log.write(
          AuditRecord(
            "keylogger-watch",
            [
              ("enabled", .bool(true)),
              ("clients", .string(r.ownBases.map { ClientID($0).description }.joined(separator: ", "))),
            ]))
      } catch {
        keylogFailed = true
        log.error("cannot watch for keyboard listeners (\(error)): keyloggers are not detected")
      }
    } else if !wanted, let r = keylog {
      for b in r.ownBases { detector?.ownConnectionClosed(b) }
      keylog = nil
      keylogWatch = KeyloggerWatch()
      log.write(
        AuditRecord(
          "keylogger-watch",
          [
            ("enabled", .bool(false)),
            ("why", .string(module != nil ? "the Xorg module" : "keyloggers.enabled is false")),
          ]
        ))
    }
    if keylog != nil, keylogAllow != engine.policy.keyloggers.allow {
      keylogAllow = engine.policy.keyloggers.allow
      for c in keylogWatch.decided.keys { keylogWatch.decide(c, allowed: keylogAllowed(c)) }
    }
  }

  /// Reads the keyboard watch's records: audits each new finding, follows the focus, and
  /// tells the user when it is due.
  func drainKeylog() {
    syncKeylogWatch()
    guard let r = keylog else { return }
    let items = r.drain()
    guard !items.isEmpty else {
      if r.hasError { keylogEnded(r) }
      return
    }
    let own = daemonClients.union(detector?.excludedClients ?? []).union(r.ownBases.map(ClientID.init))
    var focusMayHaveMoved = false
    for item in items {
      switch item {
      case .clientDied(let c):
        keylogWatch.clientGone(c)
        focusMayHaveMoved = true
      case .record(let c, _, _) where own.contains(c):
        continue
      case .record(_, .focusSet, _):
        focusMayHaveMoved = true
      case .record(let c, .keymapQuery, let ms):
        decideIfNeeded(c)
        if let f = keylogWatch.keymapQueried(c, atMs: ms) {
          auditFinding(f)
          focusMayHaveMoved = true
        }
      case .record(let c, .listens(let signal), _):
        decideIfNeeded(c)
        if let f = keylogWatch.observe(c, signal) {
          auditFinding(f)
          focusMayHaveMoved = true
        }
      }
    }
    if focusMayHaveMoved { keylogFocusChanged() }
    if r.hasError { keylogEnded(r) }
  }

  /// Asks where the focus is and tells the user about the suspects not told in this focus
  /// period while a secure window has it.
  func keylogFocusChanged() {
    guard let r = keylog else { return }
    knowSecureWindows()
    let focus = r.secureFocus { w in self.engine.windows[w]?.reason.isSecure ?? false }
    keylogWatch.focusChanged(secureWindow: focus)
    let due = keylogWatch.noticeDue()
    guard !due.isEmpty else { return }
    let notice = keylogWatch.notice(due: due) { c in
      let id = self.keylogIdentity(c)
      return (CaptureNotifier.programName(id, client: c), id.pid)
    }
    log.write(notice.audit)
    guard engine.policy.notify else { return }
    notices.send(CaptureNotifier.Notice(keylogger: notice))
  }

  /// The window events that came before (a secure window mapped, tagged) are known.
  private func knowSecureWindows() {
    drainEvents()
    trackPending()
  }

  private func decideIfNeeded(_ c: ClientID) {
    guard keylogWatch.needsDecision(c) else { return }
    keylogWatch.decide(c, allowed: keylogAllowed(c))
  }

  /// Allowed by `keyloggers.allow`, or the window manager (the owner of `WM_S<screen>`,
  /// ICCCM): it grabs the keyboard for its menus and window switching, and could do
  /// anything a keylogger does anyway.
  private func keylogAllowed(_ c: ClientID) -> Bool {
    if engine.policy.keyloggers.allowRule(keylogIdentity(c)) != nil { return true }
    let wm = x.selectionOwner(x.atom("WM_S\(x.screenNumber)"))
    return wm != 0 && x.clientBase(of: wm) == c.base
  }

  /// The client's identity: the engine's, else looked up now (X-Resource, /proc).
  private func keylogIdentity(_ c: ClientID) -> ClientIdentity {
    engine.clients[c]?.identity ?? identities[c.base] ?? identify(base: c.base)
  }

  private func auditFinding(_ f: KeyloggerWatch.Finding) {
    log.write(f.audit(identity: engine.identityFields(keylogIdentity(f.client))))
  }

  /// The RECORD context ended (another client killed one of its connections, or the
  /// server ended it): replaced once; audited.
  private func keylogEnded(_ old: KeyloggerRecorder) {
    for b in old.ownBases { detector?.ownConnectionClosed(b) }
    keylog = nil
    keylogWatch = KeyloggerWatch()
    auditKilled(
      "keyboard watch", base: old.ownBases[0], lost: "which clients listen to the keyboard, while it was down",
      action: "reconnecting")
  }
}

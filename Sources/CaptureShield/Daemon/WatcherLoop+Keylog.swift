// The keyboard watch's routing (`KeyboardWatch` owns its state; `KeyloggerWatch` decides):
// the loop starts and stops it with the policy, tells the capture detector about its
// connections, reads the window events that came before a focus check, and sends its notice.

import Foundation

extension WatcherLoop {
  /// What the keyboard watch reads of the loop's state.
  var keyboardView: KeyboardWatch.View {
    KeyboardWatch.View(
      policy: engine.policy.keyloggers, own: { self.daemonClients.union(self.detector?.excludedClients ?? []) },
      identity: { c in
        self.engine.clients[c]?.identity ?? self.capture.identities[c.base] ?? self.identify(base: c.base)
      },
      identityFields: { self.engine.identityFields($0) })
  }

  /// Starts or stops the keyboard watch with the policy (`keyloggers.enabled`; never under
  /// the Xorg module), and re-decides the clients when `keyloggers.allow` changed.
  func syncKeylogWatch() {
    let effects = keyboard.sync(
      wanted: module == nil && engine.policy.keyloggers.enabled,
      whyNot: module != nil ? "the Xorg module" : "keyloggers.enabled is false", keyboardView,
      log: { self.log.error($0) })
    route(effects)
  }

  /// Reads the keyboard watch's records: audits each new finding, follows the focus, and
  /// tells the user when it is due.
  func drainKeylog() {
    syncKeylogWatch()
    route(keyboard.drain(keyboardView))
  }

  private func route(_ effects: [KeyboardWatch.Effect]) {
    for e in effects {
      switch e {
      case .opened(let bases): for b in bases { detector?.excludeNewConnection(b) }
      case .closed(let bases): for b in bases { detector?.ownConnectionClosed(b) }
      case .focusMayHaveMoved: keylogFocusChanged()
      case .ended:
        // Another client killed one of its connections, or the server ended it: replaced
        // by the next `syncKeylogWatch`; audited.
        guard let bases = keyboard.dropSource() else { continue }
        for b in bases { detector?.ownConnectionClosed(b) }
        auditKilled(
          "keyboard watch", base: bases[0], lost: "which clients listen to the keyboard, while it was down",
          action: "reconnecting")
      }
    }
  }

  /// Where the focus is, once the window events that came before (a secure window mapped,
  /// tagged) are known; the notice, when one is due.
  func keylogFocusChanged() {
    guard keyboard.source != nil else { return }
    drainEvents()
    trackPending()
    guard
      let notice = keyboard.focusChanged(keyboardView, isSecure: { self.engine.windows[$0]?.reason.isSecure ?? false })
    else { return }
    guard engine.policy.notify else { return }
    notices.send(notice)
  }
}

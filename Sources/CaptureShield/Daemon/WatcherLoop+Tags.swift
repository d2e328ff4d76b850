// The tag guard's routing (`SecureTagGuard` owns its state; `TagRemovals` decides): the loop
// feeds it the tag removals it sees and carries out what it asks (a lift told to the
// engine; its RECORD source replaced when another client killed it).

import Foundation

extension WatcherLoop {
  /// The daemon's own clients (their removals are `shieldctl untag` commands).
  var daemonClients: Set<ClientID> { [ClientID(x.ownBase), ClientID(shieldX.ownBase)] }

  /// What the tag guard reads of the loop's state.
  var tagGuardView: SecureTagGuard.View {
    SecureTagGuard.View(
      daemon: daemonClients, window: { self.tracker.tracked[$0] }, knownIdentity: { self.engine.clients[$0]?.identity })
  }

  /// Reads recorded tag deletions (see `SecureTagGuard.drain`).
  func drainTagWatch() {
    route(tagGuard.drain(tagGuardView, now: Clock.now()))
  }

  /// A tracked window's secure (or malformed) tag was removed or zeroed: whether the daemon
  /// keeps the window protected (true: the change is held or undone, the engine is not
  /// told) or lets the change stand (false).
  func guardTagRemoval(_ w: WindowID, to tag: TagState) -> Bool {
    let (keep, effects) = tagGuard.removed(w, to: tag, tagGuardView, now: Clock.now())
    route(effects)
    return keep
  }

  /// Held removals with no recorded DeleteProperty by their deadline: tags put back.
  func resolveExpiredUntags() {
    tagGuard.expire(tagGuardView, now: Clock.now())
  }

  private func route(_ effects: [SecureTagGuard.Effect]) {
    for e in effects {
      switch e {
      case .lift(let w, let tag):
        guard var info = tracker.tracked[w] else { continue }
        info.tag = tag
        tracker.tracked[w] = info
        apply(.windowChanged(info))
      case .watchEnded(let old):
        replaceTagWatch(old)
      }
    }
  }

  /// The tag watch's RECORD context ended: another client KillClient'ed one of its
  /// connections (or the server ended the context). A new one takes over at once (the old
  /// one's connections are closed and stop being excluded as ours), and the kill is audited
  /// like the shield connection's. A removal read in between is lifted, as without RECORD.
  func replaceTagWatch(_ old: TagDeletionSource) {
    let bases = old.ownBases
    for b in bases { detector?.ownConnectionClosed(b) }
    tagGuard.watch = nil
    let lost = "who removes secure tags, while it was down"
    do {
      let watch = try TagWatch(display: setup.display, property: atoms.secure, errors: XErrorPolicy(log: log))
      for b in watch.ownBases { detector?.excludeNewConnection(b) }
      tagGuard.watch = watch
      auditKilled(
        "tag watch", base: bases[0], lost: lost,
        action: "reconnected as clients " + watch.ownBases.map { ClientID($0).description }.joined(separator: ", "))
    } catch {
      auditKilled("tag watch", base: bases[0], lost: lost, action: "not replaced (\(error))")
      log.error("the RECORD context that tells who removes secure tags ended; any client's removal now lifts a tag")
    }
  }
}

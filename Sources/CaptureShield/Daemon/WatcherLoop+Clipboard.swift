// The hooks between the daemon's loop and the copied-text guard (the guard itself is in Clipboard/).

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  func startClipboardGuard(_ p: ClipboardPolicy) {
    do {
      clipboard = try ClipboardGuard(display: x.displayName, policy: p, log: log) { [unowned self] base, _ in
        self.describeSelectionOwner(base)
      }
      // Its connections are the daemon's own: the guard's and its RECORD data connection,
      // opened after RECORD's context (their ClientStarted is still to come: OwnConnections).
      for b in clipboard!.ownBases { detector?.excludeNewConnection(b) }
    } catch {
      log.error("copied-text guard unavailable (\(error)); screen shielding continues")
    }
  }

  /// Whether the client owns a secure window (tag, property or policy), its identity, and
  /// the facts `clipboard.sources` is matched against.
  func describeSelectionOwner(_ base: UInt32) -> ClipboardGuard.OwnerInfo {
    let c = ClientID(base)
    let own = engine.windows.values.filter { $0.info.client == c }
    let identity =
      engine.clients[c]?.identity ?? capture.identities[base] ?? ProcessInfoReader.identity(pid: x.clientPID(of: base))
    let facts = [identity.facts] + own.map { engine.effectiveFacts($0.info) }
    return (own.contains { $0.reason.isSecure }, identity, facts)
  }

  func drainClipboard() {
    guard let g = clipboard else { return }
    if loop.fds.has(.clipboard) { loop.fds[.clipboard].fd = g.fileDescriptor }
    g.drain()
    if let d = g.nextDeadline, Clock.now() >= d { g.tick() }
    // A RECORD connection of the guard's that another client killed is not ours any more
    // (its base goes to the next client); the one that replaced it is.
    let retired = g.takeRetiredBases()
    if let d = detector {
      if !retired.isEmpty { d.excludedClients.subtract(retired.map(ClientID.init)) }
      let own = Set(g.ownBases.map(ClientID.init))
      if !own.isSubset(of: d.excludedClients) { d.excludedClients.formUnion(own) }
    }
    if g.statusChanged {
      g.statusChanged = false
      loop.stateDirty = true
    }
    if g.hasError {
      log.error("the copied-text guard lost its X connection; it is off until the next reload")
      detector?.excludedClients.subtract(g.ownBases.map(ClientID.init))  // their bases go to new clients
      clipboard = nil
      if loop.fds.has(.clipboard) { loop.fds[.clipboard].fd = -1 }
      loop.stateDirty = true
    }
  }

  func reloadClipboardGuard(_ p: ClipboardPolicy) {
    if let clipboard {
      clipboard.policyReplaced(p)
    } else if p.enabled {
      startClipboardGuard(p)
      if loop.fds.has(.clipboard) { loop.fds[.clipboard].fd = clipboard?.fileDescriptor ?? -1 }
    }
    loop.stateDirty = true
  }
}

// The daemon's own connections killed by another client (KillClient), and their
// replacement (`SelfExclusionTests`).
//
// Any client may KillClient any resource's owner. The X server then hands the killed
// connection's resource base to the next client that connects. Whatever still treats that
// base as ours would trust a stranger: the RECORD exclusion (its capture requests would be
// dropped unseen) and the own-window checks. The RECORD exclusion ends in stream order, on
// the killed connection's ClientDied (which RECORD reports before the next client's
// ClientStarted; see `OwnConnections`); the loop notices the death here, at the latest after
// the poll that follows it, audits it and replaces what was lost.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  // MARK: Own connections

  /// After each poll: whether one of our connections is gone (libxcb's error, the socket
  /// hung up, or RECORD reporting its ClientDied). The shield connection and the copied-text
  /// guard's are replaced; for the main connection the daemon exits with `xServerGone` (the
  /// service manager restarts it: `Restart=on-failure`, `RestartForceExitStatus=69`).
  /// Returns the exit code when the loop must end.
  func checkOwnConnections() -> Int32? {
    let died = Set(detector?.takeOwnConnectionsDied().map(\.base) ?? [])
    // A closed socket is readable (EOF): only a descriptor the last poll saw readable or
    // hung up is asked again (no system call otherwise).
    func hungUp(_ slot: PollSlot, _ fd: Int32) -> Bool {
      loop.fds.has(slot) && loop.fds[slot].revents != 0 && Self.hungUp(fd)
    }
    if x.hasError || hungUp(.x, x.fileDescriptor) || died.contains(x.ownBase) {
      // Killed, or the server went away: then the RECORD connections are gone too.
      if died.contains(x.ownBase) || detector?.hasError == false {
        auditKilled(
          "main", base: x.ownBase, lost: "the manager selection, the state and the event stream",
          action: "exiting so the service manager restarts the daemon")
      }
      log.error("lost the connection to the X server (\(x.displayName)); exiting so the service manager restarts us")
      return WatchExit.xServerGone
    }
    if shieldX.hasError || hungUp(.shieldX, shieldX.fileDescriptor) || died.contains(shieldX.ownBase) {
      guard replaceShieldConnection() else {
        log.error(
          "cannot reconnect the shield connection to \(x.displayName); exiting so the service manager restarts us")
        return WatchExit.xServerGone
      }
    }
    if let g = clipboard {
      clipboardHook.base = g.ownBase
      if g.hasError || hungUp(.clipboard, g.fileDescriptor) || died.contains(g.ownBase) {
        replaceClipboardGuard(g.ownBase)
      }
    } else if let base = clipboardHook.base {
      // The guard's own drain met the dead connection first (and turned it off).
      replaceClipboardGuard(base)
    }
    return nil
  }

  /// Whether the server closed the connection on `fd` (POLLHUP, POLLRDHUP or POLLERR),
  /// without reading from it: libxcb notices only when it next reads.
  static func hungUp(_ fd: Int32) -> Bool {
    guard fd >= 0 else { return false }
    let rdhup: Int16 = 0x2000  // POLLRDHUP (Linux; Glibc exports it only under _GNU_SOURCE)
    var p = pollfd(fd: fd, events: rdhup, revents: 0)
    guard poll(&p, 1, 0) > 0 else { return false }
    return p.revents & (Int16(POLLHUP) | Int16(POLLERR) | rdhup) != 0
  }

  /// Whether `w` was created by one of our connections that is alive: a window of a dead
  /// connection's base may be a stranger's that got the base.
  func isOwnAlive(base b: UInt32) -> Bool {
    if b == x.ownBase { return true }
    return b == shieldX.ownBase && !shieldX.hasError && !Self.hungUp(shieldX.fileDescriptor)
  }

  /// Another client killed our shield connection: its shields are gone (open mode) or
  /// orphaned (closed mode: retained until a second KillClient). Reconnect, adopt what
  /// survived, and put every shield back. False when no new connection could be made.
  func replaceShieldConnection() -> Bool {
    let oldBase = shieldX.ownBase
    let held = driver.shields.count
    detector?.ownConnectionClosed(oldBase)
    detector?.pump?.disarm()  // it must not touch the old connection once that is gone
    guard let conn = try? XConnection(display: x.displayName) else { return false }
    let p = engine.policy
    conn.errors = XErrorPolicy(log: log)
    shieldX = conn
    driver = ShieldDriver(
      connection: conn, failMode: p.failMode, input: p.input, label: p.label, registryFile: driver.registryFile)
    driver.errors = XErrorPolicy(log: log)
    if loop.fds.has(.shieldX) { loop.fds[.shieldX].fd = conn.fileDescriptor }
    detector?.excludeNewConnection(conn.ownBase)
    let survivors = adoptShields()
    auditKilled(
      "shield", base: oldBase,
      lost: p.failMode == .closed
        ? "\(held) shield windows (retained: \(survivors.count) adopted by the new connection)"
        : "\(held) shield windows (destroyed with the connection)",
      action: "reconnected as client \(ClientID(conn.ownBase)); shields re-created")
    for t in engine.shielded.sorted() where !survivors.contains(t) {
      apply(.shieldLost(t, how: "shield connection killed by another client"))
    }
    for t in survivors where !engine.shielded.contains(t) { driver.destroy(t) }
    if p.quarantine != nil {
      for (id, w) in engine.windows where w.reason.isSecure && w.reason != .provisional { driver.prepare(id) }
    }
    loop.stateDirty = true
    return true
  }

  /// Another client killed the copied-text guard's connection: its window and the
  /// selections it held are gone. A new guard takes over from here (the guarded text the
  /// old one held is dropped, it lived only for that connection's selections).
  func replaceClipboardGuard(_ oldBase: UInt32) {
    // The guard's connection and its RECORD data connection go together.
    for b in Set([oldBase] + (clipboard?.ownBases ?? [])) { detector?.ownConnectionClosed(b) }
    clipboard = nil
    if loop.fds.has(.clipboard) { loop.fds[.clipboard].fd = -1 }
    startClipboardGuard(engine.policy.clipboard)  // copied-text guard hook
    clipboardHook.base = clipboard?.ownBase  // nil: no second try
    if let g = clipboard {  // its connections are excluded by startClipboardGuard
      if loop.fds.has(.clipboard) { loop.fds[.clipboard].fd = g.fileDescriptor }
    }
    auditKilled(
      "clipboard", base: oldBase, lost: "the copied-text guard's window and the selections it guarded",
      action: clipboard.map { "reconnected as client \(ClientID($0.ownBase))" } ?? "the copied-text guard is off")
    loop.stateDirty = true
  }

  /// Adopts the shields an earlier daemon or our killed shield connection left (only what
  /// the registry file lists and still covers, see `ShieldDriver.adoptExisting`), and
  /// audits each refusal (`shield-adoption-refused`). Returns the adopted targets.
  func adoptShields() -> [WindowID] {
    let adopted = driver.adoptExisting()
    for r in driver.refusedAdoptions {
      log.write(
        AuditRecord(
          "shield-adoption-refused",
          [
            ("window", .string("0x" + String(r.shield, radix: 16))),
            ("target", .string("0x" + String(r.target, radix: 16))), ("why", .string(r.why)),
          ]))
    }
    return adopted
  }

  /// One `connection-killed` record: which connection, its resource base (which the server
  /// hands to the next client), what was lost, and what the daemon did.
  func auditKilled(_ connection: String, base: UInt32, lost: String, action: String) {
    log.write(
      AuditRecord(
        "connection-killed",
        [
          ("connection", .string(connection)), ("client", .string(ClientID(base).description)),
          ("lost", .string(lost)), ("action", .string(action)),
        ]))
  }
}

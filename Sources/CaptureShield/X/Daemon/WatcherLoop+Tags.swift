// A secure tag sticks against other clients (issue 17, finding 6): who removed it comes from
// RECORD (`TagWatch`), and only the window's own client (or the daemon, for `shieldctl
// untag`) lifts it. See `TagGuard` and docs/security.md, "Tags".

import Foundation

extension WatcherLoop {
  /// The daemon's own clients (their removals are `shieldctl untag` commands).
  var daemonClients: Set<ClientID> { [ClientID(x.ownBase), ClientID(shieldX.ownBase)] }

  /// Reads recorded tag deletions: each resolves a pending removal of that window, or waits
  /// (briefly) for its PropertyNotify.
  func drainTagWatch() {
    guard let tagWatch else { return }
    let now = Clock.now()
    recentTagDeletes = recentTagDeletes.filter { now < $0.value.at + .seconds(2) }
    for (w, client) in tagWatch.drain() {
      if pendingUntags[w] != nil {
        resolveUntag(w, remover: client)
      } else {
        recentTagDeletes[w] = (client, now)
      }
    }
    if tagWatch.hasError { replaceTagWatch(tagWatch) }
  }

  /// The tag watch's RECORD context ended: another client KillClient'ed one of its
  /// connections (or the server ended the context). A new one takes over at once (the old
  /// one's connections are closed and stop being excluded as ours), and the kill is audited
  /// like the shield connection's. A removal read in between is lifted, as without RECORD.
  func replaceTagWatch(_ old: TagWatch) {
    let bases = old.ownBases
    for b in bases { detector?.ownConnectionClosed(b) }
    tagWatch = nil
    let lost = "who removes secure tags, while it was down"
    do {
      let watch = try TagWatch(display: display, property: aSecure, errors: XErrorPolicy(log: log))
      for b in watch.ownBases { detector?.excludeNewConnection(b) }
      tagWatch = watch
      auditKilled(
        "tag watch", base: bases[0], lost: lost,
        action: "reconnected as clients " + watch.ownBases.map { ClientID($0).description }.joined(separator: ", "))
    } catch {
      auditKilled("tag watch", base: bases[0], lost: lost, action: "not replaced (\(error))")
      log.error("the RECORD context that tells who removes secure tags ended; any client's removal now lifts a tag")
    }
  }

  /// A tracked window's secure (or malformed) tag was removed or zeroed: whether the daemon
  /// keeps the window protected (true: the change is held or undone, the engine is not
  /// told) or lets the change stand (false).
  func guardTagRemoval(_ w: WindowID, to tag: TagState) -> Bool {
    guard tagWatch != nil else { return false }
    if expectedUntags.remove(w) != nil { return false }
    drainTagWatch()  // the record of this removal was flushed before its PropertyNotify
    if let r = recentTagDeletes.removeValue(forKey: w) {
      switch TagGuard.verdict(remover: r.client, owner: tracked[w]?.client, daemon: daemonClients) {
      case .lift: return false
      case .restore:
        restoreTag(w, remover: r.client, how: "deleted")
        return true
      }
    }
    // No DeleteProperty recorded (yet): a ChangeProperty to 0, or a record still on its
    // way. Held until one comes, at most 1 s; then put back (fail safe).
    pendingUntags[w] = (tag, Clock.now() + .seconds(1))
    return true
  }

  /// A pending removal's DeleteProperty came from `remover`.
  func resolveUntag(_ w: WindowID, remover: ClientID) {
    guard let pending = pendingUntags.removeValue(forKey: w) else { return }
    switch TagGuard.verdict(remover: remover, owner: tracked[w]?.client, daemon: daemonClients) {
    case .lift:
      guard var info = tracked[w] else { return }
      info.tag = pending.tag
      tracked[w] = info
      apply(.windowChanged(info))
    case .restore:
      restoreTag(w, remover: remover, how: "deleted")
    }
  }

  /// Pending removals with no recorded DeleteProperty by their deadline: zeroed with
  /// ChangeProperty (X does not say by whom) or unknown; put back.
  func resolveExpiredUntags() {
    guard !pendingUntags.isEmpty else { return }
    let now = Clock.now()
    for (w, p) in pendingUntags where now >= p.deadline {
      pendingUntags[w] = nil
      restoreTag(w, remover: nil, how: p.tag == .notSecure ? "zeroed" : "removed")
    }
  }

  /// Puts the tag back on `w` (still tracked, still protected) and audits who removed it.
  func restoreTag(_ w: WindowID, remover: ClientID?, how: String) {
    guard let info = tracked[w] else { return }
    effects.restoreTag(w, atom: aSecure)
    var fields: [(String, AuditRecord.Value)] = [
      ("window", .string("0x" + String(w, radix: 16))), ("how", .string(how)),
      ("owner", .string(info.client?.description ?? "-")),
    ]
    if let remover {
      let id = engine.clients[remover]?.identity ?? ProcessInfoReader.identity(pid: x.clientPID(of: remover.base))
      fields += [
        ("client", .string(remover.description)), ("pid", id.pid.map { .int($0) } ?? "-"),
        ("exe", .string(id.exe ?? "-")),
      ]
    } else {
      fields.append(("client", "unknown (no DeleteProperty recorded: a ChangeProperty, whose sender X does not say)"))
    }
    fields.append(("action", "tag put back; the window stays protected"))
    log.write(AuditRecord("tag-tampered", fields))
  }
}

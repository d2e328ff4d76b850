// A secure tag sticks against other clients: who removed it comes from
// RECORD (`TagWatch`), and only the window's own client (or the daemon, for `shieldctl
// untag`) lifts it. See `TagGuard`, `TagRemovals` and docs/security.md, "Tags".

/// What the tag guard asks of X, on the main connection (real: `XConnection`; tests: a
/// recording fake): the tag put back (ChangeProperty, an `XRequests` wrapper), and the PID
/// behind a client (X-Resource) for the audit record.
protocol TagGuardConnection: XRequests {
  /// The PID of the client that owns `xid` (X-Resource); nil when unknown.
  func clientPID(of xid: UInt32) -> Int?
}

/// Where recorded `DeleteProperty` requests of the tag come from (real: `TagWatch`, a RECORD
/// context of its own).
protocol TagDeletionSource: AnyObject {
  /// Its connections' resource bases (the capture detector does not record them).
  var ownBases: [UInt32] { get }
  var fileDescriptor: Int32 { get }
  /// The context ended (a connection killed, or the server ended it): replace it.
  var hasError: Bool { get }
  func drain() -> [(window: WindowID, client: ClientID)]
}

extension TagWatch: TagDeletionSource {}

extension XConnection: TagGuardConnection {}

/// The tag guard: holds a removed secure tag until RECORD says who removed it, then lets the
/// change stand (`lift`) or puts the tag back and audits it (`tag-tampered`). Runs on the
/// loop's thread; its state is `removals` (pure, `TagRemovals`) and its RECORD source.
final class SecureTagGuard {
  /// What the guard needs to know of the loop's state at each call.
  struct View {
    /// The daemon's own clients (their removals are `shieldctl untag` commands).
    var daemon: Set<ClientID>
    /// A tracked window, nil when it is not tracked.
    var window: (WindowID) -> WindowInfo?
    /// A client's identity as the engine knows it, nil when it does not.
    var knownIdentity: (ClientID) -> ClientIdentity?
  }

  /// What the loop does for the guard.
  enum Effect {
    /// The removal stands: the tracked window takes `tag`, and the engine is told.
    case lift(WindowID, tag: TagState)
    /// The RECORD source ended: the loop replaces it (`watch`) and audits the kill.
    case watchEnded(TagDeletionSource)
  }

  let connection: TagGuardConnection
  /// `_CAPTURE_SHIELD_SECURE`.
  let secureAtom: UInt32
  let audit: (AuditRecord) -> Void
  /// Who deletes the tag; nil without RECORD, under server enforcement (the module decides
  /// who may), or while it could not be replaced: then any removal stands.
  var watch: TagDeletionSource?
  private(set) var removals = TagRemovals()

  init(
    connection: TagGuardConnection, secureAtom: UInt32, watch: TagDeletionSource?,
    audit: @escaping (AuditRecord) -> Void
  ) {
    self.connection = connection
    self.secureAtom = secureAtom
    self.watch = watch
    self.audit = audit
  }

  /// The earliest deadline of a held removal (the loop wakes for it; then `expire`).
  var nextDeadline: MonotonicTime? { removals.nextDeadline }

  /// Reads recorded tag deletions: each resolves a held removal of that window, or waits
  /// (briefly) for its PropertyNotify.
  func drain(_ view: View, now: MonotonicTime) -> [Effect] {
    guard let watch else { return [] }
    removals.forgetOldDeletes(now: now)
    var out: [Effect] = []
    for (w, client) in watch.drain() {
      let owner = view.window(w)?.client
      if let o = removals.recorded(w, by: client, owner: owner, daemon: view.daemon, now: now) {
        out += carryOut(o, view)
      }
    }
    if watch.hasError {
      self.watch = nil
      out.append(.watchEnded(watch))
    }
    return out
  }

  /// A tracked window's secure (or malformed) tag was removed or zeroed (to `tag`): whether
  /// the daemon keeps the window protected (`keep`: the change is held or undone, the
  /// engine is not told) or lets it stand; and what the recorded deletions read first
  /// asked of the loop (route those first).
  func removed(_ w: WindowID, to tag: TagState, _ view: View, now: MonotonicTime) -> (keep: Bool, effects: [Effect]) {
    guard watch != nil else { return (false, []) }
    let drained = drain(view, now: now)  // the record of this removal was flushed before its PropertyNotify
    switch removals.removed(w, to: tag, owner: view.window(w)?.client, daemon: view.daemon, now: now) {
    case .lift: return (false, drained)
    case .held: return (true, drained)
    case .restore(let w, let remover, let how):
      restore(w, remover: remover, how: how, view)
      return (true, drained)
    }
  }

  /// Held removals with no recorded `DeleteProperty` by their deadline: tags put back.
  func expire(_ view: View, now: MonotonicTime) {
    guard removals.nextDeadline != nil else { return }
    for o in removals.expired(now: now) { _ = carryOut(o, view) }
  }

  /// `w`'s tag was set again: a held removal of it is void.
  func tagSet(_ w: WindowID) { removals.tagSet(w) }

  /// `w` is gone.
  func windowGone(_ w: WindowID) { removals.windowGone(w) }

  /// `shieldctl untag`: the daemon removes `w`'s tag (`hasTag`: it has one now).
  func untagCommand(_ w: WindowID, hasTag: Bool) { removals.untagCommand(w, hasTag: hasTag) }

  /// Whether a removal of `w` is held.
  func isPending(_ w: WindowID) -> Bool { removals.isPending(w) }

  private func carryOut(_ o: TagRemovals.Outcome, _ view: View) -> [Effect] {
    switch o {
    case .lift(let w, let tag): return [.lift(w, tag: tag)]
    case .restore(let w, let remover, let how): restore(w, remover: remover, how: how, view)
    case .held: break
    }
    return []
  }

  /// Puts the tag back on `w` (still tracked, still protected) and audits who removed it.
  private func restore(_ w: WindowID, remover: ClientID?, how: String, _ view: View) {
    guard let info = view.window(w) else { return }
    connection.changeProperty(w, secureAtom, cardinals: [1])
    var fields: [(String, AuditRecord.Value)] = [
      ("window", .string("0x" + String(w, radix: 16))), ("how", .string(how)),
      ("owner", .string(info.client?.description ?? "-")),
    ]
    if let remover {
      let id =
        view.knownIdentity(remover) ?? ProcessInfoReader.identity(pid: connection.clientPID(of: remover.base))
      fields += [
        ("client", .string(remover.description)), ("pid", id.pid.map { .int($0) } ?? "-"),
        ("exe", .string(id.exe ?? "-")),
      ]
    } else {
      fields.append(("client", "unknown (no DeleteProperty recorded: a ChangeProperty, whose sender X does not say)"))
    }
    fields.append(("action", "tag put back; the window stays protected"))
    audit(AuditRecord("tag-tampered", fields))
  }
}

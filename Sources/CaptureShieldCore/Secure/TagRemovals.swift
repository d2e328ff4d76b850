/// The tag guard's bookkeeping (docs/security.md, "Tags"; `TagGuard` gives each verdict): the
/// removals of secure tags seen as PropertyNotify and as recorded `DeleteProperty`
/// requests, which arrive in either order, matched by window. No I/O, no clock: the shell
/// (`SecureTagGuard`) passes the time and the window's owner and carries out the outcome.
public struct TagRemovals: Sendable {
  /// A recorded `DeleteProperty` not matched with its PropertyNotify yet (kept `recentFor`).
  struct RecentDelete: Sendable, Hashable {
    var client: ClientID
    var at: MonotonicTime
  }

  /// A removal held back until its remover is known (the tag the change would give, and
  /// until when it waits: then the tag is put back).
  struct Pending: Sendable, Hashable {
    var tag: TagState
    var deadline: MonotonicTime
  }

  /// What becomes of a removal.
  public enum Outcome: Sendable, Hashable {
    /// The change stands: the window takes `tag` (the shell tells the engine).
    case lift(WindowID, tag: TagState)
    /// The tag is put back (`remover`: the client whose `DeleteProperty` was recorded; nil
    /// when none was; `how`: `deleted`, `zeroed` or `removed`) and the removal audited.
    case restore(WindowID, remover: ClientID?, how: String)
    /// Held until its `DeleteProperty` is recorded or its deadline passes.
    case held
  }

  /// How long a recorded deletion waits for its PropertyNotify.
  static let recentFor = PolicyDuration.seconds(2)
  /// How long a removal waits for its recorded deletion before the tag is put back.
  static let holdFor = PolicyDuration.seconds(1)

  var recent: [WindowID: RecentDelete] = [:]
  var pending: [WindowID: Pending] = [:]
  /// Windows `shieldctl untag` asked the daemon to untag (its own removal stands).
  var expected: Set<WindowID> = []

  public init() {}

  /// The earliest deadline of a held removal (the loop wakes for it; then `expired`).
  public var nextDeadline: MonotonicTime? { pending.values.map(\.deadline).min() }

  /// Whether a removal of `w` is held.
  public func isPending(_ w: WindowID) -> Bool { pending[w] != nil }

  /// A `DeleteProperty` of the tag on `w` by `client` was recorded. `owner`: the window's
  /// client, nil when it has none or is not tracked.
  public mutating func recorded(
    _ w: WindowID, by client: ClientID, owner: ClientID?, daemon: Set<ClientID>, now: MonotonicTime
  ) -> Outcome? {
    guard let p = pending.removeValue(forKey: w) else {
      recent[w] = RecentDelete(client: client, at: now)
      return nil
    }
    switch TagGuard.verdict(remover: client, owner: owner, daemon: daemon) {
    case .lift: return .lift(w, tag: p.tag)
    case .restore: return .restore(w, remover: client, how: "deleted")
    }
  }

  /// Forgets recorded deletions that waited too long for their PropertyNotify.
  public mutating func forgetOldDeletes(now: MonotonicTime) {
    recent = recent.filter { now < $0.value.at + Self.recentFor }
  }

  /// A PropertyNotify says the secure (or malformed) tag of tracked `w` was removed or
  /// zeroed and would become `tag`. Call after the recorded deletions read so far
  /// (`recorded`), since the record of this removal was flushed before its PropertyNotify.
  public mutating func removed(
    _ w: WindowID, to tag: TagState, owner: ClientID?, daemon: Set<ClientID>, now: MonotonicTime
  ) -> Outcome {
    if expected.remove(w) != nil { return .lift(w, tag: tag) }
    if let r = recent.removeValue(forKey: w) {
      switch TagGuard.verdict(remover: r.client, owner: owner, daemon: daemon) {
      case .lift: return .lift(w, tag: tag)
      case .restore: return .restore(w, remover: r.client, how: "deleted")
      }
    }
    // No DeleteProperty recorded (yet): a ChangeProperty to 0, or a record still on its
    // way. Held until one comes, at most `holdFor`; then put back (fail safe).
    pending[w] = Pending(tag: tag, deadline: now + Self.holdFor)
    return .held
  }

  /// Held removals past their deadline with no recorded `DeleteProperty`: zeroed with
  /// ChangeProperty (X does not say by whom) or unknown; each tag is put back.
  public mutating func expired(now: MonotonicTime) -> [Outcome] {
    var out: [Outcome] = []
    for (w, p) in pending.sorted(by: { $0.key < $1.key }) where now >= p.deadline {
      pending[w] = nil
      out.append(.restore(w, remover: nil, how: p.tag == .notSecure ? "zeroed" : "removed"))
    }
    return out
  }

  /// `w`'s tag was set again: a held removal of it is void.
  public mutating func tagSet(_ w: WindowID) { pending[w] = nil }

  /// `w` is gone.
  public mutating func windowGone(_ w: WindowID) {
    pending[w] = nil
    expected.remove(w)
  }

  /// `shieldctl untag` removes `w`'s tag (the daemon's own removal stands). Expected only
  /// while the window has a tag (`hasTag`, or a removal held): its PropertyNotify then
  /// takes the expectation.
  public mutating func untagCommand(_ w: WindowID, hasTag: Bool) {
    if hasTag || pending[w] != nil { expected.insert(w) }
    pending[w] = nil
  }
}

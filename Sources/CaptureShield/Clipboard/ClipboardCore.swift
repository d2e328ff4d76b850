/// The copied-text guard's decisions: a pure state machine like `Engine`. Events in,
/// effects out; no I/O, no clock (time comes with every event), never the text itself.
///
/// A selection (CLIPBOARD, PRIMARY) whose new owner is a secure source (a client owning a
/// secure window, or matching `clipboard.sources`) is taken over: the shell converts the
/// text, seals it and becomes the owner. Readers are then served by policy
/// (`clipboard.readers`, `allow`, `deny`) until `clearAfter`, `maxReads`, a clear command
/// or the daemon's exit gives the selection up and wipes the text.
public struct ClipboardCore: Sendable {
  // MARK: Events and effects

  /// What a reader asked for.
  public enum Target: String, Sendable, Hashable {
    /// The text itself (UTF8_STRING, text/plain;charset=utf-8, STRING, TEXT).
    case text
    /// TARGETS: the list of targets (no content).
    case targets
    /// `x-kde-passwordManagerHint`: the concealed hint (`secret`).
    case hint
    /// TIMESTAMP.
    case timestamp
    /// Anything else: refused without an audit record.
    case unsupported
  }

  /// Something the shell observed or was asked.
  public enum Event: Sendable, Hashable {
    /// A new owner of `selection` (nil: no owner). `secureSource`: the client owns a secure
    /// window; `facts`: the owner's client facts (then its windows' facts) for
    /// `clipboard.sources`. The daemon's own ownership is never reported.
    case ownerChanged(
      selection: String, owner: ClientID?, identity: ClientIdentity?, secureSource: Bool, facts: [Facts])
    /// The text of a selection being taken over was converted and sealed.
    case contentTaken(selection: String, size: Int)
    /// The conversion failed (no text target, the owner did not answer, too large, ...).
    case contentFailed(selection: String, reason: String)
    /// A SelectionRequest for a guarded selection. `id` names it in the effects.
    case request(
      id: UInt64, selection: String, reader: ClientID, identity: ClientIdentity?, focused: Bool, target: Target)
    /// Time passed (`clearAfter`).
    case tick
    /// `shieldctl clipboard clear`.
    case clear(by: String)
    /// A new policy was loaded.
    case policyReplaced(ClipboardPolicy)
    /// The daemon stops: nothing secret is left behind.
    case shutdown
  }

  /// What the shell must do, in order.
  public enum Effect: Sendable, Hashable {
    /// Convert `selection` from its current owner (TARGETS, then a text target).
    case takeOver(selection: String)
    /// SetSelectionOwner(our window) for `selection`.
    case becomeOwner(selection: String)
    /// Answer request `id` with the content of its target.
    case serve(id: UInt64)
    /// Answer request `id` with property None.
    case refuse(id: UInt64)
    /// SetSelectionOwner(None) for `selection` (only if we still own it).
    case giveUp(selection: String)
    /// Wipe the sealed text of `selection` (and any conversion in progress).
    case wipe(selection: String)
    case audit(AuditRecord)
    /// The published status changed.
    case publishState
  }

  // MARK: State

  /// One guarded (or being guarded) selection.
  public struct Guarded: Sendable, Hashable {
    public var source: ClientID
    public var identity: ClientIdentity?
    /// When the takeover started (the owner change was seen).
    public var since: MonotonicTime
    /// Size in bytes once the text is sealed; nil while converting.
    public var size: Int?
    public var readsServed = 0
    public var readsRefused = 0
    /// Whether the daemon owns the selection (the text is sealed).
    public var isOwned: Bool { size != nil }
  }

  public private(set) var policy: ClipboardPolicy
  public private(set) var now = MonotonicTime(nanoseconds: 0)
  public private(set) var guarded: [String: Guarded] = [:]

  public init(policy: ClipboardPolicy) {
    self.policy = policy
  }

  /// The earliest time at which a `.tick` changes something.
  public var nextDeadline: MonotonicTime? {
    guarded.values.filter(\.isOwned).map { $0.since + policy.clearAfter }.min()
  }

  /// Whether `reader` may read, and why (for the audit record).
  public func verdict(identity: ClientIdentity?, focused: Bool) -> (allowed: Bool, why: String) {
    let f = identity?.facts ?? Facts()
    if let m = policy.deny.first(where: { $0.matches(f) }) { return (false, "deny \(m.label)") }
    if let m = policy.allow.first(where: { $0.matches(f) }) { return (true, "allow \(m.label)") }
    switch policy.readers {
    case .focused:
      return focused ? (true, "focused") : (false, "not focused")
    case .allowList:
      return (false, "not in clipboard.allow")
    }
  }

  /// Whether a new owner is a source whose copies are guarded.
  public func isGuardedSource(secureSource: Bool, facts: [Facts]) -> Bool {
    secureSource || facts.contains { f in policy.sources.contains { $0.matches(f) } }
  }

  // MARK: Handling events

  public mutating func handle(_ event: Event, now: MonotonicTime) -> [Effect] {
    if now > self.now { self.now = now }
    var fx: [Effect] = []
    switch event {
    case .ownerChanged(let sel, let owner, let identity, let secureSource, let facts):
      guard policy.enabled, policy.selections.contains(sel) else { return [] }
      if guarded[sel] != nil {
        // Someone else owns the selection now: our copy is stale; wipe it (the owner
        // change already ended our ownership, so nothing to give up).
        end(sel, reason: "replaced by a new copy", giveUp: false, fx: &fx)
      }
      guard let owner, isGuardedSource(secureSource: secureSource, facts: facts) else { return fx }
      guarded[sel] = Guarded(source: owner, identity: identity, since: self.now)
      fx.append(.takeOver(selection: sel))

    case .contentTaken(let sel, let size):
      guard var g = guarded[sel], !g.isOwned else { return [] }
      g.size = size
      guarded[sel] = g
      fx.append(.becomeOwner(selection: sel))
      fx.append(
        .audit(
          AuditRecord(
            "clipboard-guard",
            [("selection", .string(sel)), ("size", .int(size))] + clientFields(g.source, g.identity, prefix: "source")
          )))
      fx.append(.publishState)

    case .contentFailed(let sel, let reason):
      guard let g = guarded.removeValue(forKey: sel) else { return [] }
      fx.append(.wipe(selection: sel))
      fx.append(
        .audit(
          AuditRecord(
            "clipboard-guard-failed",
            [("selection", .string(sel)), ("why", .string(reason))]
              + clientFields(g.source, g.identity, prefix: "source")
          )))

    case .request(let id, let sel, let reader, let identity, let focused, let target):
      guard var g = guarded[sel], g.isOwned, target != .unsupported else { return [.refuse(id: id)] }
      let v = verdict(identity: identity, focused: focused)
      guard target == .text else { return [v.allowed ? .serve(id: id) : .refuse(id: id)] }
      if v.allowed { g.readsServed += 1 } else { g.readsRefused += 1 }
      guarded[sel] = g
      fx.append(v.allowed ? .serve(id: id) : .refuse(id: id))
      fx.append(
        .audit(
          AuditRecord(
            v.allowed ? "clipboard-read" : "clipboard-read-refused",
            [("selection", .string(sel)), ("why", .string(v.why))] + clientFields(reader, identity, prefix: "reader"))))
      fx.append(.publishState)
      if v.allowed, let max = policy.maxReads, g.readsServed >= max {
        end(sel, reason: "maxReads (\(max))", giveUp: true, fx: &fx)
      }

    case .tick:
      for (sel, g) in guarded.sorted(by: { $0.key < $1.key }) where g.isOwned && g.since + policy.clearAfter <= self.now
      {
        end(sel, reason: "clearAfter (\(policy.clearAfter))", giveUp: true, fx: &fx)
      }

    case .clear(let by):
      for sel in guarded.keys.sorted() { end(sel, reason: "clear command", by: by, giveUp: true, fx: &fx) }

    case .policyReplaced(let p):
      policy = p
      for (sel, g) in guarded.sorted(by: { $0.key < $1.key }) {
        if !p.enabled || !p.selections.contains(sel) {
          end(sel, reason: "policy reload", giveUp: true, fx: &fx)
        } else if let max = p.maxReads, g.readsServed >= max {
          end(sel, reason: "maxReads (\(max))", giveUp: true, fx: &fx)
        }
      }
      fx += handle(.tick, now: self.now)
      fx.append(.publishState)

    case .shutdown:
      for sel in guarded.keys.sorted() { end(sel, reason: "daemon exit", giveUp: true, fx: &fx) }
    }
    return fx
  }

  /// Ends the guard of `sel`: give up ownership (when we own it), wipe, audit.
  mutating func end(_ sel: String, reason: String, by: String? = nil, giveUp: Bool, fx: inout [Effect]) {
    guard let g = guarded.removeValue(forKey: sel) else { return }
    if giveUp && g.isOwned { fx.append(.giveUp(selection: sel)) }
    fx.append(.wipe(selection: sel))
    var fields: [(String, AuditRecord.Value)] = [
      ("selection", .string(sel)), ("why", .string(reason)), ("served", .int(g.readsServed)),
      ("refused", .int(g.readsRefused)), ("seconds", .double(now.seconds(since: g.since))),
    ]
    if let by { fields.append(("by", .string(by))) }
    fx.append(.audit(AuditRecord("clipboard-clear", fields)))
    fx.append(.publishState)
  }

  func clientFields(_ c: ClientID, _ id: ClientIdentity?, prefix: String) -> [(String, AuditRecord.Value)] {
    var out: [(String, AuditRecord.Value)] = [(prefix, .string(c.description))]
    if let pid = id?.pid { out.append(("pid", .int(pid))) }
    if let exe = id?.exe { out.append(("exe", .string(exe))) }
    if let comm = id?.comm { out.append(("comm", .string(comm))) }
    return out
  }

  // MARK: Status

  /// What `shieldctl clipboard status` shows (never the content). `wallClock`: seconds
  /// since the Unix epoch at `now`, to publish absolute times.
  public func status(wallClock: Double) -> DaemonState.ClipboardState {
    func wall(_ t: MonotonicTime) -> Double { wallClock - now.seconds(since: t) + t.seconds(since: now) }
    return .init(
      enabled: policy.enabled, readers: policy.readers.rawValue,
      clearAfterMs: Int(policy.clearAfter.nanoseconds / 1_000_000), maxReads: policy.maxReads,
      guarded: guarded.sorted { $0.key < $1.key }.map { sel, g in
        .init(
          selection: sel, state: g.isOwned ? "guarded" : "taking over", source: g.source, pid: g.identity?.pid,
          exe: g.identity?.exe, size: g.size, since: wall(g.since),
          clearsAt: g.isOwned ? wall(g.since + policy.clearAfter) : nil, readsServed: g.readsServed,
          readsRefused: g.readsRefused)
      })
  }
}

extension DaemonState {
  /// The copied-text guard's published status (`clipboard` in `_CAPTURE_SHIELD_STATE`).
  public struct ClipboardState: Sendable, Codable, Hashable {
    public var enabled: Bool
    public var readers: String
    public var clearAfterMs: Int
    public var maxReads: Int?
    /// Guarded selections; empty when nothing is guarded.
    public var guarded: [Row]

    public struct Row: Sendable, Codable, Hashable {
      public var selection: String
      /// `guarded` or `taking over`.
      public var state: String
      public var source: ClientID
      public var pid: Int?
      public var exe: String?
      public var size: Int?
      /// When the copy was taken over (seconds since the Unix epoch).
      public var since: Double
      /// When it will be cleared by `clearAfter` (seconds since the Unix epoch).
      public var clearsAt: Double?
      public var readsServed: Int
      public var readsRefused: Int
    }
  }
}

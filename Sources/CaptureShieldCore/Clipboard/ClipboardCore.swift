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

  /// Who sent the ConvertSelection behind a request. The SelectionRequest event names only
  /// the requestor window, which any client may name; RECORD names the client that sent
  /// the request (see `ConversionLedger`).
  public enum Sender: Sendable, Hashable {
    /// A recorded ConvertSelection from this client (its identity) matched the request.
    case recorded(ClientID, ClientIdentity?)
    /// No record says who sent it (RECORD unavailable, or none came in time): refused.
    case unknown(why: String)
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
    /// A SelectionRequest for a guarded selection. `id` names it in the effects. `reader`:
    /// the client that owns the requestor window (`requestor`), and its identity; `focused`:
    /// whether it owns the focus window; `sender`: who sent the ConvertSelection (RECORD).
    case request(
      id: UInt64, selection: String, reader: ClientID, identity: ClientIdentity?, focused: Bool, target: Target,
      requestor: WindowID, sender: Sender)
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

  /// Whether `reader` is the source of the guarded copy `g`: the client that owned the
  /// selection when it was taken over (the requestor window's owner, which RECORD has said
  /// sent the request), run by the same process. The PID check keeps a new client from
  /// inheriting the privilege with the resource-id base of a source that has disconnected;
  /// without a PID on both sides (a remote client) nobody is the source.
  public func isSource(_ g: Guarded, reader: ClientID, identity: ClientIdentity?) -> Bool {
    guard reader == g.source, let pid = identity?.pid, let sourcePID = g.identity?.pid else { return false }
    return pid == sourcePID
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
        end(sel, reason: owner == nil ? "cleared (no owner)" : "replaced by a new copy", giveUp: false, fx: &fx)
      }
      guard let owner, isGuardedSource(secureSource: secureSource, facts: facts) else { return fx }
      guarded[sel] = Guarded(source: owner, identity: identity, since: self.now)
      fx.append(.takeOver(selection: sel))

    case .contentTaken(let sel, let size):
      guard var g = guarded[sel], !g.isOwned else { return [] }
      if size == 0 {
        // An empty copy has nothing to guard: it is how a password manager clears the
        // clipboard (KeePassXC 2.7 copies an empty text). The source stays the owner.
        guarded[sel] = nil
        fx.append(.wipe(selection: sel))
        fx.append(.publishState)
        return fx
      }
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

    case .request(let id, let sel, let reader, let identity, let focused, let target, let requestor, let sender):
      guard var g = guarded[sel], g.isOwned, target != .unsupported else { return [.refuse(id: id)] }
      // Only the client that owns the requestor window may ask for a conversion into it:
      // the property of any window is readable by every client, so a request naming another
      // client's (focused) window would hand that client's paste to whoever sent it.
      if let why = unverified(sender, reader: reader) {
        fx.append(.refuse(id: id))
        if target == .text {
          g.readsRefused += 1
          guarded[sel] = g
        }
        var fields: [(String, AuditRecord.Value)] = [
          ("selection", .string(sel)), ("why", .string(why)), ("target", .string(target.rawValue)),
        ]
        switch sender {
        case .recorded(let c, let cid):
          // A foreign requestor is an attack whatever the target: the sender is named.
          fields += clientFields(c, cid, prefix: "reader")
        case .unknown:
          // Only worth a record for the text (clipboard managers ask for TARGETS often).
          guard target == .text else { return fx }
        }
        fx.append(.audit(AuditRecord("clipboard-read-refused", fields + requestorFields(requestor, reader))))
        fx.append(.publishState)
        return fx
      }
      if isSource(g, reader: reader, identity: identity) {
        // The source reads back its own copy (a password manager checks that the clipboard
        // still holds its text before it clears it): served whoever has the focus, and not
        // a read that `maxReads` counts.
        guard target == .text else { return [.serve(id: id)] }
        fx.append(.serve(id: id))
        fx.append(
          .audit(
            AuditRecord(
              "clipboard-read",
              [("selection", .string(sel)), ("why", .string("source reads back its own copy"))]
                + clientFields(reader, identity, prefix: "reader"))))
        return fx
      }
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

  /// Why a request's sender is not the requestor window's owner (nil when it is).
  func unverified(_ sender: Sender, reader: ClientID) -> String? {
    switch sender {
    case .recorded(let c, _) where c == reader: nil
    case .recorded: "the requestor window belongs to another client"
    case .unknown(let why): "sender unknown (\(why))"
    }
  }

  func requestorFields(_ w: WindowID, _ owner: ClientID) -> [(String, AuditRecord.Value)] {
    [("requestor", .string("0x" + String(w, radix: 16))), ("requestorClient", .string(owner.description))]
  }

  func clientFields(_ c: ClientID, _ id: ClientIdentity?, prefix: String) -> [(String, AuditRecord.Value)] {
    var out: [(String, AuditRecord.Value)] = [(prefix, .string(c.description))]
    if let pid = id?.pid { out.append(("pid", .int(pid))) }
    if let exe = id?.exe { out.append(("exe", .string(exe))) }
    if let comm = id?.comm { out.append(("comm", .string(comm))) }
    return out
  }

  // MARK: Status

  /// What `shieldctl clipboard status` shows (never the content), published at monotonic
  /// time `at`; `wallClock`: seconds since the Unix epoch at that same moment (the shell
  /// reads both clocks together). Every time is converted from the monotonic clock through
  /// this one pair, so ages and countdowns computed from the published times agree however
  /// long ago the core last handled an event (its `now`, which is not the time of
  /// publishing).
  public func status(at: MonotonicTime, wallClock: Double) -> DaemonState.ClipboardState {
    func wall(_ t: MonotonicTime) -> Double { wallClock - at.seconds(since: t) + t.seconds(since: at) }
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

/// Who sent each ConvertSelection that reaches the guard, from what RECORD saw: pure (no
/// X, no clock), fed in the server's order.
///
/// The server copies a ConvertSelection's fields (requestor, selection, target, property,
/// time) into the SelectionRequest it sends the owner, and says nothing of the sender.
/// RECORD names the sender of each ConvertSelection, in the order the server executed
/// them, and the guard's SelectionRequests come in that same order: while the guard owns a
/// selection, every ConvertSelection of it (with a real requestor window) becomes a
/// SelectionRequest to the guard. So the guard, taking its requests in order, pairs each
/// with the oldest recorded ConvertSelection of the same fields, and forgets everything
/// recorded before that one (it went to an earlier request, or to another owner).
///
/// Two markers of the guard's own, recorded too, keep this exact:
/// - its own SetSelectionOwner of a selection ends what was recorded of it before: those
///   requests went to the previous owner, and one of them must not vouch for a later
///   request with the same fields.
/// - a sync marker (a ConvertSelection of the guard's own, numbered in its time field) sent
///   after a request arrived is recorded after that request's ConvertSelection: once the
///   marker is seen, a request still without a record has none (`unrecorded`).
///
/// Dropping a record (a full ledger, RECORD losing one) makes a request refused; at worst,
/// when a spoofer and the window's owner sent the very same fields at once, the spoofer's
/// request is answered with the owner's record: into the owner's window, with what the
/// owner asked for itself (readable there by anyone anyway: docs/clipboard.md).
public struct ConversionLedger: Sendable, Hashable {
  /// The fields a SelectionRequest copies from the ConvertSelection that caused it.
  public struct Fields: Sendable, Hashable {
    public var requestor: UInt32
    public var selection: UInt32
    public var target: UInt32
    public var property: UInt32
    public var time: UInt32
    public init(requestor: UInt32, selection: UInt32, target: UInt32, property: UInt32, time: UInt32) {
      (self.requestor, self.selection, self.target, self.property, self.time) =
        (requestor, selection, target, property, time)
    }
  }

  /// One recorded request that matters here.
  public enum Recorded: Sendable, Hashable {
    /// A ConvertSelection by the client of resource-id base `sender` (not the guard).
    case conversion(sender: UInt32, Fields)
    /// The guard's own SetSelectionOwner of `selection` (taking it or giving it up).
    case ownerSet(selection: UInt32)
    /// The guard's own sync marker number `n`.
    case marker(UInt32)
  }

  /// Who sent a request, as far as the ledger knows.
  public enum Match: Sendable, Hashable {
    /// The client of this resource-id base.
    case sender(UInt32)
    /// No record: the marker sent after the request came, and none matched before it.
    case unrecorded
    /// Not known yet: wait for the request's record or for its marker.
    case pending
  }

  /// What the guard's own connection is, to tell its markers from everyone's requests.
  public struct Own: Sendable, Hashable {
    /// The guard connection's resource-id base.
    public var base: UInt32
    /// The selection atom the sync markers convert (nobody's selection).
    public var markerSelection: UInt32
    public init(base: UInt32, markerSelection: UInt32) {
      (self.base, self.markerSelection) = (base, markerSelection)
    }
  }

  public struct Entry: Sendable, Hashable {
    public var sender: UInt32
    public var fields: Fields
  }

  /// Recorded conversions not paired yet, oldest first.
  public private(set) var entries: [Entry] = []
  /// The latest sync marker seen.
  public private(set) var markerSeen: UInt32?
  /// Entries kept: when there are twice this many, the oldest beyond it are dropped.
  public let capacity: Int

  public init(capacity: Int = 1024) { self.capacity = max(1, capacity) }

  /// The core opcodes the ledger decodes, which the shell's RECORD context records
  /// (`SelectionRecorder`): SetSelectionOwner (22) and ConvertSelection (24).
  public static let setSelectionOwner: UInt8 = 22
  /// See `setSelectionOwner`.
  public static let convertSelection: UInt8 = 24

  /// Decodes one recorded request (as RECORD delivers it: without element headers, in the
  /// client's byte order) of the client of base `sender`; nil for anything else (the
  /// guard's own takeover conversions, other requests, malformed bytes).
  public static func decode(_ request: UnsafeRawBufferPointer, sender: UInt32, bigEndian: Bool, own: Own)
    -> Recorded?
  {
    guard let r = RequestReader(request, bigEndian: bigEndian) else { return nil }
    switch r.major {
    case convertSelection:
      guard let requestor = r.u32(4), let selection = r.u32(8), let target = r.u32(12), let property = r.u32(16),
        let time = r.u32(20)
      else { return nil }
      if sender == own.base { return selection == own.markerSelection ? .marker(time) : nil }
      return .conversion(
        sender: sender,
        Fields(requestor: requestor, selection: selection, target: target, property: property, time: time))
    case setSelectionOwner:
      guard sender == own.base, let selection = r.u32(8) else { return nil }
      return .ownerSet(selection: selection)
    default:
      return nil
    }
  }

  public static func decode(_ request: [UInt8], sender: UInt32, bigEndian: Bool = false, own: Own) -> Recorded? {
    request.withUnsafeBytes { decode($0, sender: sender, bigEndian: bigEndian, own: own) }
  }

  /// Takes one record, in the server's order.
  public mutating func add(_ r: Recorded) {
    switch r {
    case .conversion(let sender, let f):
      entries.append(Entry(sender: sender, fields: f))
      if entries.count >= 2 * capacity { entries.removeFirst(entries.count - capacity) }
    case .ownerSet(let sel):
      entries.removeAll { $0.fields.selection == sel }
    case .marker(let n):
      if markerSeen.map({ Self.reached(n, since: $0) }) ?? true { markerSeen = n }
    }
  }

  /// Pairs the oldest request not answered yet (fields `f`; `marker`: the sync marker sent
  /// after it came, if any) with its record. Requests must be asked about in the order
  /// they came.
  public mutating func match(_ f: Fields, marker: UInt32?) -> Match {
    if let i = entries.firstIndex(where: { $0.fields == f }) {
      let sender = entries[i].sender
      entries.removeFirst(i + 1)
      return .sender(sender)
    }
    if let m = marker, let seen = markerSeen, Self.reached(seen, since: m) { return .unrecorded }
    return .pending
  }

  /// Whether marker `a` is `b` or later (numbers wrap around).
  static func reached(_ a: UInt32, since b: UInt32) -> Bool { Int32(bitPattern: a &- b) >= 0 }
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

// The shield lifecycle as a pure state machine: which shield windows exist, which are up,
// which removals are still to be sent, and which unmaps are our own.

/// The shield lifecycle, with no I/O: `ShieldDriver` feeds it what the daemon wants and
/// what the X server reported, and carries out the operations it returns.
///
/// A shield is a child window of its target (the secure window). It can be *up*
/// (mapped), *hidden* (created, unmapped: taken down, or prepared ahead of time so that a
/// quarantine costs one MapWindow), and *plain* (put up at CreateNotify with no round
/// trip, still without the striped tile). Removals are deferred: `unshield` only marks a
/// shield, and `commitUnmaps` returns the UnmapWindow operations (with quarantine on, the
/// driver sends them only when no new client's record is waiting, see `RecordPump`). Our
/// own unmaps are remembered by sequence number, so an UnmapNotify of ours is never taken
/// for tampering.
public struct ShieldTable: Equatable, Sendable {
  /// One target's shield.
  struct Entry: Equatable {
    var shield: UInt32
    /// Unmapped on the server (or about to be, see `pendingUnmap`).
    var hidden: Bool
    /// Put up by `shieldAtOnce`: no tile yet.
    var plain: Bool = false
    /// Taken down in the model; its UnmapWindow is not sent yet.
    var pendingUnmap: Bool = false
  }

  /// A shield's place in its target, as a ConfigureNotify reports it. Ours is always
  /// `canonical`: at (0,0), 32767×32767, no border.
  public struct Placement: Equatable, Sendable {
    /// Position in the target.
    public var x: Int16
    /// Position in the target.
    public var y: Int16
    /// Size, inside the border.
    public var width: UInt16
    /// Size, inside the border.
    public var height: UInt16
    /// Border width.
    public var border: UInt16
    /// A placement as a ConfigureNotify reports it.
    public init(x: Int16, y: Int16, width: UInt16, height: UInt16, border: UInt16) {
      self.x = x
      self.y = y
      self.width = width
      self.height = height
      self.border = border
    }
    /// Where our shields always are: at (0,0), 32767×32767, no border.
    public static let canonical = Placement(x: 0, y: 0, width: 32767, height: 32767, border: 0)
    /// `WxH+X+Y`, and the border when there is one.
    public var description: String { "\(width)x\(height)+\(x)+\(y)" + (border == 0 ? "" : " border \(border)") }
  }

  /// Who displaced a shield, for the audit record: X does not say who sent the request
  /// behind a ConfigureNotify, ReparentNotify or ShapeNotify.
  static let unknownClient = "by another client (X does not say which)"

  /// What the daemon wants, and what the server reported.
  public enum Event: Equatable, Sendable {
    /// Put the shield up (create it when there is none); idempotent.
    case shield(WindowID)
    /// Create the shield unmapped if there is none.
    case prepare(WindowID)
    /// Put a plain shield up at once (a new window while shields are up).
    case shieldAtOnce(WindowID)
    /// Take the shield down (at the next `commitUnmaps`), keep it for later.
    case unshield(WindowID)
    /// Send the removals taken since the last commit.
    case commitUnmaps
    /// The RECORD thread mapped this target's shield.
    case markMapped(WindowID)
    /// Destroy the shield if it is still plain (put up at CreateNotify, not wanted).
    case dropProvisional(WindowID)
    /// Destroy the shield for good.
    case destroy(WindowID)
    /// The target is gone (its shield died with it): forget both.
    case forget(WindowID)
    /// Write the (shield, target) registry if it changed.
    case flushRegistry
    /// A shield left by an earlier daemon, verified by the driver.
    case adopted(WindowID, shield: UInt32)
    /// The driver created `shield` in the target, as `create`/`createPlain` asked.
    case created(WindowID, shield: UInt32, mapped: Bool, plain: Bool)
    /// The driver sent our UnmapWindow of `shield` with this sequence number (low 16 bits).
    case unmapSent(shield: UInt32, sequence: UInt16)
    /// UnmapNotify of `window`, reported to `event`.
    case unmapNotify(window: UInt32, event: UInt32, sequence: UInt16)
    /// DestroyNotify of `window`, reported to `event`; whether the target still exists.
    case destroyNotify(window: UInt32, event: UInt32, targetAlive: Bool)
    /// A window was created in `parent` (CreateNotify of a child).
    case childCreated(window: UInt32, parent: UInt32)
    /// A child of `parent` was mapped.
    case childMapped(window: UInt32, parent: UInt32)
    /// A child of `parent` was restacked directly above `aboveSibling` (ConfigureNotify
    /// reported to `parent`); `placement` and `sequence` matter when it is our shield.
    case childRestacked(
      window: UInt32, parent: UInt32, aboveSibling: UInt32, placement: Placement = .canonical, sequence: UInt16 = 0)
    /// CirculateNotify of a child of `parent` (CirculateWindow moved it to the top or bottom).
    case childCirculated(window: UInt32, parent: UInt32)
    /// ReparentNotify reported to `event` (the old or new parent): `window` now in `parent`.
    case reparented(window: UInt32, event: UInt32, parent: UInt32)
    /// ShapeNotify of `window`: its shape of `kind` (0 bounding, 1 clip, 2 input) is set
    /// (`shaped`) or back to the default.
    case shapeChanged(window: UInt32, kind: UInt8, shaped: Bool)
    /// A client asked RECORD-visibly to redirect this window (Composite RedirectWindow,
    /// Manual): if it is one of our shields, it no longer paints; `how` names the client.
    case redirected(window: UInt32, how: String)
    /// The driver sent a restack (or placement) of `shield` with this sequence number.
    case configureSent(shield: UInt32, sequence: UInt16)
    /// The last Expose of `window`.
    case exposed(window: UInt32)
  }

  /// What the driver must do, in order.
  public enum Operation: Equatable, Sendable {
    /// Create a tiled shield in the target (mapped or not); answer with `.created`.
    case create(WindowID, mapped: Bool)
    /// Create a plain dark shield in the target, mapped, with no round trip; answer with
    /// `.created(plain: true)`.
    case createPlain(WindowID)
    /// Give a plain shield its striped tile (needs the target's depth; fails when the
    /// target is gone, and then the rest of the operations are moot).
    case retile(WindowID, shield: UInt32)
    case map(UInt32)
    /// Stack it above its siblings; answer with `.configureSent`.
    case raise(UInt32)
    /// Put the shield back at (0,0), 32767×32767, no border, above its siblings; answer
    /// with `.configureSent`.
    case replace(UInt32)
    /// Ask the server whether the shield is above every sibling; raise it if not, and if
    /// `tampered`, report `.lost(target, how:)`.
    case checkStacking(WindowID, shield: UInt32, tampered: Bool, how: String)
    /// Reset the shield's shape of `kind` (bounding or clip) to the default (its extent).
    case resetShape(UInt32, kind: UInt8)
    /// Destroy a displaced shield (no change of what we watch: a new one is created next).
    case discard(UInt32)
    /// Unmap it; answer with `.unmapSent`.
    case unmap(UInt32)
    /// Destroy the shield and stop watching its target.
    case destroy(shield: UInt32, target: WindowID)
    /// Watch the target's structure (to stay on top and to see the shield removed) and
    /// the shield's shape.
    case watch(WindowID, shield: UInt32)
    /// Publish the (shield, target) pairs on the root.
    case writeRegistry([UInt32])
    /// Draw the label into the shield of this target.
    case drawLabel(shield: UInt32, target: WindowID)
    /// Another client removed a shield we keep: tell the engine.
    case lost(WindowID, how: String)
  }

  /// target → its shield.
  private(set) var entries: [WindowID: Entry] = [:]
  /// shield → its target.
  public private(set) var targetOf: [UInt32: WindowID] = [:]
  /// Sequence numbers of our UnmapWindow requests of each shield whose UnmapNotify has not
  /// come yet. Each such event carries exactly its request's number; an unmap by another
  /// client carries another one. Without this, our own unmap seen after we had mapped the
  /// shield again (a session ending and the next starting within one round trip) looked
  /// like tampering, and the "re-assert" map made the shield flap.
  private(set) var ownUnmaps: [UInt32: [UInt16]] = [:]
  /// Sequence numbers of our restacks of each shield whose ConfigureNotify has not come
  /// yet: a ConfigureNotify of a shield that carries none of them was caused by another
  /// client (no one else has any business configuring our shields). X sends no event for a
  /// restack that changes nothing, so entries can stay: the driver follows each restack
  /// with a NoOperation (another client's request executed right after ours would
  /// otherwise carry our number), and only the last `maxOwnConfigures` are kept.
  private(set) var ownConfigures: [UInt32: [UInt16]] = [:]
  private var registryDirty = true

  /// No shields yet.
  public init() {}
  static let maxOwnConfigures = 16

  /// target → shield window, for every shield that exists.
  public var shields: [WindowID: UInt32] { entries.mapValues(\.shield) }

  /// Whether `commitUnmaps` has anything to send.
  public var hasPendingUnmaps: Bool { entries.values.contains { $0.pendingUnmap } }

  /// The shields of `targets` that are down (or go down at the next commit): what the
  /// RECORD thread may put up for a new client without asking anyone.
  public func armable(_ targets: [WindowID]) -> (shields: [UInt32], targets: [WindowID]) {
    var out: (shields: [UInt32], targets: [WindowID]) = ([], [])
    for t in targets {
      guard let e = entries[t], e.hidden else { continue }
      out.shields.append(e.shield)
      out.targets.append(t)
    }
    return out
  }

  /// Whether `target`'s shield is up (mapped, or about to be).
  /// The shield of `target`, if it has one.
  public func shield(of target: WindowID) -> UInt32? { entries[target]?.shield }
  public func isUp(_ target: WindowID) -> Bool { entries[target].map { !$0.hidden } ?? false }

  /// Applies `event` and returns what the driver must send, in order.
  public mutating func handle(_ event: Event) -> [Operation] {
    switch event {
    case .shield(let t):
      guard var e = entries[t] else { return [.create(t, mapped: true)] }
      var ops: [Operation] = []
      if e.plain { ops.append(.retile(t, shield: e.shield)) }
      e.hidden = false
      e.pendingUnmap = false
      e.plain = false
      entries[t] = e
      return ops + [.map(e.shield), .raise(e.shield)]
    case .prepare(let t):
      return entries[t] == nil ? [.create(t, mapped: false)] : []
    case .shieldAtOnce(let t):
      return entries[t] == nil ? [.createPlain(t)] : []
    case .unshield(let t):
      guard var e = entries[t], !e.hidden else { return [] }
      e.hidden = true
      e.pendingUnmap = true
      entries[t] = e
      return []
    case .commitUnmaps:
      var ops: [Operation] = []
      for t in entries.keys.sorted() where entries[t]!.pendingUnmap {
        entries[t]!.pendingUnmap = false
        ops.append(.unmap(entries[t]!.shield))
      }
      return ops
    case .markMapped(let t):
      guard var e = entries[t], !e.pendingUnmap else { return [] }
      e.hidden = false
      entries[t] = e
      return []
    case .dropProvisional(let t):
      guard entries[t]?.plain == true else { return [] }
      return handle(.destroy(t))
    case .destroy(let t):
      guard let e = entries.removeValue(forKey: t) else { return [] }
      targetOf[e.shield] = nil
      ownUnmaps[e.shield] = nil
      ownConfigures[e.shield] = nil
      registryDirty = true
      return [.destroy(shield: e.shield, target: t)]
    case .forget(let t):
      // Every destroyed window passes here: only one that had a shield changes the
      // registry (rewriting it for each would be a request and a root PropertyNotify each).
      guard let e = entries.removeValue(forKey: t) else { return [] }
      targetOf[e.shield] = nil
      ownUnmaps[e.shield] = nil
      ownConfigures[e.shield] = nil
      registryDirty = true
      return []
    case .flushRegistry:
      guard registryDirty else { return [] }
      registryDirty = false
      var pairs: [UInt32] = []
      for t in entries.keys.sorted() { pairs += [entries[t]!.shield, t] }
      return [.writeRegistry(pairs)]
    case .adopted(let t, let s):
      entries[t] = Entry(shield: s, hidden: false)
      targetOf[s] = t
      registryDirty = true
      return [.watch(t, shield: s)]
    case .created(let t, let s, let mapped, let plain):
      entries[t] = Entry(shield: s, hidden: !mapped, plain: plain)
      targetOf[s] = t
      registryDirty = true
      return [.watch(t, shield: s)]
    case .unmapSent(let s, let seq):
      ownUnmaps[s, default: []].append(seq)
      return []
    case .unmapNotify(let w, let parent, let seq):
      guard let t = targetOf[w], parent == t else { return [] }
      if let mine = ownUnmaps[w], let i = mine.firstIndex(of: seq) {
        // Our own unshield (events come in request order: earlier entries are stale).
        ownUnmaps[w] = i + 1 < mine.count ? Array(mine[(i + 1)...]) : nil
        return []
      }
      guard let e = entries[t], !e.hidden else { return [] }
      return [.map(w), .lost(t, how: "unmapped by another client")]  // re-assert at once
    case .destroyNotify(let w, let parent, let targetAlive):
      // Only our shield's destruction matters here; the target's own destruction is
      // handled by the watcher's connection (window ids are reused across clients, so a
      // stale DestroyNotify of a target must not touch a newer window's shield).
      guard let t = targetOf[w], parent == t else { return [] }
      targetOf[w] = nil
      ownUnmaps[w] = nil
      ownConfigures[w] = nil
      var wasHidden = false
      if let e = entries[t], e.shield == w {
        wasHidden = e.hidden
        entries[t] = nil
      }
      registryDirty = true
      // Destroyed with its parent (no tampering) when the parent is gone too.
      guard targetAlive, !wasHidden else { return [] }
      return [.lost(t, how: "destroyed by another client")]
    case .childCreated(let w, let parent):
      guard targetOf[w] == nil, let e = entries[parent] else { return [] }
      return [.raise(e.shield)]
    case .childMapped(let w, let parent):
      guard targetOf[w] == nil, w != parent, let e = entries[parent] else { return [] }
      return [.raise(e.shield)]
    case .childRestacked(let w, let parent, let above, let placement, let seq):
      if let t = targetOf[w], t == parent, let e = entries[t], e.shield == w {
        let ours = Self.popOwn(&ownConfigures, w, seq)
        return shieldConfigured(t, e, placement: placement, ours: ours)
      }
      // A sibling restacked directly above our shield: put the shield back on top.
      guard w != parent, targetOf[w] == nil, let e = entries[parent], above == e.shield else { return [] }
      return [.raise(e.shield)]
    case .childCirculated(let w, let parent):
      // We never circulate: our shield moved to the top or bottom by another client, or a
      // sibling moved to the top (above the shield, when it was the lowest).
      guard w != parent, let e = entries[parent] else { return [] }
      let isShield = targetOf[w] == parent
      return [
        .checkStacking(
          parent, shield: e.shield, tampered: isShield && !e.hidden,
          how: "restacked (CirculateWindow) \(Self.unknownClient)")
      ]
    case .reparented(let w, let event, let parent):
      // Reported to the old parent (our target) when our shield is taken out of it.
      guard let t = targetOf[w], t == event, parent != t, let e = entries[t], e.shield == w else { return [] }
      return recreate(t, e, how: "reparented into window 0x\(String(parent, radix: 16)) \(Self.unknownClient)")
    case .shapeChanged(let w, let kind, let shaped):
      // We never shape a shield's bounding or clip region: any such shape is someone else's
      // (a default shape again, `shaped` false, is our own reset). The input shape does not
      // change what is drawn.
      guard shaped, kind < 2, let t = targetOf[w], let e = entries[t], e.shield == w else { return [] }
      let what = kind == 0 ? "bounding" : "clip"
      return [.resetShape(w, kind: kind)] + lostUnlessHidden(t, e, how: "given a \(what) shape \(Self.unknownClient)")
    case .redirected(let w, let how):
      // No event tells us, and X has no request that undoes another client's redirection:
      // a new shield is not redirected.
      guard let t = targetOf[w], let e = entries[t], e.shield == w else { return [] }
      return recreate(t, e, how: how)
    case .configureSent(let s, let seq):
      guard targetOf[s] != nil else { return [] }
      ownConfigures[s, default: []].append(seq)
      if ownConfigures[s]!.count > Self.maxOwnConfigures { ownConfigures[s]!.removeFirst() }
      return []
    case .exposed(let w):
      guard let t = targetOf[w] else { return [] }
      return [.drawLabel(shield: w, target: t)]
    }
  }

  /// A ConfigureNotify of our shield `e` in `t`. Fail safe: its placement is checked
  /// whoever caused it, and its stacking asked of the server (the event does not say
  /// whether the shield is on top); `ours` only decides whether it is reported as tampering.
  private func shieldConfigured(_ t: WindowID, _ e: Entry, placement: Placement, ours: Bool) -> [Operation] {
    if placement != .canonical {
      // Moved, resized or given a border: we never do that.
      return [.replace(e.shield)]
        + lostUnlessHidden(t, e, how: "moved or resized to \(placement.description) \(Self.unknownClient)")
    }
    return [
      .checkStacking(
        t, shield: e.shield, tampered: !ours && !e.hidden, how: "restacked \(Self.unknownClient)")
    ]
  }

  /// Replaces a displaced shield with a new one (mapped as the old one was): the one way
  /// to undo a reparenting or a redirection that does not depend on the old window.
  private mutating func recreate(_ t: WindowID, _ e: Entry, how: String) -> [Operation] {
    entries[t] = nil
    targetOf[e.shield] = nil
    ownUnmaps[e.shield] = nil
    ownConfigures[e.shield] = nil
    registryDirty = true
    return [.discard(e.shield), .create(t, mapped: !e.hidden)] + lostUnlessHidden(t, e, how: how)
  }

  /// A shield that is down shows nothing whatever was done to it: repaired, not reported.
  private func lostUnlessHidden(_ t: WindowID, _ e: Entry, how: String) -> [Operation] {
    e.hidden ? [] : [.lost(t, how: how)]
  }

  /// Whether `seq` is one of ours for `w` (consumed, with the earlier ones: events come
  /// in request order).
  private static func popOwn(_ table: inout [UInt32: [UInt16]], _ w: UInt32, _ seq: UInt16) -> Bool {
    guard let mine = table[w], let i = mine.firstIndex(of: seq) else { return false }
    table[w] = i + 1 < mine.count ? Array(mine[(i + 1)...]) : nil
    return true
  }
}

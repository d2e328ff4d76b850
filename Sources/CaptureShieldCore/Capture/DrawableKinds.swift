// What the daemon knows about clients' own drawables: whether an id is a pixmap or a
// window. `OwnDrawableRead.verdict` needs it for every GetImage/CopyArea of an own drawable;
// asking the server costs a round trip, and a pixmap freed before the question is `.gone`,
// which counts as capture (it might have been a window over a secure one). A client that
// creates a pixmap, reads it back and frees it at once (a toolkit, a test) would then start
// a capture session for nothing.
//
// So the recorded requests keep these facts: CreateWindow (opcode 1) makes an id a window,
// DestroyWindow (4) forgets it, CreatePixmap (53) and Composite NameWindowPixmap make an id
// a pixmap (the naming is itself a capture request; reading the named pixmap back is not a
// read of an own window), FreePixmap (54) forgets it. Only records can be trusted
// this way when every request of the client was seen: a CreatePixmap that names an existing
// window's id fails (BadIDChoice) but is recorded all the same, so a window created before
// the recording began would be taken for a pixmap. Creations therefore count only for
// clients whose start was recorded, and a window mark is never undone by a pixmap request.

/// A recorded request that changes what an id is.
public enum DrawableChange: Sendable, Hashable {
  case createdWindow(UInt32)
  case destroyedWindow(UInt32)
  case createdPixmap(UInt32)
  case freedPixmap(UInt32)
}

/// The kinds of clients' own drawables, learnt from recorded requests and from the server's
/// answers. Pure: the shell feeds it records and lookups. Bounded: a client holds at most
/// `perClientLimit` facts (past that it loses them and its creations stop counting: a
/// window destroyed with its parent leaves its mark behind, since only DestroyWindow of
/// the window itself is seen), all clients together `limit`.
public struct DrawableKinds: Sendable, Hashable {
  /// Learnt facts: `.pixmap` or `.window(nil)` (areas are always asked afresh).
  private var facts: [UInt32: DrawableFact] = [:]
  /// Facts per client (resource-id base).
  private var perClient: [UInt32: Int] = [:]
  /// Resource-id bases of the clients whose every request was recorded (their start was).
  private var seenFromStart: Set<UInt32> = []
  /// The resource-id mask of the server.
  public let resourceMask: UInt32
  /// Facts kept at most; beyond, the client with the most loses its facts and its
  /// creations stop counting (it falls back to lookups).
  public let limit: Int
  /// Facts one client may hold; beyond, it loses them and its creations stop counting.
  public let perClientLimit: Int

  public init(resourceMask: UInt32, limit: Int = 65536, perClientLimit: Int = 4096) {
    self.resourceMask = resourceMask
    self.limit = limit
    self.perClientLimit = perClientLimit
  }

  /// The fact known about `id`, nil when unknown.
  public subscript(id: UInt32) -> DrawableFact? { facts[id] }

  /// The number of facts kept (diagnostics, tests).
  public var count: Int { facts.count }

  /// A client started while recording (RECORD ClientStarted): its requests will all be seen.
  public mutating func clientStarted(_ base: UInt32) {
    forget(client: base)
    seenFromStart.insert(base)
  }

  /// A client went (RECORD ClientDied): its resource-id base goes to the next client.
  public mutating func clientDied(_ base: UInt32) {
    forget(client: base)
  }

  /// A recorded request that creates or frees a drawable.
  public mutating func apply(_ change: DrawableChange) {
    switch change {
    case .createdWindow(let id): set(id, .window(nil))
    case .destroyedWindow(let id):
      // (a DestroyWindow naming a pixmap fails: a pixmap fact stays)
      if case .window? = facts[id] { set(id, nil) }
    case .createdPixmap(let id):
      // A pixmap when the client's every request was seen and the id is not known as a
      // window (a CreatePixmap naming a live window's id fails, BadIDChoice).
      guard seenFromStart.contains(id & ~resourceMask) else { return }
      if case .window? = facts[id] { return }
      set(id, .pixmap)
    case .freedPixmap(let id):
      // (a FreePixmap naming a window fails: a window fact stays)
      if facts[id] == .pixmap { set(id, nil) }
    }
  }

  /// The server's answer to a lookup. `.gone` forgets a pixmap but keeps a window mark: a
  /// pixmap request naming the id later must not turn it into a pixmap unless it was seen.
  public mutating func learned(_ id: UInt32, _ fact: DrawableFact) {
    switch fact {
    case .pixmap: set(id, .pixmap)
    case .window: set(id, .window(nil))
    case .gone:
      if facts[id] == .pixmap { set(id, nil) }
    }
  }

  /// The fact to decide with, from what was known where the read was recorded and the
  /// server's answer now: an id known then as a window that is a pixmap now was destroyed
  /// and its id reused after the read (a window read, then hidden): `.gone`, which counts.
  public static func reconcile(known: DrawableFact?, answer: DrawableFact) -> DrawableFact {
    if case .window? = known, answer == .pixmap { return .gone }
    return answer
  }

  /// Whether the client's creations count (its start was recorded and it did not overflow).
  public func knowsEveryRequest(ofClient base: UInt32) -> Bool { seenFromStart.contains(base) }

  /// Sets or clears one fact, keeping the counts and the bounds.
  private mutating func set(_ id: UInt32, _ fact: DrawableFact?) {
    let base = id & ~resourceMask
    let had = facts[id] != nil
    facts[id] = fact
    switch (had, fact != nil) {
    case (false, true): perClient[base, default: 0] += 1
    case (true, false):
      let n = (perClient[base] ?? 1) - 1
      perClient[base] = n > 0 ? n : nil
    default: break
    }
    if (perClient[base] ?? 0) > perClientLimit {
      forget(client: base)
    } else if facts.count > limit, let biggest = perClient.max(by: { $0.value < $1.value })?.key {
      // the client holding the most loses them and its creations stop counting (windows it
      // made would otherwise be forgotten and later taken for pixmaps)
      forget(client: biggest)
    }
  }

  private mutating func forget(client base: UInt32) {
    seenFromStart.remove(base)
    guard perClient.removeValue(forKey: base) != nil else { return }
    facts = facts.filter { $0.key & ~resourceMask != base }
  }
}

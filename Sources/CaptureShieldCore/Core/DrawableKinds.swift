// What the daemon knows about clients' own drawables: whether an id is a pixmap or a
// window. `OwnDrawableRead.verdict` needs it for every GetImage/CopyArea of an own drawable;
// asking the server costs a round trip, and a pixmap freed before the question is `.gone`,
// which counts as capture (it might have been a window over a secure one). A client that
// creates a pixmap, reads it back and frees it at once (a toolkit, a test) would then start
// a capture session for nothing.
//
// So the recorded requests keep these facts: CreateWindow (opcode 1) makes an id a window,
// CreatePixmap (53) a pixmap, FreePixmap (54) forgets a pixmap. Only records can be trusted
// this way when every request of the client was seen: a CreatePixmap that names an existing
// window's id fails (BadIDChoice) but is recorded all the same, so a window created before
// the recording began would be taken for a pixmap. Creations therefore count only for
// clients whose start was recorded, and a window mark is never undone by a pixmap request.

/// A recorded request that changes what an id is.
public enum DrawableChange: Sendable, Hashable {
  case createdWindow(UInt32)
  case createdPixmap(UInt32)
  case freedPixmap(UInt32)
}

/// The kinds of clients' own drawables, learnt from recorded requests and from the server's
/// answers. Pure: the shell feeds it records and lookups.
public struct DrawableKinds: Sendable, Hashable {
  /// Learnt facts: `.pixmap` or `.window(nil)` (areas are always asked afresh).
  private var facts: [UInt32: DrawableFact] = [:]
  /// Resource-id bases of the clients whose every request was recorded (their start was).
  private var seenFromStart: Set<UInt32> = []
  /// The resource-id mask of the server.
  public let resourceMask: UInt32
  /// Facts kept at most; beyond, the client with the most loses its facts and its
  /// creations stop counting (it falls back to lookups).
  public let limit: Int

  public init(resourceMask: UInt32, limit: Int = 65536) {
    self.resourceMask = resourceMask
    self.limit = limit
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
    case .createdWindow(let id): createdWindow(id)
    case .createdPixmap(let id): createdPixmap(id)
    case .freedPixmap(let id): freedPixmap(id)
    }
  }

  /// A recorded CreateWindow: the id is a window from now on, whatever it was.
  public mutating func createdWindow(_ id: UInt32) {
    facts[id] = .window(nil)
    bound()
  }

  /// A recorded CreatePixmap (which may have failed): a pixmap, when the client's every
  /// request was seen and the id is not known as a window.
  public mutating func createdPixmap(_ id: UInt32) {
    guard seenFromStart.contains(id & ~resourceMask) else { return }
    if case .window = facts[id] { return }
    facts[id] = .pixmap
    bound()
  }

  /// A recorded FreePixmap: a pixmap fact is dropped (a window fact stays: the request
  /// fails on a window).
  public mutating func freedPixmap(_ id: UInt32) {
    if facts[id] == .pixmap { facts[id] = nil }
  }

  /// The server's answer to a lookup. `.gone` forgets a pixmap but keeps a window mark: a
  /// pixmap request naming the id later must not turn it into a pixmap unless it was seen.
  public mutating func learned(_ id: UInt32, _ fact: DrawableFact) {
    switch fact {
    case .pixmap: facts[id] = .pixmap
    case .window: facts[id] = .window(nil)
    case .gone:
      if facts[id] == .pixmap { facts[id] = nil }
    }
    bound()
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

  private mutating func forget(client base: UInt32) {
    seenFromStart.remove(base)
    guard facts.keys.contains(where: { $0 & ~resourceMask == base }) else { return }
    facts = facts.filter { $0.key & ~resourceMask != base }
  }

  /// Past the limit: the client holding the most facts loses them and its creations stop
  /// counting (windows it made would otherwise be forgotten and later taken for pixmaps).
  private mutating func bound() {
    guard facts.count > limit else { return }
    var perClient: [UInt32: Int] = [:]
    for id in facts.keys { perClient[id & ~resourceMask, default: 0] += 1 }
    guard let biggest = perClient.max(by: { $0.value < $1.value })?.key else { return }
    forget(client: biggest)
  }
}

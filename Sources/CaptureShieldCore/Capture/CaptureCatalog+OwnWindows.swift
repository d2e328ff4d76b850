// Reads of a client's own window (docs/security.md, "Known limitations"). A window with background None shows
// whatever the screen holds beneath it, and GetImage on a window returns the screen's pixels
// for its obscured parts too: a client that maps a window of its own over a secure window
// (or below it) and reads that window reads the secure window. So does a copy from such a
// window into an own pixmap, read back later. The catalog hands these requests out
// (`classifyOwnRead`); `OwnDrawableRead.verdict` decides, from what the caller knows about
// the drawables, whether one counts as capture. The caller (the daemon's shell) asks the
// X server for the facts the verdict names, and only then.

/// What the caller knows about a drawable.
public enum DrawableFact: Sendable, Hashable {
  /// A pixmap: it shows no screen pixels by itself.
  case pixmap
  /// A window; its area in root coordinates when just asked (nil: known to be a window,
  /// area not asked).
  case window(ScreenRect?)
  /// Neither exists any more (the server says so): it might have been a window over a
  /// secure one.
  case gone
}

/// A request that reads the client's own drawable (GetImage, MIT-SHM ShmGetImage, CopyArea,
/// CopyPlane), as the catalog decoded it.
public struct OwnDrawableRead: Sendable, Hashable {
  /// The kind reported if it counts: "GetImage(own window)".
  public var kind: String
  /// The drawable read.
  public var source: UInt32
  /// For copies, the drawable written (never equal to `source`: a copy within one window,
  /// scrolling, is not handed out).
  public var destination: UInt32?

  public init(kind: String, source: UInt32, destination: UInt32? = nil) {
    self.kind = kind
    self.source = source
    self.destination = destination
  }

  /// The decision.
  public enum Verdict: Sendable, Hashable {
    /// It read (or may have read) pixels of a secure window: report it as a capture request.
    case capture
    /// It did not.
    case notCapture
    /// Ask the server about these drawables (kind and area), then decide again with the
    /// answers among the facts.
    case lookUp([UInt32])
  }

  /// Whether this read counts as capture.
  ///
  /// - A read of a pixmap, a copy from a pixmap, or a copy into a window, does not (a
  ///   window's pixels copied into another window are on screen, not in the client's
  ///   hands); for those, a fact known earlier (`.pixmap`, `.window(nil)`) suffices, so the
  ///   reads and copies that toolkits make all the time (back buffer to window, GetImage of
  ///   an own pixmap) cost one lookup per drawable, not one per request. The caller keeps
  ///   such facts true: an id becomes a window only by CreateWindow (`createdWindow`).
  /// - A read of a window, or a copy from a window into a pixmap, counts when the window's
  ///   area intersects one of `secureAreas` (asked only then). The window's area must be
  ///   fresh (`.window(area)`): windows move.
  /// - A source that is gone counts (it may have been a window over a secure one), and so
  ///   does a copy into a destination that is gone (a pixmap read back and freed before
  ///   the caller asked).
  ///
  /// - Parameters:
  ///   - facts: what the caller knows, by drawable.
  ///   - secureAreas: the areas of the mapped secure windows (called at most once, only when
  ///     a window's area must be compared).
  ///   - earlierAreas: where the client's top-level windows have been since they were last
  ///     mapped (`TopLevelHistory`): the server carries a window's contents along when it
  ///     moves, so a window mapped over a secure window and moved away still shows it. A
  ///     window read counts when one of these intersects a secure area too (asked only then).
  public func verdict(
    facts: [UInt32: DrawableFact], secureAreas: () -> [ScreenRect], earlierAreas: () -> [ScreenRect] = { [] }
  ) -> Verdict {
    let sourceFact = facts[source]
    if sourceFact == .pixmap { return .notCapture }
    if let destination {
      let destinationFact = facts[destination]
      if case .window = destinationFact { return .notCapture }
      var missing: [UInt32] = []
      if sourceFact == nil || sourceFact == .window(nil) { missing.append(source) }
      if destinationFact == nil { missing.append(destination) }
      if !missing.isEmpty { return .lookUp(missing) }
    }
    switch sourceFact {
    case .gone: return .capture
    case .window(let area?):
      let secure = secureAreas()
      if secure.contains(where: { $0.intersects(area) }) { return .capture }
      if secure.isEmpty { return .notCapture }
      let earlier = earlierAreas()
      return earlier.contains { a in secure.contains { $0.intersects(a) } } ? .capture : .notCapture
    case .pixmap: return .notCapture
    case .window(nil), nil: return .lookUp([source])
    }
  }
}

extension ResolvedCaptureCatalog {
  /// A request that reads the requesting client's own drawable with an entry that
  /// `readsOwnWindows`; nil for every other request, for a copy within one drawable, and for
  /// malformed bytes (never traps). Parameters as in `classify`.
  public func classifyOwnRead(
    _ request: UnsafeRawBufferPointer, clientBase: UInt32, resourceMask: UInt32, bigEndian: Bool = false
  ) -> OwnDrawableRead? {
    guard let r = RequestReader(request, bigEndian: bigEndian) else { return nil }
    let key = r.major < 128 ? UInt16(r.major) << 8 : UInt16(r.major) << 8 | UInt16(r.minorOrData)
    guard let candidates = table[key] else { return nil }
    for entry in candidates where entry.readsOwnWindows {
      guard case .field(let offset, _, _)? = entry.targets.first, let source = r.u32(offset), source != 0,
        source & ~resourceMask == clientBase
      else { continue }
      var destination: UInt32?
      if case .field(let offset, _, _)? = entry.destination {
        guard let d = r.u32(offset), d != source else { return nil }
        destination = d
      }
      return OwnDrawableRead(kind: entry.ownWindowKind, source: source, destination: destination)
    }
    return nil
  }

  public func classifyOwnRead(
    _ request: [UInt8], clientBase: UInt32, resourceMask: UInt32, bigEndian: Bool = false
  ) -> OwnDrawableRead? {
    request.withUnsafeBytes {
      classifyOwnRead($0, clientBase: clientBase, resourceMask: resourceMask, bigEndian: bigEndian)
    }
  }

  /// The core opcode of CreateWindow. The detector records it whatever the catalog holds:
  /// it is the only request that turns an id into a window, so a drawable once found to be
  /// a pixmap stays one until a CreateWindow names its id (`drawableChange`), which keeps
  /// the owner's cache of drawable kinds true without asking the server for every read.
  public static let createWindowOpcode: UInt8 = 1

  /// The core opcodes of CreatePixmap and FreePixmap, recorded with CreateWindow
  /// (`DrawableKinds`): a pixmap a client creates, reads and frees at once is known as one
  /// without asking the server, which may already answer "gone".
  public static let pixmapOpcodes: ClosedRange<UInt8> = 53...54

  /// The core opcode of DestroyWindow, recorded with them: it forgets a window's mark.
  public static let destroyWindowOpcode: UInt8 = 4

  /// Whether the catalog hands out reads of own drawables, and so records the requests that
  /// create windows and pixmaps (`recordedCoreRanges`).
  public var recordsCreations: Bool { activeEntries.contains(where: \.readsOwnWindows) }

  /// The core ranges the detector records: `coreRanges`, plus CreateWindow, DestroyWindow,
  /// CreatePixmap and FreePixmap when the catalog hands out reads of own drawables (not at all under
  /// server enforcement, for one).
  public var recordedCoreRanges: [ClosedRange<UInt8>] {
    var ops = Set(coreRanges.flatMap { Array($0) })
    if recordsCreations {
      ops.insert(Self.createWindowOpcode)
      ops.insert(Self.destroyWindowOpcode)
      ops.formUnion(Self.pixmapOpcodes)
    }
    return Self.intervals(ops)
  }

  /// The id a recorded request creates or frees, for `DrawableKinds`: CreateWindow's `wid`,
  /// DestroyWindow's `window`, CreatePixmap's `pid`, FreePixmap's `pixmap`; nil for every other request and for
  /// malformed bytes.
  public static func drawableChange(_ request: UnsafeRawBufferPointer, bigEndian: Bool = false) -> DrawableChange? {
    guard let r = RequestReader(request, bigEndian: bigEndian) else { return nil }
    switch r.major {
    case createWindowOpcode: return r.u32(4).map { .createdWindow($0) }
    case destroyWindowOpcode: return r.u32(4).map { .destroyedWindow($0) }
    case pixmapOpcodes.lowerBound: return r.u32(4).map { .createdPixmap($0) }
    case pixmapOpcodes.upperBound: return r.u32(4).map { .freedPixmap($0) }
    default: return nil
    }
  }

  public static func drawableChange(_ request: [UInt8], bigEndian: Bool = false) -> DrawableChange? {
    request.withUnsafeBytes { drawableChange($0, bigEndian: bigEndian) }
  }

  /// `drawableChange`, plus the pixmaps this catalog's requests name (`namesPixmapAt`:
  /// Composite NameWindowPixmap), which the detector records as capture requests anyway.
  /// A named pixmap counts as `createdPixmap`: a GetImage of it afterwards reads a pixmap,
  /// not an own window (the naming was reported already).
  public func drawableChange(recorded request: UnsafeRawBufferPointer, bigEndian: Bool = false) -> DrawableChange? {
    if let change = Self.drawableChange(request, bigEndian: bigEndian) { return change }
    guard let r = RequestReader(request, bigEndian: bigEndian), r.major >= 128,
      let candidates = table[UInt16(r.major) << 8 | UInt16(r.minorOrData)],
      let offset = candidates.lazy.compactMap(\.namesPixmapAt).first, let pixmap = r.u32(offset)
    else { return nil }
    return .createdPixmap(pixmap)
  }

  public func drawableChange(recorded request: [UInt8], bigEndian: Bool = false) -> DrawableChange? {
    request.withUnsafeBytes { drawableChange(recorded: $0, bigEndian: bigEndian) }
  }
}

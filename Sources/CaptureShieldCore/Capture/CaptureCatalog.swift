// The catalog of X requests by which a client can obtain pixels of a drawable it does not
// own, and the pure decoding of what the RECORD extension delivers. No X imports: the
// detector (Record/CaptureDetector.swift) feeds raw bytes in, tests feed hand-built bytes in.
//
// Conventions used throughout:
// - Offsets are byte offsets in the request as the protocol defines it (byte 0 is the major
//   opcode, byte 1 the minor opcode or a core data byte, bytes 2-3 the length in 4-byte
//   units). A BIG-REQUESTS request (length 0, then a 32-bit length) moves every field at
//   offset 4 or later by 4 bytes; the decoder accounts for that.
// - A drawable/picture/window is "foreign" when `xid & ~resourceMask != clientBase`. The root
//   window and other server resources (base 0) are foreign to every client.

/// What a catalogued request does for a capturing client.
public enum CaptureRole: String, Sendable, Hashable, Codable {
  /// The request copies pixels of the target into something the client can read (or makes
  /// them directly readable). The capture event itself.
  case readsPixels
  /// The request reads no foreign pixels by itself but marks a capture tool (or prepares a
  /// capture: grabbing the server, attaching shared memory, reading the cursor image).
  case indicator
}

/// One request in the catalog.
public struct CaptureCatalogEntry: Sendable, Hashable {
  /// Requests whose source can only be a pixmap or bitmap (see `CaptureCatalog.windowReaders`).
  static let pixmapOnly: Set<String> = [
    "core 1", "core 2", "core 55", "core 56", "core 93", "RENDER 27", "XFIXES 6", "SHAPE 2",
  ]

  /// Whether the request's source can only be a pixmap or bitmap, never a window.
  public var readsOnlyPixmaps: Bool {
    switch opcode {
    case .core(let op): return Self.pixmapOnly.contains("core \(op)")
    case .extension(let name, let minor): return Self.pixmapOnly.contains("\(name) \(minor)")
    }
  }

  /// Where the request's opcodes come from.
  public enum Opcode: Sendable, Hashable {
    /// A core request: the major opcode is a protocol constant (1...127).
    case core(UInt8)
    /// An extension request: the major opcode is assigned by the server (QueryExtension at
    /// run time); the minor opcode is the extension's constant.
    case `extension`(String, minor: UInt8)
  }

  /// Where the drawable (window, pixmap, picture) the request reads from is.
  public enum TargetSource: Sendable, Hashable {
    /// A 32-bit XID at this byte offset (`name` as in the protocol, for the human table).
    /// 0 (None) is no target.
    case field(offset: Int, name: String, label: String? = nil)
    /// A 32-bit XID in a value list: the 32-bit value mask is at `maskOffset`, one 4-byte value
    /// per set bit follows it in bit order; this is the value for `bit`. Values 0 and 1 (None,
    /// ParentRelative, CopyFromParent) are no target.
    case valueListItem(maskOffset: Int, bit: Int, label: String)

    public var label: String? {
      switch self {
      case .field(_, _, let label): return label
      case .valueListItem(_, _, let label): return label
      }
    }

    /// For the human table: "src-drawable at 4", "tile (value-list bit 10, mask at 12)".
    public var summary: String {
      switch self {
      case .field(let offset, let name, _): return "\(name) at \(offset)"
      case .valueListItem(let maskOffset, let bit, let label):
        return "\(label) (value-list bit \(bit), mask at \(maskOffset))"
      }
    }
  }

  /// Extra condition on a byte of the request (e.g. Composite's `update` mode).
  public struct ByteCondition: Sendable, Hashable {
    public var offset: Int
    public var value: UInt8
    public init(offset: Int, value: UInt8) {
      self.offset = offset
      self.value = value
    }
  }

  public var opcode: Opcode
  /// The protocol's name of the request, e.g. "GetImage" (MIT-SHM's is also "GetImage").
  public var requestName: String
  /// What the detector reports, e.g. "MIT-SHM ShmGetImage". A labelled target source adds
  /// "(label)": "CreateGC(tile)", "RENDER Composite(mask)".
  public var kind: String
  public var role: CaptureRole
  /// Whether a report of this request should start a capture session. Every `.readsPixels`
  /// entry does; indicators do not, except manual redirection (see `canBypassShield`).
  public var startsSession: Bool
  /// Where the source drawable is, in order of preference. Empty: the request has no target
  /// and is reported whenever it is seen (GrabServer, GetCursorImage, ...).
  public var targets: [TargetSource]
  public var condition: ByteCondition?
  /// Manual redirection: `CaptureRequest.bypassesShield` is set when the caller says the
  /// target is secure.
  public var canBypassShield: Bool
  /// Ordinary applications send this request constantly (whatever its target), so recording
  /// it costs the server and the detector noticeably more than recording rare requests.
  public var frequentInNormalUse: Bool
  /// Reading the client's *own* window counts too while it overlaps a secure window: a
  /// window with background None (or one below the secure window) shows the screen's pixels,
  /// so GetImage on it reads what it covers. `ResolvedCaptureCatalog.classifyOwnRead` hands
  /// such requests to the caller, which decides with the windows' areas
  /// (`OwnDrawableRead.verdict`). Reported as "kind(own window)".
  public var readsOwnWindows: Bool
  /// For copies: where the destination drawable is (CopyArea's dst-drawable). A copy from an
  /// own window into another own window is not reported; into an own pixmap it is the first
  /// half of a two-step read (the pixmap is then read back).
  public var destination: TargetSource?
  /// Counts only when the target is secure (or a shield), per the caller's `isSecure`:
  /// ReparentWindow, which window managers send for every window they manage (the caller
  /// also leaves out the window manager's own).
  public var secureTargetsOnly: Bool
  /// Counts only when the window at this offset is one of the client's own (ReparentWindow's
  /// new parent: into a window of its own the client can read it; to the root, as a window
  /// manager does at its exit, nothing becomes readable).
  public var ownWindowAt: Int?
  /// Where the request names a new pixmap of the client's own (Composite NameWindowPixmap's
  /// `pixmap`): a later read of that pixmap is not a read of an own window (`DrawableKinds`);
  /// the naming itself is the capture.
  public var namesPixmapAt: Int?
  /// Why it counts, one line.
  public var reason: String

  public init(
    _ opcode: Opcode, _ requestName: String, kind: String, role: CaptureRole, startsSession: Bool? = nil,
    targets: [TargetSource] = [], condition: ByteCondition? = nil, canBypassShield: Bool = false,
    frequent: Bool = false, readsOwnWindows: Bool = false, destination: TargetSource? = nil,
    secureTargetsOnly: Bool = false, ownWindowAt: Int? = nil, namesPixmapAt: Int? = nil, reason: String
  ) {
    self.ownWindowAt = ownWindowAt
    self.namesPixmapAt = namesPixmapAt
    self.opcode = opcode
    self.requestName = requestName
    self.kind = kind
    self.role = role
    self.startsSession = startsSession ?? (role == .readsPixels)
    self.targets = targets
    self.condition = condition
    self.canBypassShield = canBypassShield
    self.frequentInNormalUse = frequent
    self.readsOwnWindows = readsOwnWindows
    self.destination = destination
    self.secureTargetsOnly = secureTargetsOnly
    self.reason = reason
  }

  /// "core" or the extension's name as QueryExtension knows it.
  public var extensionName: String {
    switch opcode {
    case .core: return "core"
    case .extension(let name, _): return name
    }
  }

  /// Human description of where the major opcode comes from.
  public var majorOpcodeSource: String {
    switch opcode {
    case .core(let op): return "core constant \(op)"
    case .extension: return "extension, queried at run time"
    }
  }

  public var minorOpcode: UInt8? {
    if case .extension(_, let minor) = opcode { return minor }
    return nil
  }

  /// The kind reported for a read of the client's own window ("GetImage(own window)").
  public var ownWindowKind: String { "\(kind)(own window)" }

  /// Every kind string this entry can report.
  public var allKinds: [String] {
    var kinds: [String] = []
    if targets.isEmpty || targets.contains(where: { $0.label == nil }) { kinds.append(kind) }
    for t in targets { if let l = t.label { kinds.append("\(kind)(\(l))") } }
    if readsOwnWindows { kinds.append(ownWindowKind) }
    return kinds
  }
}

/// The catalog: every request by which a client can obtain pixels of a drawable it does not
/// own (`.readsPixels`), plus the requests that mark a capture tool (`.indicator`).
public struct CaptureCatalog: Sendable, Hashable {
  public var entries: [CaptureCatalogEntry]

  public init(entries: [CaptureCatalogEntry]) { self.entries = entries }

  /// The entries that can read a *window's* pixels: those whose source may be a window
  /// (GetImage, CopyArea, ShmGetImage, NameWindowPixmap, RENDER pictures, ...). Dropped:
  /// requests whose source can only be a pixmap or bitmap (window background/border
  /// pixmaps, GC tiles and stipples, cursors, XFIXES regions from bitmaps, SHAPE masks):
  /// a secure window's pixels reach a pixmap only through one of the kept requests, by
  /// the client that owns that pixmap. The daemon records this set: CreateWindow and
  /// CreateGC are among the most frequent requests of every client, and recording them
  /// cost the X server most of its overhead.
  public var windowReaders: CaptureCatalog { filtered { !$0.readsOnlyPixmaps } }

  /// Whether the entry that reports `kind` can only read a pixmap (a GC tile or stipple, a
  /// window background, a cursor, a region or shape from a bitmap; see `windowReaders`).
  /// Such a request matters when the pixmap may hold a secure window's pixels: when it
  /// belongs to a client that may name window pixmaps without starting a session (an
  /// allowed compositor).
  public func readsOnlyPixmaps(kind: String) -> Bool { entry(forKind: kind)?.readsOnlyPixmaps ?? false }

  /// Entries for which `isIncluded` is true.
  public func filtered(_ isIncluded: (CaptureCatalogEntry) -> Bool) -> CaptureCatalog {
    CaptureCatalog(entries: entries.filter(isIncluded))
  }

  /// Without the requests ordinary applications send constantly (CopyArea, ChangeGC, RENDER
  /// Composite/Trapezoids/CompositeGlyphs): cheaper to record, blind to captures made only
  /// with those.
  public var withoutFrequentRequests: CaptureCatalog { filtered { !$0.frequentInNormalUse } }

  /// Only the entries that start a capture session.
  public var sessionStartersOnly: CaptureCatalog { filtered { $0.startsSession } }

  /// Indicators recorders send before capturing again on a connection they keep: OBS
  /// attaches its shared-memory segment when a source starts (then reads at its next
  /// frame), window capture redirects before it names a pixmap, VNC servers watch the root
  /// with DAMAGE, import and scrot grab the server. Reported as `capturePrelude`: they wake
  /// an idle session (`capture.idle`) and start none. Rare in ordinary applications.
  public static let preludeKinds: Set<String> = [
    "MIT-SHM Attach", "MIT-SHM AttachFd", "MIT-SHM CreateSegment", "Composite RedirectSubwindows(Automatic)",
    "Composite RedirectWindow(Automatic)", "DAMAGE Create", "GrabServer",
  ]

  /// Only the prelude entries (`preludeKinds`).
  public var preludesOnly: CaptureCatalog { filtered { Self.preludeKinds.contains($0.kind) } }

  /// The extensions whose major opcodes the catalog needs.
  public var extensionNames: [String] {
    var seen: Set<String> = []
    var out: [String] = []
    for e in entries {
      if case .extension(let name, _) = e.opcode, seen.insert(name).inserted { out.append(name) }
    }
    return out
  }

  /// The entry that reports `kind` (including labelled variants such as "CreateGC(tile)").
  public func entry(forKind kind: String) -> CaptureCatalogEntry? {
    entries.first { $0.allKinds.contains(kind) }
  }

  /// Whether a reported request should start a capture session: its entry says so, or it
  /// bypasses a shield. Unknown kinds start one (fail safe).
  public func startsSession(_ request: CaptureRequest) -> Bool {
    if request.bypassesShield { return true }
    return entry(forKind: request.kind)?.startsSession ?? true
  }

  /// The human table (Markdown), one row per entry; `docs/capture-requests.md` embeds it.
  public func markdownTable() -> String {
    var out =
      "| Kind(s) reported | Extension | Request | Major opcode | Minor | Source field (byte offset) | Role | Starts a session | Why it counts |\n"
      + "|---|---|---|---|---|---|---|---|---|\n"
    for e in entries { out += Self.markdownRow(e) }
    return out
  }

  // One row. A separate function: building all rows in one loop of string arrays
  // crashed the Swift 6.3 optimizer (CopyPropagation) in release builds.
  private static func markdownRow(_ e: CaptureCatalogEntry) -> String {
    let minor = e.minorOpcode.map { String($0) } ?? "-"
    var field = "none"
    if !e.targets.isEmpty {
      field = ""
      for (i, t) in e.targets.enumerated() { field += (i == 0 ? "" : "; ") + t.summary }
    }
    if let d = e.destination { field += "; destination " + d.summary }
    let role = e.role == .readsPixels ? "reads pixels" : "indicator"
    var session = e.startsSession ? "yes" : "no"
    if e.canBypassShield { session += " (bypass when the target is secure)" }
    if e.secureTargetsOnly { session += " (only when the target is secure, not by the window manager)" }
    if e.readsOwnWindows { session += "; on an own window: when it overlaps a secure window" }
    var why = e.reason
    if e.frequentInNormalUse { why += " *(frequent in normal use)*" }
    var kinds = ""
    for (i, k) in e.allKinds.enumerated() { kinds += (i == 0 ? "" : ", ") + "`" + k + "`" }
    return "| " + kinds + " | " + e.extensionName + " | " + e.requestName + " | " + e.majorOpcodeSource + " | "
      + minor + " | " + field + " | " + role + " | " + session + " | " + why + " |\n"
  }

  /// Binds the catalog to a server's extension major opcodes (name -> major opcode, from
  /// QueryExtension). Entries of absent extensions are dropped.
  public func resolved(extensions: [String: UInt8]) -> ResolvedCaptureCatalog {
    ResolvedCaptureCatalog(catalog: self, extensions: extensions)
  }

  /// One-shot classification (resolves the catalog on every call; the detector keeps a
  /// `ResolvedCaptureCatalog` instead). See `ResolvedCaptureCatalog.classify`.
  public func classify(
    _ request: [UInt8], extensions: [String: UInt8], clientBase: UInt32, resourceMask: UInt32,
    bigEndian: Bool = false, isSecure: (UInt32) -> Bool = { _ in false }
  ) -> CaptureRequest? {
    resolved(extensions: extensions).classify(
      request, clientBase: clientBase, resourceMask: resourceMask, bigEndian: bigEndian, isSecure: isSecure)
  }
}

/// A catalog bound to one server's extension opcodes: an opcode table for fast lookup.
public struct ResolvedCaptureCatalog: Sendable {
  public let catalog: CaptureCatalog
  public let extensions: [String: UInt8]
  /// (major << 8 | minor) -> entries; core requests use minor 0.
  let table: [UInt16: [CaptureCatalogEntry]]
  /// The kinds of the entries that count only on secure targets (ReparentWindow): the
  /// caller leaves out the window manager's.
  public let secureTargetsOnlyKinds: Set<String>

  init(catalog: CaptureCatalog, extensions: [String: UInt8]) {
    self.catalog = catalog
    self.extensions = extensions
    secureTargetsOnlyKinds = Set(catalog.entries.filter(\.secureTargetsOnly).flatMap(\.allKinds))
    var table: [UInt16: [CaptureCatalogEntry]] = [:]
    for e in catalog.entries {
      switch e.opcode {
      case .core(let op):
        guard op >= 1, op <= 127 else { continue }
        table[UInt16(op) << 8, default: []].append(e)
      case .extension(let name, let minor):
        guard let major = extensions[name], major >= 128 else { continue }
        table[UInt16(major) << 8 | UInt16(minor), default: []].append(e)
      }
    }
    self.table = table
  }

  /// The entries that apply on this server (absent extensions dropped).
  public var activeEntries: [CaptureCatalogEntry] {
    catalog.entries.filter { e in
      if case .extension(let name, _) = e.opcode { return (extensions[name] ?? 0) >= 128 }
      return true
    }
  }

  /// Core opcodes to record, as contiguous inclusive intervals.
  public var coreRanges: [ClosedRange<UInt8>] {
    var ops: Set<UInt8> = []
    for e in activeEntries { if case .core(let op) = e.opcode { ops.insert(op) } }
    return Self.intervals(ops)
  }

  /// Extension requests to record: (major opcode, contiguous inclusive minor interval).
  public var extensionRanges: [(major: UInt8, minors: ClosedRange<UInt8>)] {
    var byMajor: [UInt8: Set<UInt8>] = [:]
    for e in activeEntries {
      if case .extension(let name, let minor) = e.opcode, let major = extensions[name] {
        byMajor[major, default: []].insert(minor)
      }
    }
    return byMajor.keys.sorted().flatMap { major in Self.intervals(byMajor[major]!).map { (major, $0) } }
  }

  static func intervals(_ values: Set<UInt8>) -> [ClosedRange<UInt8>] {
    var out: [ClosedRange<UInt8>] = []
    for v in values.sorted() {
      if let last = out.last, last.upperBound &+ 1 == v, last.upperBound < 255 {
        out[out.count - 1] = last.lowerBound...v
      } else {
        out.append(v...v)
      }
    }
    return out
  }

  /// Classifies one recorded request.
  ///
  /// - Parameters:
  ///   - request: the request as the client sent it (as RECORD delivers it with no element
  ///     headers): major opcode, minor opcode or data byte, length, fields.
  ///   - clientBase: the requesting client's resource-id base (RECORD's `id_base`).
  ///   - resourceMask: the server's resource-id mask (from the connection setup).
  ///   - bigEndian: the byte order of the request (the client's). RECORD's `client_swapped`
  ///     tells it relative to the recording connection.
  ///   - isSecure: whether a window is secure (or a shield): decides `bypassesShield` of a
  ///     manual redirection.
  /// - Returns: the capture request, or nil when the request is not in the catalog, targets
  ///   only the client's own resources, or is malformed (never traps, whatever the bytes).
  public func classify(
    _ request: UnsafeRawBufferPointer, clientBase: UInt32, resourceMask: UInt32, bigEndian: Bool = false,
    isSecure: (UInt32) -> Bool
  ) -> CaptureRequest? {
    guard let r = RequestReader(request, bigEndian: bigEndian) else { return nil }
    let key = r.major < 128 ? UInt16(r.major) << 8 : UInt16(r.major) << 8 | UInt16(r.minorOrData)
    guard let candidates = table[key] else { return nil }
    for entry in candidates {
      if let c = entry.condition {
        guard let b = r.u8(c.offset), b == c.value else { continue }
      }
      if let offset = entry.ownWindowAt {
        guard let w = r.u32(offset), w & ~resourceMask == clientBase else { continue }
      }
      if entry.targets.isEmpty { return CaptureRequest(kind: entry.kind) }
      for source in entry.targets {
        let xid: UInt32?
        switch source {
        case .field(let offset, _, _):
          xid = r.u32(offset).flatMap { $0 == 0 ? nil : $0 }
        case .valueListItem(let maskOffset, let bit, _):
          xid = r.valueListItem(maskOffset: maskOffset, bit: bit).flatMap { $0 <= 1 ? nil : $0 }
        }
        guard let target = xid, target & ~resourceMask != clientBase else { continue }
        if entry.secureTargetsOnly && !isSecure(target) { continue }
        let kind = source.label.map { "\(entry.kind)(\($0))" } ?? entry.kind
        return CaptureRequest(kind: kind, target: target, bypassesShield: entry.canBypassShield && isSecure(target))
      }
    }
    return nil
  }

  public func classify(
    _ request: [UInt8], clientBase: UInt32, resourceMask: UInt32, bigEndian: Bool = false,
    isSecure: (UInt32) -> Bool = { _ in false }
  ) -> CaptureRequest? {
    request.withUnsafeBytes {
      classify($0, clientBase: clientBase, resourceMask: resourceMask, bigEndian: bigEndian, isSecure: isSecure)
    }
  }
}

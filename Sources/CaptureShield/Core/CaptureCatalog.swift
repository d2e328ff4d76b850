// The catalog of X requests by which a client can obtain pixels of a drawable it does not
// own, and the pure decoding of what the RECORD extension delivers. No X imports: the
// detector (X/CaptureDetector.swift) feeds raw bytes in, tests feed hand-built bytes in.
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
  /// Why it counts, one line.
  public var reason: String

  public init(
    _ opcode: Opcode, _ requestName: String, kind: String, role: CaptureRole, startsSession: Bool? = nil,
    targets: [TargetSource] = [], condition: ByteCondition? = nil, canBypassShield: Bool = false,
    frequent: Bool = false, reason: String
  ) {
    self.opcode = opcode
    self.requestName = requestName
    self.kind = kind
    self.role = role
    self.startsSession = startsSession ?? (role == .readsPixels)
    self.targets = targets
    self.condition = condition
    self.canBypassShield = canBypassShield
    self.frequentInNormalUse = frequent
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

  /// Every kind string this entry can report.
  public var allKinds: [String] {
    var kinds: [String] = []
    if targets.isEmpty || targets.contains(where: { $0.label == nil }) { kinds.append(kind) }
    for t in targets { if let l = t.label { kinds.append("\(kind)(\(l))") } }
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
  public var windowReaders: CaptureCatalog {
    let pixmapOnly: Set<String> = [
      "core 1", "core 2", "core 55", "core 56", "core 93", "RENDER 27", "XFIXES 6", "SHAPE 2",
    ]
    return filtered { e in
      switch e.opcode {
      case .core(let op): return !pixmapOnly.contains("core \(op)")
      case .extension(let name, let minor): return !pixmapOnly.contains("\(name) \(minor)")
      }
    }
  }

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
    let role = e.role == .readsPixels ? "reads pixels" : "indicator"
    var session = e.startsSession ? "yes" : "no"
    if e.canBypassShield { session += " (bypass when the target is secure)" }
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

  init(catalog: CaptureCatalog, extensions: [String: UInt8]) {
    self.catalog = catalog
    self.extensions = extensions
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

/// Bounds-checked reads from one request. Fails (nil) instead of trapping.
struct RequestReader {
  let bytes: UnsafeRawBufferPointer
  let bigEndian: Bool
  /// BIG-REQUESTS form: fields at offset >= 4 are 4 bytes later.
  let shift: Int
  let major: UInt8
  let minorOrData: UInt8

  /// nil when the bytes are not one complete request (short, length 0 without an extended
  /// length, declared length longer than the bytes).
  init?(_ bytes: UnsafeRawBufferPointer, bigEndian: Bool) {
    guard bytes.count >= 4 else { return nil }
    self.bigEndian = bigEndian
    major = bytes[0]
    minorOrData = bytes[1]
    let length16 = Self.load16(bytes, 2, bigEndian)
    let total: Int
    if length16 != 0 {
      total = Int(length16) * 4
      shift = 0
    } else {
      guard bytes.count >= 8 else { return nil }
      let length32 = Self.load32(bytes, 4, bigEndian)
      guard length32 >= 2, length32 <= UInt32(Int32.max / 4) else { return nil }
      total = Int(length32) * 4
      shift = 4
    }
    guard total <= bytes.count else { return nil }
    self.bytes = UnsafeRawBufferPointer(rebasing: bytes[0..<total])
  }

  func position(_ offset: Int) -> Int { offset >= 4 ? offset + shift : offset }

  func u8(_ offset: Int) -> UInt8? {
    let p = position(offset)
    guard p >= 0, p < bytes.count else { return nil }
    return bytes[p]
  }

  func u32(_ offset: Int) -> UInt32? {
    let p = position(offset)
    guard p >= 0, p <= bytes.count - 4 else { return nil }
    return Self.load32(bytes, p, bigEndian)
  }

  func valueListItem(maskOffset: Int, bit: Int) -> UInt32? {
    guard bit >= 0, bit < 32, let mask = u32(maskOffset), mask & (1 << UInt32(bit)) != 0 else { return nil }
    let index = (mask & ((1 << UInt32(bit)) - 1)).nonzeroBitCount
    return u32(maskOffset + 4 + 4 * index)
  }

  static func load16(_ b: UnsafeRawBufferPointer, _ p: Int, _ big: Bool) -> UInt16 {
    let (x, y) = (UInt16(b[p]), UInt16(b[p + 1]))
    return big ? x << 8 | y : y << 8 | x
  }

  static func load32(_ b: UnsafeRawBufferPointer, _ p: Int, _ big: Bool) -> UInt32 {
    let v = (UInt32(b[p]), UInt32(b[p + 1]), UInt32(b[p + 2]), UInt32(b[p + 3]))
    return big ? v.0 << 24 | v.1 << 16 | v.2 << 8 | v.3 : v.3 << 24 | v.2 << 16 | v.1 << 8 | v.0
  }
}

// MARK: - RECORD data

/// One reply of RECORD EnableContext, decoded. The header is in the recording connection's
/// byte order (native); the data in the recorded client's (see `dataIsBigEndian`).
public struct RecordedReply: Sendable, Hashable {
  public enum Category: UInt8, Sendable, Hashable {
    case fromServer = 0
    case fromClient = 1
    case clientStarted = 2
    case clientDied = 3
    case startOfData = 4
    case endOfData = 5
  }
  /// nil for a category this code does not know.
  public var category: Category?
  public var elementHeader: UInt8
  public var clientSwapped: Bool
  /// Resource-id base of the recorded client (0 for StartOfData/EndOfData).
  public var idBase: UInt32
  /// Server time (ms) when the server started this reply.
  public var serverTime: UInt32
  /// Byte range of the data (after the 32-byte header) in the buffer given to `decode`.
  public var data: Range<Int>

  /// Whether the recorded data is big-endian, given the recording connection's order.
  public func dataIsBigEndian(hostIsBigEndian: Bool = 1.bigEndian == 1) -> Bool {
    clientSwapped != hostIsBigEndian
  }

  /// Decodes the 32-byte header of a RECORD reply; nil when it is not one. The data range is
  /// clamped to the bytes given.
  public static func decode(_ reply: UnsafeRawBufferPointer, hostIsBigEndian: Bool = 1.bigEndian == 1)
    -> RecordedReply?
  {
    guard reply.count >= 32, reply[0] == 1 else { return nil }
    let length = RequestReader.load32(reply, 4, hostIsBigEndian)
    let declared = UInt64(length) * 4
    let end = 32 + Int(min(declared, UInt64(reply.count - 32)))
    return RecordedReply(
      category: Category(rawValue: reply[1]), elementHeader: reply[8], clientSwapped: reply[9] != 0,
      idBase: RequestReader.load32(reply, 12, hostIsBigEndian),
      serverTime: RequestReader.load32(reply, 16, hostIsBigEndian), data: 32..<end)
  }

  /// Calls `body` with each complete request in FromClient data (RECORD concatenates the
  /// requests of one client into one reply), in order. Stops at the first malformed or
  /// truncated one. Element headers (timestamps, sequence numbers) must be off.
  /// - Returns: the number of bytes consumed (less than `data.count` when it stopped early).
  @discardableResult
  public static func forEachRequest(
    in data: UnsafeRawBufferPointer, bigEndian: Bool, _ body: (UnsafeRawBufferPointer) -> Void
  ) -> Int {
    var p = 0
    while data.count - p >= 4 {
      let length16 = RequestReader.load16(data, p + 2, bigEndian)
      var size: Int
      if length16 != 0 {
        size = Int(length16) * 4
      } else {
        guard data.count - p >= 8 else { return p }
        let length32 = RequestReader.load32(data, p + 4, bigEndian)
        guard length32 >= 2, length32 <= UInt32(Int32.max / 4) else { return p }
        size = Int(length32) * 4
      }
      guard size <= data.count - p else { return p }
      body(UnsafeRawBufferPointer(rebasing: data[p..<(p + size)]))
      p += size
    }
    return p
  }
}

// MARK: - The standard catalog

extension CaptureCatalog {
  /// Every request on Debian's Xvfb (and Xorg's DRI2/DRI3) by which a client can obtain
  /// pixels of a drawable it does not own, plus the indicators. `docs/capture-requests.md`
  /// is the human version of this list; keep them together.
  public static let standard = CaptureCatalog(entries: [
    // MARK: Core protocol
    .init(
      .core(73), "GetImage", kind: "GetImage", role: .readsPixels, targets: [.field(offset: 4, name: "drawable")],
      reason: "returns the drawable's pixels in the reply (xwd, import, most toolkits' screenshot code)"),
    .init(
      .core(62), "CopyArea", kind: "CopyArea", role: .readsPixels, targets: [.field(offset: 4, name: "src-drawable")],
      frequent: true,
      reason:
        "copies pixels of the source drawable into one the client can read back (own pixmap, or a window of a helper)"),
    .init(
      .core(63), "CopyPlane", kind: "CopyPlane", role: .readsPixels, targets: [.field(offset: 4, name: "src-drawable")],
      reason: "copies one bit plane of the source drawable: repeated 24 times it is a full copy"),
    .init(
      .core(55), "CreateGC", kind: "CreateGC", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 12, bit: 10, label: "tile"),
        .valueListItem(maskOffset: 12, bit: 11, label: "stipple"),
        .valueListItem(maskOffset: 12, bit: 19, label: "clip-mask"),
      ],
      reason: "a foreign pixmap as tile/stipple/clip mask: any fill into an own drawable then copies its pixels"),
    .init(
      .core(56), "ChangeGC", kind: "ChangeGC", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 8, bit: 10, label: "tile"), .valueListItem(maskOffset: 8, bit: 11, label: "stipple"),
        .valueListItem(maskOffset: 8, bit: 19, label: "clip-mask"),
      ],
      frequent: true, reason: "as CreateGC"),
    .init(
      .core(1), "CreateWindow", kind: "CreateWindow", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 28, bit: 0, label: "background-pixmap"),
        .valueListItem(maskOffset: 28, bit: 2, label: "border-pixmap"),
      ],
      reason: "an own window tiled with a foreign pixmap shows its pixels; GetImage on the own window reads them"),
    .init(
      .core(2), "ChangeWindowAttributes", kind: "ChangeWindowAttributes", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 8, bit: 0, label: "background-pixmap"),
        .valueListItem(maskOffset: 8, bit: 2, label: "border-pixmap"),
      ],
      reason: "as CreateWindow"),
    .init(
      .core(93), "CreateCursor", kind: "CreateCursor", role: .readsPixels,
      targets: [.field(offset: 8, name: "source"), .field(offset: 12, name: "mask", label: "mask")],
      reason: "a cursor made from a foreign (depth-1) pixmap; XFIXES GetCursorImage reads it back"),
    .init(
      .core(36), "GrabServer", kind: "GrabServer", role: .indicator,
      reason: "freezes every other client, the watcher included, while the tool captures (import, scrot)"),

    // MARK: MIT-SHM
    .init(
      .extension("MIT-SHM", minor: 4), "GetImage", kind: "MIT-SHM ShmGetImage", role: .readsPixels,
      targets: [.field(offset: 4, name: "drawable")],
      reason: "writes the drawable's pixels into shared memory (ffmpeg x11grab, scrot, OBS, WebRTC)"),
    .init(
      .extension("MIT-SHM", minor: 1), "Attach", kind: "MIT-SHM Attach", role: .indicator,
      reason: "attaches a shared-memory segment; ffmpeg attaches a new one every frame"),
    .init(
      .extension("MIT-SHM", minor: 6), "AttachFd", kind: "MIT-SHM AttachFd", role: .indicator,
      reason: "attaches a shared-memory segment passed as a file descriptor"),
    .init(
      .extension("MIT-SHM", minor: 7), "CreateSegment", kind: "MIT-SHM CreateSegment", role: .indicator,
      reason: "has the server create a shared-memory segment (scrot, via xcb)"),

    // MARK: Composite
    .init(
      .extension("Composite", minor: 2), "RedirectSubwindows", kind: "Composite RedirectSubwindows(Manual)",
      role: .indicator, startsSession: true, targets: [.field(offset: 4, name: "window")],
      condition: .init(offset: 8, value: 1), canBypassShield: true,
      reason: "takes over painting of the window's children: on a secure window it hides the child shield"),
    .init(
      .extension("Composite", minor: 1), "RedirectWindow", kind: "Composite RedirectWindow(Manual)",
      role: .indicator, startsSession: true, targets: [.field(offset: 4, name: "window")],
      condition: .init(offset: 8, value: 1), canBypassShield: true,
      reason: "takes over painting of the window (a compositor); on a shield window it hides the shield"),
    .init(
      .extension("Composite", minor: 2), "RedirectSubwindows", kind: "Composite RedirectSubwindows(Automatic)",
      role: .indicator, targets: [.field(offset: 4, name: "window")], condition: .init(offset: 8, value: 0),
      reason: "keeps the children's contents off-screen, the prerequisite of NameWindowPixmap (maim)"),
    .init(
      .extension("Composite", minor: 1), "RedirectWindow", kind: "Composite RedirectWindow(Automatic)",
      role: .indicator, targets: [.field(offset: 4, name: "window")], condition: .init(offset: 8, value: 0),
      reason: "as RedirectSubwindows(Automatic), for one window (OBS window capture)"),
    .init(
      .extension("Composite", minor: 6), "NameWindowPixmap", kind: "Composite NameWindowPixmap", role: .readsPixels,
      targets: [.field(offset: 4, name: "window")],
      reason: "names the redirected window's off-screen pixmap: an own pixmap holding the window's pixels"),
    .init(
      .extension("Composite", minor: 7), "GetOverlayWindow", kind: "Composite GetOverlayWindow", role: .indicator,
      targets: [.field(offset: 4, name: "window")], reason: "a compositor taking over the screen"),

    // MARK: RENDER
    .init(
      .extension("RENDER", minor: 4), "CreatePicture", kind: "RENDER CreatePicture", role: .readsPixels,
      targets: [
        .field(offset: 8, name: "drawable"), .valueListItem(maskOffset: 16, bit: 1, label: "alpha-map"),
        .valueListItem(maskOffset: 16, bit: 6, label: "clip-mask"),
      ],
      reason: "a Picture on a foreign drawable: the capture event itself; Composite from it copies the pixels (maim)"),
    .init(
      .extension("RENDER", minor: 5), "ChangePicture", kind: "RENDER ChangePicture", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 8, bit: 1, label: "alpha-map"),
        .valueListItem(maskOffset: 8, bit: 6, label: "clip-mask"),
      ],
      reason: "a foreign picture as alpha map or a foreign pixmap as clip mask leaks its pixels into composites"),
    .init(
      .extension("RENDER", minor: 8), "Composite", kind: "RENDER Composite", role: .readsPixels,
      targets: [.field(offset: 8, name: "src"), .field(offset: 12, name: "mask", label: "mask")], frequent: true,
      reason: "composites from another client's Picture (e.g. a compositor's window pictures)"),
    .init(
      .extension("RENDER", minor: 10), "Trapezoids", kind: "RENDER Trapezoids", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], frequent: true, reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 11), "Triangles", kind: "RENDER Triangles", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 12), "TriStrip", kind: "RENDER TriStrip", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 13), "TriFan", kind: "RENDER TriFan", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 23), "CompositeGlyphs8", kind: "RENDER CompositeGlyphs8", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], frequent: true, reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 24), "CompositeGlyphs16", kind: "RENDER CompositeGlyphs16", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], frequent: true, reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 25), "CompositeGlyphs32", kind: "RENDER CompositeGlyphs32", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], frequent: true, reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 27), "CreateCursor", kind: "RENDER CreateCursor", role: .readsPixels,
      targets: [.field(offset: 8, name: "source")],
      reason: "a cursor from a foreign picture; XFIXES GetCursorImage reads its ARGB pixels back"),

    // MARK: DAMAGE
    .init(
      .extension("DAMAGE", minor: 1), "Create", kind: "DAMAGE Create", role: .indicator,
      targets: [.field(offset: 8, name: "drawable")],
      reason: "watches where a foreign drawable changes (screen recorders, VNC servers, compositors)"),

    // MARK: XFIXES
    .init(
      .extension("XFIXES", minor: 4), "GetCursorImage", kind: "XFIXES GetCursorImage", role: .indicator,
      reason: "reads the cursor's pixels to draw it into a recording (ffmpeg every frame)"),
    .init(
      .extension("XFIXES", minor: 25), "GetCursorImageAndName", kind: "XFIXES GetCursorImageAndName",
      role: .indicator, reason: "as GetCursorImage"),
    .init(
      .extension("XFIXES", minor: 6), "CreateRegionFromBitmap", kind: "XFIXES CreateRegionFromBitmap",
      role: .readsPixels, targets: [.field(offset: 8, name: "bitmap")],
      reason: "turns a foreign depth-1 pixmap into a region the client can fetch"),

    // MARK: SHAPE
    .init(
      .extension("SHAPE", minor: 2), "Mask", kind: "SHAPE Mask", role: .readsPixels,
      targets: [.field(offset: 16, name: "source_bitmap")],
      reason: "shapes an own window with a foreign depth-1 pixmap; GetRectangles reads it back"),

    // MARK: DOUBLE-BUFFER
    .init(
      .extension("DOUBLE-BUFFER", minor: 1), "AllocateBackBuffer", kind: "DOUBLE-BUFFER AllocateBackBuffer",
      role: .readsPixels, targets: [.field(offset: 4, name: "window")],
      reason:
        "names the window's back buffer (shared by all clients, not covered by a child shield); GetImage on the own name reads it"
    ),

    // MARK: GLX
    .init(
      .extension("GLX", minor: 5), "MakeCurrent", kind: "GLX MakeCurrent", role: .readsPixels,
      targets: [.field(offset: 4, name: "drawable")],
      reason: "binds a GL context to a foreign window (GLX 1.2 takes X windows); glReadPixels then reads it"),
    .init(
      .extension("GLX", minor: 26), "MakeContextCurrent", kind: "GLX MakeContextCurrent", role: .readsPixels,
      targets: [.field(offset: 8, name: "drawable"), .field(offset: 12, name: "read_drawable", label: "read")],
      reason: "as MakeCurrent"),
    .init(
      .extension("GLX", minor: 13), "CreateGLXPixmap", kind: "GLX CreateGLXPixmap", role: .readsPixels,
      targets: [.field(offset: 12, name: "pixmap")],
      reason: "a GLX drawable on a foreign pixmap (texture from pixmap, OBS)"),
    .init(
      .extension("GLX", minor: 22), "CreatePixmap", kind: "GLX CreatePixmap", role: .readsPixels,
      targets: [.field(offset: 12, name: "pixmap")], reason: "as CreateGLXPixmap"),
    .init(
      .extension("GLX", minor: 31), "CreateWindow", kind: "GLX CreateWindow", role: .readsPixels,
      targets: [.field(offset: 12, name: "window")], reason: "a GLX drawable on a foreign window; glReadPixels reads it"
    ),

    // MARK: DRI2 / DRI3 (not in Xvfb; Xorg with a GPU driver)
    .init(
      .extension("DRI2", minor: 5), "GetBuffers", kind: "DRI2 GetBuffers", role: .readsPixels,
      targets: [.field(offset: 4, name: "drawable")], reason: "hands out the drawable's GPU buffers"),
    .init(
      .extension("DRI2", minor: 7), "GetBuffersWithFormat", kind: "DRI2 GetBuffersWithFormat", role: .readsPixels,
      targets: [.field(offset: 4, name: "drawable")], reason: "as GetBuffers"),
    .init(
      .extension("DRI3", minor: 3), "BufferFromPixmap", kind: "DRI3 BufferFromPixmap", role: .readsPixels,
      targets: [.field(offset: 4, name: "pixmap")], reason: "exports a foreign pixmap as a dma-buf the client maps"),
    .init(
      .extension("DRI3", minor: 8), "BuffersFromPixmap", kind: "DRI3 BuffersFromPixmap", role: .readsPixels,
      targets: [.field(offset: 4, name: "pixmap")], reason: "as BufferFromPixmap"),

    // MARK: RECORD
    .init(
      .extension("RECORD", minor: 1), "CreateContext", kind: "RECORD CreateContext", role: .indicator,
      reason: "records other clients' protocol: their PutImage uploads and GetImage replies carry pixels"),
    .init(
      .extension("RECORD", minor: 2), "RegisterClients", kind: "RECORD RegisterClients", role: .indicator,
      reason: "as CreateContext"),
  ])
}

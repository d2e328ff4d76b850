// Request-level capture detection with the X RECORD extension.
//
// Two connections, as RECORD requires: `control` creates the context (and pokes the server),
// `data` enables it and then only ever receives the context's replies. EnableContext is one
// request with an unbounded number of replies, all carrying its sequence number. libxcb
// queues such replies one after another on the request's reply list, and
// `xcb_poll_for_reply(data, enableSequence)` hands them out one per call without waiting for
// a packet to start: it returns 1 with a reply, or 0 when none is queued and a non-blocking
// read of the socket brought none. It never marks the request complete, because no later
// sequence number ever arrives on `data` (nothing else is sent there). One caveat, as for
// every libxcb read: once the first 32 bytes of a reply have arrived, libxcb reads the rest
// of that reply with a blocking read; the server writes a reply as a whole, so this waits at
// most for the remainder already in flight.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// 1: a reply (or error) or "no more replies"; 0: none available now.
private func pollForReply(
  _ c: OpaquePointer, _ sequence: UInt32, _ reply: inout UnsafeMutableRawPointer?,
  _ error: inout UnsafeMutablePointer<xcb_generic_error_t>?
) -> Int32 {
  xcb_poll_for_reply(c, sequence, &reply, &error)
}

/// What the detector saw, as plain values.
public enum DetectorEvent: Sendable, Hashable {
  case clientStarted(ClientID)
  case clientDied(ClientID)
  case request(ClientID, CaptureRequest)
  /// A read of the client's own drawable (GetImage, ShmGetImage, CopyArea, CopyPlane),
  /// while `watchesOwnWindows`, with what was known of its drawables where it was recorded
  /// (`known`: the facts change with the records that follow it). In record order with the
  /// rest, so that it comes before its client's `clientDied`.
  case ownRead(ClientID, OwnDrawableRead, known: [UInt32: DrawableFact])
}

/// Watches every client's capture requests through RECORD. Not thread-safe: one owner, one
/// thread (the daemon's poll loop); the optional pump (`startPump`) reads the data
/// connection on a thread of its own and hands the records over.
///
///     let detector = try CaptureDetector(display: ":0")
///     // poll() on detector.fileDescriptor, call poke() every 20 ms, and:
///     for event in detector.drain(isSecure: { secureWindows.contains($0) }) { ... }
public final class CaptureDetector {
  let control: XConnection
  let data: XConnection
  let context: UInt32
  let enableSequence: UInt32
  /// The catalog, bound to this server's extension opcodes.
  public let catalog: ResolvedCaptureCatalog
  /// The server's resource-id mask.
  public let resourceMask: UInt32
  /// Clients whose records are dropped: the detector's own two connections, plus whatever
  /// the owner adds (its other connections; a connection opened after this detector is
  /// better added with `excludeNewConnection`). Removing has no effect: a base leaves the
  /// set only when RECORD reports its connection's death (`OwnConnections`,
  /// `takeOwnConnectionsDied`).
  public var excludedClients: Set<ClientID> {
    get { Set(own.excluded.map(ClientID.init)) }
    set {
      let old = own.excluded
      for c in newValue where !old.contains(c.base) {
        own.insert(c.base)
        pump?.exclude(c.base)
      }
    }
  }
  /// The self-exclusion: our connections' bases, and when one stops being ours.
  private var own: OwnConnections
  /// Our connections whose death `drain` read (ClientDied of an excluded base), until
  /// taken: their bases are no longer excluded, so the next client that gets one is seen.
  private var ownConnectionsDied: [ClientID] = []
  /// While quarantine is on, the thread that reads the data connection (see `RecordPump`).
  private(set) var pump: RecordPump?
  /// Targets whose shields the pump put up on a ClientStarted handed out by the last `drain`.
  private(set) var lastFired: Set<WindowID> = []
  /// Fired by a pump that was then stopped, reported by the next `drain`.
  private var stashedFired: Set<WindowID> = []
  /// Launches the pump saw (the program started, or nil for a libxcb open), handed out by
  /// the last `drain`.
  private(set) var lastLaunches: [String?] = []
  private var stashedLaunches: [String?] = []
  /// Whether reads of a client's own drawables are handed out (`.ownRead`): the owner
  /// turns it on while a secure window exists. Off, they are dropped as soon as they are
  /// decoded, as before (no cost when nothing is at stake).
  public var watchesOwnWindows = false
  /// What is known about clients' own drawables (`.pixmap`, `.window(nil)`), so that the
  /// reads and copies toolkits make all the time cost at most one lookup per drawable, and
  /// none for a pixmap whose CreatePixmap was recorded. Kept true by the records
  /// (CreateWindow, CreatePixmap, FreePixmap, ClientStarted, ClientDied: `DrawableKinds`)
  /// and by the owner's lookups.
  public var drawableKinds: DrawableKinds
  /// Whether the running pump watches launches.
  var pumpWatchesLaunches: Bool { pump?.launchWatch != nil }
  /// Whether the pump fires armed shields on a ClientStarted (quarantine), or only on launches.
  var pumpFiresOnStart: Bool { pump?.firesOnStart ?? false }
  /// Records are queued inside libxcb (the last `drain` stopped at its per-call limit, or
  /// `init` just returned): call `drain` again without waiting for the descriptor, which
  /// already-read records do not make readable.
  public private(set) var moreAvailable = false
  /// RECORD ended the context (EndOfData, an error reply) or a connection broke.
  public var hasError: Bool { contextEnded || control.hasError || data.hasError }
  /// Totals since start, for diagnostics and tests.
  public private(set) var repliesRead = 0
  public private(set) var requestsRecorded = 0
  /// RECORD replies that did not decode, or whose data did not split into whole requests
  /// (should stay 0).
  public private(set) var malformedReplies = 0

  /// Per `drain` call: stop after this many RECORD replies (one reply holds any number of
  /// requests of one client) so a flood cannot starve the caller's loop.
  public var maxRepliesPerDrain = 4096

  private var contextEnded = false
  private var pokeSequence: UInt32?
  /// Replies read before StartOfData in `init` (none expected), handed out by the first `drain`.
  private var stashed: [[UInt8]] = []

  /// Connects twice to `display` (nil: `$DISPLAY`), creates a RECORD context over the
  /// narrowest ranges that cover `catalog` (plus ClientStarted/ClientDied) for all current
  /// and future clients, enables it, and waits (up to `startTimeout`) until the server
  /// confirms with StartOfData, so every request made after `init` returns is seen.
  public convenience init(display: String?, catalog: CaptureCatalog = .standard, startTimeout: Duration = .seconds(5))
    throws(XError)
  {
    try self.init(display: display, catalog: catalog, startTimeout: startTimeout, errors: XErrorPolicy(log: nil))
  }

  /// As the public `init`, with X errors on both connections (and on the pump's reads)
  /// reported through `errors`, the daemon's one policy.
  init(display: String?, catalog: CaptureCatalog, startTimeout: Duration, errors: XErrorPolicy) throws(XError) {
    let control = try XConnection(display: display)
    let data = try XConnection(display: display)
    control.errors = errors
    data.errors = errors
    self.control = control
    self.data = data
    resourceMask = control.resourceMask
    drawableKinds = DrawableKinds(resourceMask: control.resourceMask)
    guard control.hasExtension("RECORD") else { throw .missingExtension("RECORD") }

    // Extension major opcodes, pipelined.
    let names = catalog.extensionNames
    let cookies = names.map { n in n.withCString { xcb_query_extension(control.conn, UInt16(strlen($0)), $0) } }
    var majors: [String: UInt8] = [:]
    for (name, ck) in zip(names, cookies) {
      guard let r = xcb_query_extension_reply(control.conn, ck, nil) else { continue }
      if r.pointee.present != 0 { majors[name] = r.pointee.major_opcode }
      free(r)
    }
    let ownBases = [control.ownBase, data.ownBase]
    own = OwnConnections(Set(ownBases))

    // The ranges: one interval per RECORD range slot; core and extension intervals share
    // slots. ClientStarted/ClientDied are flags of a range (set on the first one).
    let resolved = catalog.resolved(extensions: majors)
    self.catalog = resolved
    let core = resolved.recordedCoreRanges
    let ext = resolved.extensionRanges
    var ranges: [xcb_record_range_t] = []
    for i in 0..<max(1, core.count, ext.count) {
      var r = xcb_record_range_t()
      if i < core.count {
        r.core_requests = xcb_record_range_8_t(first: core[i].lowerBound, last: core[i].upperBound)
      }
      if i < ext.count {
        r.ext_requests = xcb_record_ext_range_t(
          major: xcb_record_range_8_t(first: ext[i].major, last: ext[i].major),
          minor: xcb_record_range_16_t(first: UInt16(ext[i].minors.lowerBound), last: UInt16(ext[i].minors.upperBound)))
      }
      if i == 0 {
        r.client_started = 1
        r.client_died = 1
      }
      ranges.append(r)
    }

    let ctx = try RecordStream.createContext(on: control, ranges: ranges)
    context = ctx
    // "All clients" was expanded when the context was created, our two connections included.
    var own = ownBases
    if let err = xcb_request_check(
      control.conn, xcb_record_unregister_clients_checked(control.conn, ctx, UInt32(own.count), &own))
    {
      control.errors.report(err, connection: Self.controlName)  // not fatal: their records are filtered out anyway
    }

    enableSequence = xcb_record_enable_context(data.conn, ctx).sequence
    data.flush()
    try waitForStart(timeout: startTimeout)
  }

  deinit {
    pump?.stop()
    xcb_record_disable_context(control.conn, context)
    xcb_record_free_context(control.conn, context)
    control.flush()
  }

  /// Readable when records arrived: the data connection's descriptor, or, while the pump
  /// runs, the pump's wake-up pipe.
  public var fileDescriptor: Int32 { pump?.wakeRead ?? data.fileDescriptor }

  /// Hands the data connection to a pump thread (quarantine: see `RecordPump`), which also
  /// reads `launchWatch` if given.
  func startPump(launchWatch: LaunchWatch? = nil, firesOnStart: Bool = true) {
    guard pump == nil, !contextEnded else { return }
    pump = RecordPump(
      data: data.conn, enableSequence: enableSequence, excluded: own.excluded,
      launchWatch: launchWatch, firesOnStart: firesOnStart, errors: data.errors, connection: Self.dataName)
  }

  /// Stops the pump; what it read and nobody took is handed out by the next `drain`.
  func stopPump() {
    guard let p = pump else { return }
    p.stop()
    pump = nil
    let left = p.take()
    stashed += left.replies
    stashedFired.formUnion(left.fired)
    stashedLaunches += left.launches
    moreAvailable = !stashed.isEmpty
  }

  /// Every record available now (non-blocking), parsed. Requests of excluded clients and
  /// requests that are not captures (own drawables, not in the catalog) are dropped.
  /// `isSecure(window)` decides whether a manual redirection bypasses a shield.
  public func drain(isSecure: (UInt32) -> Bool) -> [DetectorEvent] {
    drainWithServerTime(isSecure: isSecure).map(\.event)
  }

  /// `drain`, with the server time (ms, the X server's monotonic clock) at which the server
  /// started the RECORD reply that carried each event (one reply: one client, one category).
  public func drainWithServerTime(isSecure: (UInt32) -> Bool) -> [(event: DetectorEvent, serverTime: UInt32)] {
    var out: [(event: DetectorEvent, serverTime: UInt32)] = []
    moreAvailable = false
    // Replies read ahead of this call: by `init`, by a pump since stopped, by the pump.
    var ahead = stashed
    stashed = []
    lastFired = stashedFired
    stashedFired = []
    lastLaunches = stashedLaunches
    stashedLaunches = []
    if let pump {
      let (replies, fired, launches) = pump.take()
      ahead += replies
      lastFired.formUnion(fired)
      lastLaunches += launches
    }
    for raw in ahead where !contextEnded {
      if raw.isEmpty {
        contextEnded = true  // the pump's mark: an error reply, or the request is over
      } else {
        raw.withUnsafeBytes { handle($0, into: &out, isSecure: isSecure) }
      }
    }
    if pump != nil {
      drainControl()
      return out
    }
    var budget = maxRepliesPerDrain
    while !contextEnded {
      guard budget > 0 else {
        moreAvailable = true
        break
      }
      var reply: UnsafeMutableRawPointer? = nil
      var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
      guard pollForReply(data.conn, enableSequence, &reply, &error) != 0 else { break }
      budget -= 1
      guard let reply else {
        // An error reply, or libxcb says the request is complete: the context is over.
        data.errors.report(error, connection: Self.dataName)
        contextEnded = true
        break
      }
      handle(Self.replyBytes(reply), into: &out, isSecure: isSecure)
      free(reply)
    }
    drainControl()
    return out
  }

  /// Makes the server flush records it holds back: sends GetInputFocus on the control
  /// connection (the server flushes RECORD buffers whenever it writes to any client). Does
  /// not wait for the reply; at most one poke is outstanding (during another client's
  /// GrabServer pokes queue in the server and are not repeated).
  public func poke() {
    drainControl()
    if let seq = pokeSequence {
      var reply: UnsafeMutableRawPointer? = nil
      var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
      guard pollForReply(control.conn, seq, &reply, &error) != 0 else { return }
      free(reply)
      control.errors.report(error, connection: Self.controlName)
      pokeSequence = nil
    }
    pokeSequence = xcb_get_input_focus(control.conn).sequence
    control.flush()
  }

  // MARK: Own connections (self-exclusion)

  /// A connection of ours opened after this detector: excluded, and its ClientStarted
  /// (still to come) is ours even when a connection of ours held its base before.
  func excludeNewConnection(_ base: UInt32) {
    own.insertNew(base)
    pump?.exclude(base)
  }

  /// Our connections whose death RECORD reported since the last call.
  func takeOwnConnectionsDied() -> [ClientID] {
    defer { ownConnectionsDied = [] }
    return ownConnectionsDied
  }

  /// Our connection `base` died and the owner noticed before RECORD said so: its
  /// ClientDied, when read, frees the base (unless `excludeNewConnection` took it again).
  func ownConnectionClosed(_ base: UInt32) { own.closed(base) }

  // MARK: Internals

  /// What arrived on the control connection (errors of unchecked requests), reported
  /// through the connection's `XErrorPolicy`.
  private func drainControl() { control.drainErrors(connection: Self.controlName) }

  /// The connections' names in X error lines.
  static let controlName = "capture detector's RECORD control"
  static let dataName = "capture detector's RECORD data"

  private static func replyBytes(_ reply: UnsafeMutableRawPointer) -> UnsafeRawBufferPointer {
    let words = reply.load(fromByteOffset: 4, as: UInt32.self)
    return UnsafeRawBufferPointer(start: reply, count: 32 + Int(words) * 4)
  }

  private func handle(
    _ bytes: UnsafeRawBufferPointer, into out: inout [(event: DetectorEvent, serverTime: UInt32)],
    isSecure: (UInt32) -> Bool
  ) {
    repliesRead += 1
    guard let rep = RecordedReply.decode(bytes), let category = rep.category else {
      malformedReplies += 1
      return
    }
    let client = ClientID(rep.idBase)
    switch category {
    case .clientStarted:
      if catalog.recordsCreations {
        drawableKinds.clientStarted(rep.idBase)
      } else {
        drawableKinds.clientDied(rep.idBase)
      }
      if own.started(client.base) == .foreign { out.append((.clientStarted(client), rep.serverTime)) }
    case .clientDied:
      drawableKinds.clientDied(rep.idBase)
      switch own.died(client.base) {
      case .foreign: out.append((.clientDied(client), rep.serverTime))
      case .ours: break
      case .ourConnectionDied: ownConnectionsDied.append(client)
      }
    case .fromClient:
      guard !own.excluded.contains(client.base), rep.elementHeader == 0 else { return }
      let big = rep.dataIsBigEndian()
      let data = UnsafeRawBufferPointer(rebasing: bytes[rep.data])
      let consumed = RecordedReply.forEachRequest(in: data, bigEndian: big) { request in
        requestsRecorded += 1
        if let change = catalog.drawableChange(recorded: request, bigEndian: big) {
          // (CreateWindow's background pixmap is classified below all the same.)
          drawableKinds.apply(change)
        }
        if let c = catalog.classify(
          request, clientBase: rep.idBase, resourceMask: resourceMask, bigEndian: big, isSecure: isSecure)
        {
          out.append((.request(client, c), rep.serverTime))
        } else if watchesOwnWindows,
          let own = catalog.classifyOwnRead(
            request, clientBase: rep.idBase, resourceMask: resourceMask, bigEndian: big)
        {
          var known: [UInt32: DrawableFact] = [:]
          for id in [own.source] + (own.destination.map { [$0] } ?? []) { known[id] = drawableKinds[id] }
          out.append((.ownRead(client, own, known: known), rep.serverTime))
        }
      }
      if consumed != data.count { malformedReplies += 1 }
    case .endOfData:
      contextEnded = true
    case .fromServer, .startOfData:
      break
    }
  }

  /// Blocks until StartOfData (the first reply) arrives on the data connection; the replies
  /// before it are kept (`stashed`, handed out by the first `drain`). Replies read after it
  /// stay queued in libxcb: `moreAvailable` tells the caller to drain at once.
  private func waitForStart(timeout: Duration) throws(XError) {
    try RecordStream.waitForStart(data: data, enableSequence: enableSequence, timeout: timeout) {
      (reply: [UInt8]) throws(XError) in
      stashed.append(reply)
      guard stashed.count < 4096 else { throw .failed("RECORD EnableContext: no StartOfData") }
    }
    moreAvailable = true
  }
}

// The benchmark's own RECORD client: it sees, in the server's execution order and with the
// server's timestamps (ms), both the capture tools' requests and the daemon's shield
// MapWindow/UnmapWindow/CreateWindow. Independent of the daemon's detector.
import CXCB
import CaptureShield
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// One recorded element.
struct Rec: Sendable {
  enum Kind: Sendable { case started, died, request }
  var kind: Kind
  /// Resource-id base of the client.
  var base: UInt32
  /// Server time (ms) the server recorded it at.
  var time: UInt32
  var major: UInt8 = 0
  /// The 32-bit fields at byte offsets 4 and 8 (window/drawable, parent).
  var field4: UInt32 = 0
  var field8: UInt32 = 0
  /// The catalog kind when the request reads pixels of a drawable the client does not own.
  var capture: String?
}

/// Records, for every client: ClientStarted/ClientDied, every request of the standard capture
/// catalog, and core CreateWindow/MapWindow/UnmapWindow. A thread reads the records as they come.
final class Recorder: @unchecked Sendable {
  private let control: XClient
  private let data: XClient
  private let context: UInt32
  private let enableSequence: UInt32
  private let catalog: ResolvedCaptureCatalog
  private let readsPixelsKinds: Set<String>
  private let lock = NSLock()
  private var records: [Rec] = []
  private var running = true
  private var thread: Thread?
  private let finished = DispatchSemaphore(value: 0)
  /// A persistent client of ours whose UnmapWindow of `markerWindow` marks points in the stream.
  private let probe: XClient
  private let markerWindow: UInt32
  private var markerScanFrom = 0
  private(set) var malformed = 0

  static let coreMapWindow: UInt8 = 8
  static let coreUnmapWindow: UInt8 = 10
  static let coreCreateWindow: UInt8 = 1

  init(display: String, probe: XClient) throws {
    control = try XClient(display: display)
    data = try XClient(display: display)
    self.probe = probe
    let standard = CaptureCatalog.standard
    var majors: [String: UInt8] = [:]
    for name in standard.extensionNames { if let op = control.extensionOpcode(name) { majors[name] = op } }
    guard control.extensionOpcode("RECORD") != nil else { throw BenchError("the X server has no RECORD extension") }
    catalog = standard.resolved(extensions: majors)
    readsPixelsKinds = Set(standard.entries.filter { $0.role == .readsPixels }.flatMap(\.allKinds))

    var coreOps = Set(catalog.coreRanges.flatMap { Array($0) })
    coreOps.formUnion([Self.coreCreateWindow, Self.coreMapWindow, Self.coreUnmapWindow])
    var core: [ClosedRange<UInt8>] = []
    for op in coreOps.sorted() {
      if let last = core.last, last.upperBound &+ 1 == op {
        core[core.count - 1] = last.lowerBound...op
      } else {
        core.append(op...op)
      }
    }
    let ext = catalog.extensionRanges
    var ranges: [xcb_record_range_t] = []
    for i in 0..<max(core.count, ext.count) {
      var r = xcb_record_range_t()
      if i < core.count { r.core_requests = xcb_record_range_8_t(first: core[i].lowerBound, last: core[i].upperBound) }
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
    let ctx = control.id()
    context = ctx
    var spec = xcb_record_client_spec_t(XCB_RECORD_CS_ALL_CLIENTS.rawValue)
    // Element headers: a server timestamp before every recorded request.
    let header = xcb_record_element_header_t(XCB_RECORD_H_TYPE_FROM_CLIENT_TIME.rawValue)
    let ck = xcb_record_create_context_checked(control.conn, ctx, header, 1, UInt32(ranges.count), &spec, ranges)
    if let err = xcb_request_check(control.conn, ck) {
      free(err)
      throw BenchError("RECORD CreateContext failed")
    }
    var own = [control.base(of: control.id()), data.base(of: data.id())]
    if let err = xcb_request_check(
      control.conn, xcb_record_unregister_clients_checked(control.conn, ctx, UInt32(own.count), &own))
    {
      free(err)
    }
    enableSequence = xcb_record_enable_context(data.conn, ctx).sequence
    data.flush()
    markerWindow = probe.id()
    var v: [UInt32] = [1]
    xcb_create_window(
      probe.conn, 0, markerWindow, probe.root, -10, -10, 1, 1, 0, UInt16(XCB_WINDOW_CLASS_INPUT_ONLY.rawValue), 0,
      XCB_CW_OVERRIDE_REDIRECT.rawValue, &v)
    probe.sync()
    let t = Thread { [self] in readLoop() }
    t.name = "shieldbench-record"
    thread = t
    t.start()
    _ = try mark()
  }

  var probeBase: UInt32 { probe.base(of: markerWindow) }

  /// Stops the reader thread and frees the context.
  func stop() {
    lock.lock()
    let wasRunning = running
    running = false
    lock.unlock()
    guard wasRunning else { return }
    finished.wait()
    xcb_record_disable_context(control.conn, context)
    xcb_record_free_context(control.conn, context)
    control.sync()
  }

  deinit { stop() }

  var count: Int {
    lock.lock()
    defer { lock.unlock() }
    return records.count
  }

  /// Records `from..<to` (clamped).
  func slice(_ from: Int, _ to: Int? = nil) -> [Rec] {
    lock.lock()
    defer { lock.unlock() }
    let end = min(to ?? records.count, records.count)
    return from < end ? Array(records[from..<end]) : []
  }

  /// Puts a marker into the stream (an UnmapWindow of our own unmapped window) and waits
  /// until it arrives: every request the server executed before this call is then recorded.
  /// Returns the marker's index.
  @discardableResult
  func mark(timeout: Double = 5) throws -> Int {
    xcb_unmap_window(probe.conn, markerWindow)
    probe.sync()  // the server writes a reply, which also flushes RECORD's buffered records
    let deadline = monotonicNow() + timeout
    var lastPoke = monotonicNow()
    while true {
      lock.lock()
      var found: Int?
      var i = markerScanFrom
      while i < records.count {
        let r = records[i]
        if r.kind == .request, r.major == Self.coreUnmapWindow, r.field4 == markerWindow {
          found = i
          break
        }
        i += 1
      }
      if let found { markerScanFrom = found + 1 } else { markerScanFrom = records.count }
      lock.unlock()
      if let found { return found }
      let now = monotonicNow()
      if now > deadline { throw BenchError("RECORD marker did not arrive within \(timeout) s") }
      if now - lastPoke > 0.02 {
        probe.sync()
        lastPoke = now
      }
      usleep(300)
    }
  }

  // MARK: Reader thread

  private func readLoop() {
    defer { finished.signal() }
    while true {
      lock.lock()
      let go = running
      lock.unlock()
      guard go else { return }
      var batch: [Rec] = []
      while true {
        var reply: UnsafeMutableRawPointer? = nil
        var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
        guard xcb_poll_for_reply(data.conn, enableSequence, &reply, &error) != 0 else { break }
        guard let reply else {
          free(error)
          lock.lock()
          running = false
          lock.unlock()
          return
        }
        let words = reply.load(fromByteOffset: 4, as: UInt32.self)
        parse(UnsafeRawBufferPointer(start: reply, count: 32 + Int(words) * 4), into: &batch)
        free(reply)
      }
      if !batch.isEmpty {
        lock.lock()
        records += batch
        lock.unlock()
      }
      if data.hasError { return }
      var pfd = pollfd(fd: xcb_get_file_descriptor(data.conn), events: Int16(POLLIN), revents: 0)
      _ = poll(&pfd, 1, 20)
    }
  }

  private func parse(_ bytes: UnsafeRawBufferPointer, into out: inout [Rec]) {
    guard let rep = RecordedReply.decode(bytes), let category = rep.category else {
      malformed += 1
      return
    }
    switch category {
    case .clientStarted: out.append(Rec(kind: .started, base: rep.idBase, time: rep.serverTime))
    case .clientDied: out.append(Rec(kind: .died, base: rep.idBase, time: rep.serverTime))
    case .fromClient:
      let timed = rep.elementHeader & UInt8(XCB_RECORD_H_TYPE_FROM_CLIENT_TIME.rawValue) != 0
      let d = UnsafeRawBufferPointer(rebasing: bytes[rep.data])
      var p = 0
      func u16(_ o: Int) -> UInt16 { UInt16(d[o]) | UInt16(d[o + 1]) << 8 }
      func u32(_ o: Int) -> UInt32 {
        UInt32(d[o]) | UInt32(d[o + 1]) << 8 | UInt32(d[o + 2]) << 16 | UInt32(d[o + 3]) << 24
      }
      while p < d.count {
        var time = rep.serverTime
        if timed {
          guard d.count - p >= 4 else { break }
          time = u32(p)
          p += 4
        }
        guard d.count - p >= 4 else { break }
        var size = Int(u16(p + 2)) * 4
        var shift = 0
        if size == 0 {
          guard d.count - p >= 8 else { break }
          size = Int(u32(p + 4)) * 4
          shift = 4
        }
        guard size >= 4, size <= d.count - p else {
          malformed += 1
          break
        }
        let req = UnsafeRawBufferPointer(rebasing: d[p..<(p + size)])
        var r = Rec(kind: .request, base: rep.idBase, time: time, major: req[0])
        if size >= 8 + shift { r.field4 = u32(p + 4 + shift) }
        if size >= 12 + shift { r.field8 = u32(p + 8 + shift) }
        if let c = catalog.classify(
          req, clientBase: rep.idBase, resourceMask: control.resourceMask, bigEndian: false, isSecure: { _ in false }),
          readsPixelsKinds.contains(c.kind)
        {
          r.capture = c.kind
        }
        out.append(r)
        p += size
      }
    default:
      break
    }
  }
}

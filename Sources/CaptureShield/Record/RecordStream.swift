// One small RECORD context of core requests, read without blocking: what the copied-text
// guard's SelectionRecorder and the TagWatch share. (The capture detector keeps its own:
// it has extension ranges, a pump thread and client start/death records; it shares only
// the wait for StartOfData, `RecordStream.waitForStart`.)
//
// RECORD needs two connections: `control` creates the context, `data` enables it and only
// receives (its EnableContext reply stream never ends while the context lives).

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A RECORD context over some core requests of all clients, and its reply stream.
/// Not thread-safe: one owner, the daemon's loop.
final class RecordStream {
  private let control: XConnection
  let data: XConnection
  private let context: UInt32
  private let enableSequence: UInt32
  /// RECORD ended the context (EndOfData, an error reply).
  private(set) var ended = false
  /// The context ended or a connection broke.
  var hasError: Bool { ended || control.hasError || data.hasError }
  var fileDescriptor: Int32 { data.fileDescriptor }

  /// The data connection's name in X error lines.
  let dataName: String

  /// Records the core requests `opcodes` of every client except `unrecorded` (the data
  /// connection is always left out). Returns once StartOfData came: every such request the
  /// server executes afterwards is recorded. X errors on the data connection go through
  /// the control connection's `XErrorPolicy`, as `name` (`name`'s RECORD data connection).
  init(
    control: XConnection, opcodes: [UInt8], unrecorded: [UInt32] = [], startTimeout: Duration, name: String
  ) throws(XError) {
    guard control.hasExtension("RECORD") else { throw .missingExtension("RECORD") }
    self.control = control
    dataName = name + "'s RECORD data"
    data = try XConnection(display: control.displayName)
    data.errors = control.errors
    let ranges = opcodes.map { op -> xcb_record_range_t in
      var r = xcb_record_range_t()
      r.core_requests = xcb_record_range_8_t(first: op, last: op)
      return r
    }
    let ctx = try RecordStream.createContext(on: control, ranges: ranges)
    context = ctx
    var own = [data.ownBase] + unrecorded
    if let err = xcb_request_check(
      control.conn, xcb_record_unregister_clients_checked(control.conn, ctx, UInt32(own.count), &own))
    {
      // Not fatal: the owner filters its own records anyway.
      control.errors.report(err, connection: name + "'s RECORD control")
    }
    enableSequence = xcb_record_enable_context(data.conn, ctx).sequence
    data.flush()
    try waitForStart(timeout: startTimeout)
  }

  deinit {
    xcb_record_disable_context(control.conn, context)
    xcb_record_free_context(control.conn, context)
    control.flush()
  }

  /// Every recorded request available now (non-blocking), in the server's order, with its
  /// sender's resource-id base and byte order. Sets `ended` at EndOfData or an error reply.
  func forEachRequest(_ body: (_ request: UnsafeRawBufferPointer, _ sender: UInt32, _ bigEndian: Bool) -> Void) {
    while !ended {
      var reply: UnsafeMutableRawPointer? = nil
      var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
      guard xcb_poll_for_reply(data.conn, enableSequence, &reply, &error) != 0 else { break }
      guard let reply else {
        data.errors.report(error, connection: dataName)
        ended = true  // an error reply, or libxcb says the request is over
        break
      }
      defer { free(reply) }
      let words = reply.load(fromByteOffset: 4, as: UInt32.self)
      let bytes = UnsafeRawBufferPointer(start: reply, count: 32 + Int(words) * 4)
      guard let rep = RecordedReply.decode(bytes), let category = rep.category else { continue }
      if category == .endOfData {
        ended = true
        break
      }
      guard category == .fromClient, rep.elementHeader == 0 else { continue }
      let big = rep.dataIsBigEndian()
      RecordedReply.forEachRequest(in: UnsafeRawBufferPointer(rebasing: bytes[rep.data]), bigEndian: big) {
        body($0, rep.idBase, big)
      }
    }
  }

  /// Blocks until StartOfData arrives (nothing is recorded before it); the replies before
  /// it (none expected) are dropped.
  private func waitForStart(timeout: Duration) throws(XError) {
    try Self.waitForStart(data: data, enableSequence: enableSequence, timeout: timeout)
  }

  /// One look at EnableContext's reply stream (`waitForStart`).
  enum StartPoll: Sendable, Equatable {
    /// A reply, copied.
    case reply([UInt8])
    /// An error reply (its X error code; 0 when libxcb gave none): the context is not enabled.
    case failed(errorCode: UInt8)
    /// Nothing available now.
    case nothing
  }

  /// Creates a RECORD context on `control` recording `ranges` of all clients (headers off,
  /// clients named by their resource-id base): the one CreateContext of every RECORD
  /// context here (`RecordStream`'s, `CaptureDetector`'s, `KeyloggerRecorder`'s).
  static func createContext(on control: XConnection, ranges: [xcb_record_range_t]) throws(XError) -> UInt32 {
    let ctx = control.generateID()
    var spec = xcb_record_client_spec_t(XCB_RECORD_CS_ALL_CLIENTS.rawValue)
    let created = xcb_record_create_context_checked(control.conn, ctx, 0, 1, UInt32(ranges.count), &spec, ranges)
    if let err = xcb_request_check(control.conn, created) {
      let code = err.pointee.error_code
      free(err)
      throw .failed("RECORD CreateContext failed (X error \(code))")
    }
    return ctx
  }

  /// Blocks until StartOfData, the first reply of EnableContext (`enableSequence` on `data`),
  /// arrives: every request the server executes afterwards is recorded. Each reply before
  /// it (none expected) goes to `other`, which keeps it (the capture detector) or not (the
  /// default) and may throw to give up. Throws when EnableContext fails, `data` breaks or
  /// `timeout` passes first. The one wait of every RECORD context here: `RecordStream`'s and
  /// `CaptureDetector`'s.
  static func waitForStart(
    data: XConnection, enableSequence: UInt32, timeout: Duration,
    other: ([UInt8]) throws(XError) -> Void = { _ in }
  ) throws(XError) {
    try waitForStart(
      timeout: timeout,
      poll: {
        var reply: UnsafeMutableRawPointer? = nil
        var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
        guard xcb_poll_for_reply(data.conn, enableSequence, &reply, &error) != 0 else { return .nothing }
        guard let reply else {
          let code = error?.pointee.error_code ?? 0
          free(error)
          return .failed(errorCode: code)
        }
        defer { free(reply) }
        let words = reply.load(fromByteOffset: 4, as: UInt32.self)
        return .reply(Array(UnsafeRawBufferPointer(start: reply, count: 32 + Int(words) * 4)))
      },
      broken: { data.hasError ? "lost the RECORD data connection to \(data.displayName)" : nil },
      waitReadable: { left in
        var pfd = pollfd(fd: data.fileDescriptor, events: Int16(POLLIN), revents: 0)
        let ms = Int32(
          clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
        _ = poll(&pfd, 1, ms)
      },
      other: other)
  }

  /// `waitForStart`'s loop over any reply source: `poll` looks once without blocking,
  /// `broken` says why the connection is lost (nil: it is not), `waitReadable` waits at most
  /// the time left for more to arrive. (Tests drive it with a list of replies.)
  static func waitForStart(
    timeout: Duration, poll: () -> StartPoll, broken: () -> String?, waitReadable: (Duration) -> Void,
    other: ([UInt8]) throws(XError) -> Void
  ) throws(XError) {
    let deadline = ContinuousClock.now + timeout
    while true {
      switch poll() {
      case .reply(let bytes):
        if bytes.count >= 2 && bytes[1] == RecordedReply.Category.startOfData.rawValue { return }
        try other(bytes)
        continue
      case .failed(let code):
        throw .failed("RECORD EnableContext failed (X error \(code))")
      case .nothing:
        break
      }
      if let why = broken() { throw .failed(why) }
      let left = deadline - ContinuousClock.now
      if left <= .zero { throw .failed("RECORD EnableContext: no StartOfData within \(timeout)") }
      waitReadable(left)
    }
  }
}

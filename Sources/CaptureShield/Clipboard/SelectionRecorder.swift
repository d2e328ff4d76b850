// The copied-text guard's own RECORD context: who sent each ConvertSelection.
//
// A SelectionRequest names the requestor window, not the client that sent the
// ConvertSelection, and any client may name any window. RECORD names the sender. This
// context records two core requests of every client, both rare: ConvertSelection (24) and
// SetSelectionOwner (22, of which only the guard's own matter: `ConversionLedger`). It is
// the guard's, not the capture detector's: the guard works the same whatever the detector
// records, and reads its records in its own order (the ledger needs them in the server's).
//
// The guard's connection creates the context and stays recorded (its SetSelectionOwner and
// its sync markers are part of the stream); a second connection enables it and only
// receives, as RECORD requires (see `CaptureDetector`). The server flushes the records of
// a ConvertSelection when it next writes to any client, here at the latest when it sends
// the SelectionRequest to the guard.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Records ConvertSelection and SetSelectionOwner of all clients on a context created on
/// `control` (the guard's connection). One owner, one thread (the daemon's loop).
final class SelectionRecorder {
  let data: XConnection
  let context: UInt32
  let enableSequence: UInt32
  private let control: XConnection
  /// RECORD ended the context, or the data connection broke.
  private(set) var ended = false
  var hasError: Bool { ended || data.hasError }
  var fileDescriptor: Int32 { data.fileDescriptor }
  /// The data connection's resource-id base (a connection of the daemon's own).
  var dataBase: UInt32 { data.ownBase }

  init(control: XConnection, startTimeout: Duration = .seconds(2)) throws(XError) {
    guard control.hasExtension("RECORD") else { throw .missingExtension("RECORD") }
    self.control = control
    data = try XConnection(display: control.displayName)
    var ranges = [xcb_record_range_t(), xcb_record_range_t()]
    ranges[0].core_requests = xcb_record_range_8_t(
      first: ConversionLedger.setSelectionOwner, last: ConversionLedger.setSelectionOwner)
    ranges[1].core_requests = xcb_record_range_8_t(
      first: ConversionLedger.convertSelection, last: ConversionLedger.convertSelection)
    let ctx = control.generateID()
    context = ctx
    var spec = xcb_record_client_spec_t(XCB_RECORD_CS_ALL_CLIENTS.rawValue)
    let created = xcb_record_create_context_checked(control.conn, ctx, 0, 1, UInt32(ranges.count), &spec, ranges)
    if let err = xcb_request_check(control.conn, created) {
      let code = err.pointee.error_code
      free(err)
      throw .failed("RECORD CreateContext failed (X error \(code))")
    }
    // The receiving connection sends nothing recorded; the guard's own stays recorded.
    var own = [data.ownBase]
    if let err = xcb_request_check(
      control.conn, xcb_record_unregister_clients_checked(control.conn, ctx, UInt32(own.count), &own))
    {
      free(err)
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

  /// Every record available now (non-blocking), decoded, in the server's order.
  func read(own: ConversionLedger.Own) -> [ConversionLedger.Recorded] {
    var out: [ConversionLedger.Recorded] = []
    while !ended {
      var reply: UnsafeMutableRawPointer? = nil
      var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
      guard xcb_poll_for_reply(data.conn, enableSequence, &reply, &error) != 0 else { break }
      guard let reply else {
        free(error)
        ended = true  // an error reply, or libxcb says the request is over
        break
      }
      defer { free(reply) }
      let words = reply.load(fromByteOffset: 4, as: UInt32.self)
      let bytes = UnsafeRawBufferPointer(start: reply, count: 32 + Int(words) * 4)
      guard let rep = RecordedReply.decode(bytes) else { continue }
      switch rep.category {
      case .fromClient where rep.elementHeader == 0:
        let big = rep.dataIsBigEndian()
        RecordedReply.forEachRequest(in: UnsafeRawBufferPointer(rebasing: bytes[rep.data]), bigEndian: big) { r in
          if let d = ConversionLedger.decode(r, sender: rep.idBase, bigEndian: big, own: own) { out.append(d) }
        }
      case .endOfData:
        ended = true
      default:
        break
      }
    }
    return out
  }

  /// Blocks until StartOfData arrives (the context is live: every request the server
  /// executes from now on is recorded).
  private func waitForStart(timeout: Duration) throws(XError) {
    let deadline = ContinuousClock.now + timeout
    while true {
      var reply: UnsafeMutableRawPointer? = nil
      var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
      if xcb_poll_for_reply(data.conn, enableSequence, &reply, &error) != 0 {
        guard let reply else {
          let code = error?.pointee.error_code ?? 0
          free(error)
          throw .failed("RECORD EnableContext failed (X error \(code))")
        }
        let isStart = reply.load(fromByteOffset: 1, as: UInt8.self) == RecordedReply.Category.startOfData.rawValue
        free(reply)
        if isStart { return }
        continue  // nothing is recorded before StartOfData
      }
      if data.hasError { throw .failed("lost the RECORD data connection to \(data.displayName)") }
      let left = deadline - ContinuousClock.now
      if left <= .zero { throw .failed("RECORD EnableContext: no StartOfData within \(timeout)") }
      var pfd = pollfd(fd: data.fileDescriptor, events: Int16(POLLIN), revents: 0)
      _ = poll(&pfd, 1, 20)
    }
  }
}

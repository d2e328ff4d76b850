// Who removed a secure tag: a RECORD context of its own for the core DeleteProperty request
// (issue 17, finding 6). Two connections, as RECORD requires (see CaptureDetector for how
// the EnableContext replies are read without blocking). Only DeleteProperty is recorded: a
// small request (12 bytes) that apps send rarely (mostly after reading a selection), so
// the X server copies little and wakes the daemon seldom. ChangeProperty is not recorded:
// every client sends it all the time (titles, _NET_WM_USER_TIME at each key press, icons of
// hundreds of kilobytes), and recording it would copy all of that to the daemon; a tag
// zeroed with ChangeProperty is put back instead (`TagGuard`, fail safe).

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Records every client's DeleteProperty requests and hands out those of one property.
/// Not thread-safe: the daemon's loop polls `fileDescriptor` and calls `drain`.
final class TagWatch {
  private let control: XConnection
  private let data: XConnection
  private let context: UInt32
  private let enableSequence: UInt32
  /// The property whose deletions are handed out (`_CAPTURE_SHIELD_SECURE`).
  let property: xcb_atom_t
  private(set) var ended = false

  init(display: String?, property: xcb_atom_t, startTimeout: Duration = .seconds(5)) throws(XError) {
    control = try XConnection(display: display)
    data = try XConnection(display: display)
    self.property = property
    guard control.hasExtension("RECORD") else { throw .missingExtension("RECORD") }
    var range = xcb_record_range_t()
    range.core_requests = xcb_record_range_8_t(
      first: TagGuard.deletePropertyOpcode, last: TagGuard.deletePropertyOpcode)
    let ctx = control.generateID()
    context = ctx
    var spec = xcb_record_client_spec_t(XCB_RECORD_CS_ALL_CLIENTS.rawValue)
    if let err = xcb_request_check(
      control.conn, xcb_record_create_context_checked(control.conn, ctx, 0, 1, 1, &spec, [range]))
    {
      let code = err.pointee.error_code
      free(err)
      throw .failed("RECORD CreateContext failed (X error \(code))")
    }
    var own = [control.ownBase, data.ownBase]
    if let err = xcb_request_check(
      control.conn, xcb_record_unregister_clients_checked(control.conn, ctx, UInt32(own.count), &own))
    {
      free(err)
    }
    enableSequence = xcb_record_enable_context(data.conn, ctx).sequence
    data.flush()
    // Wait for StartOfData: every DeleteProperty after `init` returns is recorded.
    let deadline = ContinuousClock.now + startTimeout
    while true {
      var reply: UnsafeMutableRawPointer? = nil
      var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
      if xcb_poll_for_reply(data.conn, enableSequence, &reply, &error) != 0 {
        guard let reply else {
          free(error)
          throw .failed("RECORD EnableContext failed")
        }
        let start = reply.load(fromByteOffset: 1, as: UInt8.self) == RecordedReply.Category.startOfData.rawValue
        free(reply)
        if start { return }
        continue
      }
      if data.hasError { throw .failed("lost the RECORD data connection") }
      let left = deadline - ContinuousClock.now
      if left <= .zero { throw .failed("RECORD EnableContext: no StartOfData within \(startTimeout)") }
      var pfd = pollfd(fd: data.fileDescriptor, events: Int16(POLLIN), revents: 0)
      _ = poll(&pfd, 1, 50)
    }
  }

  deinit {
    xcb_record_disable_context(control.conn, context)
    xcb_record_free_context(control.conn, context)
    control.flush()
  }

  /// The resource-id bases of its two connections (the daemon's own clients).
  var ownBases: [UInt32] { [control.ownBase, data.ownBase] }

  /// Readable when records arrived.
  var fileDescriptor: Int32 { data.fileDescriptor }

  /// Every deletion of `property` recorded so far (non-blocking): the window and the
  /// deleting client's resource-id base, in order.
  func drain() -> [(window: WindowID, client: ClientID)] {
    var out: [(window: WindowID, client: ClientID)] = []
    while let e = xcb_poll_for_event(control.conn) { free(e) }
    while !ended {
      var reply: UnsafeMutableRawPointer? = nil
      var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
      guard xcb_poll_for_reply(data.conn, enableSequence, &reply, &error) != 0 else { break }
      guard let reply else {
        free(error)
        ended = true
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
      RecordedReply.forEachRequest(in: UnsafeRawBufferPointer(rebasing: bytes[rep.data]), bigEndian: big) { request in
        if let d = TagGuard.deletedProperty(request, bigEndian: big), d.property == property {
          out.append((d.window, ClientID(rep.idBase)))
        }
      }
    }
    return out
  }

  /// Whether the context or a connection ended (then tags are guarded fail safe only).
  var hasError: Bool { ended || control.hasError || data.hasError }
}

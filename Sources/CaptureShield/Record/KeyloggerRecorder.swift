// The keyboard watch's RECORD context (client-side mode of secure input): the
// requests by which a client listens to the keyboard (`KeylogOpcodes`: ChangeWindowAttributes,
// GrabKeyboard, GrabKey, QueryKeymap, XI SelectExtensionEvent and XISelectEvents, XKB
// SelectEvents, RECORD CreateContext and RegisterClients), SetInputFocus (the focus moved)
// and client deaths. Two connections, as RECORD requires (see CaptureDetector for how the
// EnableContext replies are read without blocking); decoding is `KeylogDecoder`'s.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Records every client's keyboard-listening requests. Not thread-safe: the daemon's loop
/// polls `fileDescriptor` and calls `drain`.
final class KeyloggerRecorder {
  private let control: XConnection
  private let data: XConnection
  private let context: UInt32
  private let enableSequence: UInt32
  let opcodes: KeylogOpcodes
  private var ended = false

  /// What `drain` hands out.
  enum Item {
    case record(ClientID, KeylogRecord, serverTime: UInt32)
    case clientDied(ClientID)
  }

  /// Records every client but its own two connections and `unrecorded` (the daemon's
  /// other connections: their own requests, such as the event masks the daemon selects
  /// on every window it follows, are not copied back to it).
  init(display: String?, unrecorded: [UInt32] = [], startTimeout: Duration = .seconds(5)) throws(XError) {
    control = try XConnection(display: display)
    data = try XConnection(display: display)
    guard control.hasExtension("RECORD") else { throw .missingExtension("RECORD") }
    let xi = control.queryExtension("XInputExtension")
    opcodes = KeylogOpcodes(
      xinput: xi?.majorOpcode, xinputFirstEvent: xi?.firstEvent,
      xkb: control.queryExtension("XKEYBOARD")?.majorOpcode, record: control.queryExtension("RECORD")?.majorOpcode)
    let core = KeylogOpcodes.core
    let ext = opcodes.extensionRanges
    var ranges: [xcb_record_range_t] = []
    for i in 0..<max(core.count, ext.count) {
      var r = xcb_record_range_t()
      if i < core.count { r.core_requests = xcb_record_range_8_t(first: core[i], last: core[i]) }
      if i < ext.count {
        r.ext_requests = xcb_record_ext_range_t(
          major: xcb_record_range_8_t(first: ext[i].major, last: ext[i].major),
          minor: xcb_record_range_16_t(first: UInt16(ext[i].minors.lowerBound), last: UInt16(ext[i].minors.upperBound)))
      }
      if i == 0 { r.client_died = 1 }
      ranges.append(r)
    }
    let ctx = try RecordStream.createContext(on: control, ranges: ranges)
    context = ctx
    var own = [control.ownBase, data.ownBase] + unrecorded
    if let err = xcb_request_check(
      control.conn, xcb_record_unregister_clients_checked(control.conn, ctx, UInt32(own.count), &own))
    {
      free(err)  // not fatal: the owner filters its own records anyway
    }
    enableSequence = xcb_record_enable_context(data.conn, ctx).sequence
    data.flush()
    try RecordStream.waitForStart(data: data, enableSequence: enableSequence, timeout: startTimeout)
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
  /// The context ended or a connection broke.
  var hasError: Bool { ended || control.hasError || data.hasError }

  /// Every record available now (non-blocking), decoded, in the server's order.
  func drain() -> [Item] {
    while let e = xcb_poll_for_event(control.conn) { free(e) }
    var out: [Item] = []
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
      switch category {
      case .endOfData:
        ended = true
      case .clientDied:
        out.append(.clientDied(ClientID(rep.idBase)))
      case .fromClient where rep.elementHeader == 0:
        let big = rep.dataIsBigEndian()
        RecordedReply.forEachRequest(in: UnsafeRawBufferPointer(rebasing: bytes[rep.data]), bigEndian: big) {
          for r in KeylogDecoder.decode(
            $0, clientBase: rep.idBase, resourceMask: control.resourceMask, bigEndian: big, opcodes: opcodes,
            root: control.root)
          {
            out.append(.record(ClientID(rep.idBase), r, serverTime: rep.serverTime))
          }
        }
      default:
        break
      }
    }
    return out
  }

  /// The secure window that has the keyboard focus now: the focus window or its nearest
  /// ancestor for which `isSecure` is true; nil when none (or the focus is None or
  /// PointerRoot). One GetInputFocus, then one QueryTree per level.
  func secureFocus(isSecure: (UInt32) -> Bool) -> UInt32? {
    guard let r = xcb_get_input_focus_reply(control.conn, xcb_get_input_focus(control.conn), nil) else { return nil }
    var w = r.pointee.focus
    free(r)
    for _ in 0..<64 {
      guard w > 1, w != control.root else { return nil }
      if isSecure(w) { return w }
      guard let parent = control.queryTree(w)?.parent else { return nil }
      w = parent
    }
    return nil
  }
}

// Who removed a secure tag: a RECORD context of its own for the core DeleteProperty request
// (docs/security.md, "Tags"). Two connections, as RECORD requires (see CaptureDetector for how
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
  /// Creates the context; errors of its unchecked requests are read (and logged) by `drain`.
  let control: XConnection
  private let stream: RecordStream
  /// The property whose deletions are handed out (`_CAPTURE_SHIELD_SECURE`).
  let property: xcb_atom_t

  /// X errors on its two connections are reported through `errors` (the daemon's policy).
  init(
    display: String?, property: xcb_atom_t, startTimeout: Duration = .seconds(5),
    errors: XErrorPolicy = XErrorPolicy(log: nil)
  ) throws(XError) {
    control = try XConnection(display: display)
    control.errors = errors
    self.property = property
    stream = try RecordStream(
      control: control, opcodes: [TagGuard.deletePropertyOpcode], unrecorded: [control.ownBase],
      startTimeout: startTimeout, name: "tag watch")
  }

  /// The resource-id bases of its two connections (the daemon's own clients).
  var ownBases: [UInt32] { [control.ownBase, stream.data.ownBase] }

  /// Readable when records arrived.
  var fileDescriptor: Int32 { stream.fileDescriptor }

  /// Every deletion of `property` recorded so far (non-blocking): the window and the
  /// deleting client's resource-id base, in order.
  func drain() -> [(window: WindowID, client: ClientID)] {
    var out: [(window: WindowID, client: ClientID)] = []
    control.drainErrors(connection: "tag watch's RECORD control")
    stream.forEachRequest { request, sender, big in
      if let d = TagGuard.deletedProperty(request, bigEndian: big), d.property == property {
        out.append((d.window, ClientID(sender)))
      }
    }
    return out
  }

  /// Whether the context or a connection ended (then tags are guarded fail safe only).
  var hasError: Bool { stream.hasError || control.hasError }
}

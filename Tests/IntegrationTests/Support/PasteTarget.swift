// A paste target: a focused window of a test's own that reads a selection the way a
// focused app pastes (ConvertSelection into its own window), as the copied-text guard's
// "reader the user meant".

import CXCB
import Foundation
import Glibc
import ShieldTestSupport

/// A paste target: a window of its own that holds the input focus (as the app the user
/// pastes into), reading CLIPBOARD into it on demand. Stays open (and focused) until closed.
final class PasteTarget {
  let x: TestXConnection
  let window: xcb_window_t

  /// A 40x40 override-redirect window at (`x`, `y`) on `display`, mapped and focused.
  init(display: String, x left: Int16 = 900, y top: Int16 = 700) throws {
    x = try TestXConnection(display: display)
    window = x.generateID()
    let values: [UInt32] = [1]
    try x.check(
      xcb_create_window_checked(
        x.raw, UInt8(XCB_COPY_FROM_PARENT), window, x.root, left, top, 40, 40, 0,
        UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), x.rootVisual, XCB_CW_OVERRIDE_REDIRECT.rawValue, values),
      "CreateWindow")
    xcb_map_window(x.raw, window)
    focus()
  }

  func focus() {
    xcb_set_input_focus(x.raw, UInt8(XCB_INPUT_FOCUS_POINTER_ROOT.rawValue), window, 0)
    x.flush()
  }

  /// Whether this window has the input focus now.
  var isFocused: Bool {
    guard let r = xcb_get_input_focus_reply(x.raw, xcb_get_input_focus(x.raw), nil) else { return false }
    defer { free(r) }
    return r.pointee.focus == window
  }

  /// The selection's text (UTF8_STRING), nil when refused.
  func read(_ selection: String = "CLIPBOARD") throws -> String? {
    let prop = try x.internAtom("CS_TEST_PASTE")
    xcb_delete_property(x.raw, window, prop)
    xcb_convert_selection(x.raw, window, try x.internAtom(selection), try x.internAtom("UTF8_STRING"), prop, 0)
    x.flush()
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
      while let ev = xcb_poll_for_event(x.raw) {
        defer { free(ev) }
        guard ev.pointee.response_type & 0x7f == XCB_SELECTION_NOTIFY else { continue }
        let e = UnsafeRawPointer(ev).load(as: xcb_selection_notify_event_t.self)
        guard e.property != 0 else { return nil }
        return try x.takeText(window, prop)
      }
      var fds = [pollfd(fd: xcb_get_file_descriptor(x.raw), events: Int16(POLLIN), revents: 0)]
      _ = poll(&fds, 1, 20)
    }
    return nil
  }

  func close() { x.disconnect() }
}

extension PasteTarget {
  convenience init(_ server: XvfbServer) throws { try self.init(display: server.display) }
}

extension TestXConnection {
  /// The text in `property` of `window` (as UTF-8; "" when empty or missing), deleting the
  /// property as a selection's requestor does after reading the answer.
  func takeText(_ window: xcb_window_t, _ property: xcb_atom_t) throws -> String {
    let r = try ownedReply("GetProperty") { err in
      xcb_get_property_reply(raw, xcb_get_property(raw, 1, window, property, 0, 0, 1 << 20), err)
    }
    defer { free(r) }
    let n = Int(xcb_get_property_value_length(r))
    guard n > 0, let p = xcb_get_property_value(r) else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
  }
}

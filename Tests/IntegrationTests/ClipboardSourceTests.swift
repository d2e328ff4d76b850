// The source app's own read-back and clear, with a source of the
// test's own that behaves as a password manager does: it copies at its own timestamp
// (ICCCM), and later, while another app has the focus, reads the clipboard back to check
// it still holds its text, then clears it with that same timestamp.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

/// A secure source on one connection, driven by the test (no thread): it answers the
/// guard's conversions while `pump` runs, and reads the selection into its own window.
private final class PasswordManager {
  let x: TestXConnection
  let window: xcb_window_t
  let text: [UInt8]
  let clipboard: xcb_atom_t, targets: xcb_atom_t, utf8: xcb_atom_t, prop: xcb_atom_t
  /// The SelectionNotify answering our own read, when it came.
  private var answer: xcb_selection_notify_event_t?

  init(_ server: XvfbServer, text: String) throws {
    x = try server.connect()
    self.text = Array(text.utf8)
    window = x.generateID()
    let values: [UInt32] = [1, XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue]
    xcb_create_window(
      x.raw, UInt8(XCB_COPY_FROM_PARENT), window, x.root, 10, 10, 40, 40, 0,
      UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), x.rootVisual,
      XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue, values)
    var one: UInt32 = 1
    xcb_change_property(
      x.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, try x.internAtom("_CAPTURE_SHIELD_SECURE"), 6, 32, 1, &one)
    xcb_map_window(x.raw, window)
    (clipboard, targets, utf8, prop) = (
      try x.internAtom("CLIPBOARD"), try x.internAtom("TARGETS"), try x.internAtom("UTF8_STRING"),
      try x.internAtom("CS_TEST_READBACK")
    )
    try x.sync()
  }

  /// The server's time now (a zero-length property append, its PropertyNotify's time).
  func serverTime() throws -> xcb_timestamp_t {
    xcb_change_property(x.raw, UInt8(XCB_PROP_MODE_APPEND.rawValue), window, prop, utf8, 8, 0, nil)
    x.flush()
    var time: xcb_timestamp_t?
    while time == nil {
      guard let ev = xcb_wait_for_event(x.raw) else { throw XConnectionError.noReply("PropertyNotify") }
      defer { free(ev) }
      if ev.pointee.response_type & 0x7f == XCB_PROPERTY_NOTIFY {
        time = UnsafeRawPointer(ev).load(as: xcb_property_notify_event_t.self).time
      } else {
        handle(ev)
      }
    }
    return time!
  }

  func setOwner(_ owner: xcb_window_t, time: xcb_timestamp_t) {
    xcb_set_selection_owner(x.raw, owner, clipboard, time)
    x.flush()
  }

  /// Handles the events there are now (answers conversions of our copy).
  func pump() {
    while let ev = xcb_poll_for_event(x.raw) {
      handle(ev)
      free(ev)
    }
    x.flush()
  }

  private func handle(_ ev: UnsafeMutablePointer<xcb_generic_event_t>) {
    switch Int32(ev.pointee.response_type & 0x7f) {
    case XCB_SELECTION_REQUEST:
      let e = UnsafeRawPointer(ev).load(as: xcb_selection_request_event_t.self)
      let p = e.property == 0 ? e.target : e.property
      var reply = xcb_selection_notify_event_t()
      reply.response_type = UInt8(XCB_SELECTION_NOTIFY)
      (reply.time, reply.requestor, reply.selection, reply.target) = (e.time, e.requestor, e.selection, e.target)
      if e.target == targets {
        var list: [UInt32] = [targets, utf8]
        xcb_change_property(x.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), e.requestor, p, 4, 32, 2, &list)
        reply.property = p
      } else if e.target == utf8 {
        xcb_change_property(
          x.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), e.requestor, p, utf8, 8, UInt32(text.count), text)
        reply.property = p
      }
      withUnsafeBytes(of: &reply) { raw in
        var buf = [CChar](repeating: 0, count: 32)
        for i in 0..<min(32, raw.count) { buf[i] = CChar(bitPattern: raw[i]) }
        xcb_send_event(x.raw, 0, e.requestor, 0, buf)
      }
    case XCB_SELECTION_NOTIFY:
      answer = UnsafeRawPointer(ev).load(as: xcb_selection_notify_event_t.self)
    default:
      break
    }
  }

  /// Reads CLIPBOARD back into our window (as KeePassXC does before it clears): the text,
  /// or nil when refused.
  func readBack() async throws -> String? {
    answer = nil
    xcb_convert_selection(x.raw, window, clipboard, utf8, prop, 0)
    x.flush()
    try await waitUntil("the answer to our read-back", timeout: .seconds(10)) {
      pump()
      return answer != nil
    }
    guard let a = answer, a.property != 0 else { return nil }
    return try x.takeText(window, prop)
  }
}

@Suite("Copied-text guard: the source's own read-back and clear", .serialized, .timeLimit(.minutes(2)))
struct ClipboardSourceTests {
  static let secret = "source-readback-secret-42"

  @Test("while another app has the focus, the source reads its copy back and its clear at its own timestamp wipes it")
  func readBackAndClear() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server, policy: #"{version: 1, clipboard: {clearAfter: "120s"}}"#)
    let source = try PasswordManager(server, text: Self.secret)
    try await waitUntil("the source window is secure") {
      (try daemon.state())?.windows.contains { $0.id == source.window && $0.secure } ?? false
    }
    // Copy at the source's own timestamp, as ICCCM asks (not CurrentTime).
    let copiedAt = try source.serverTime()
    source.setOwner(source.window, time: copiedAt)
    try await waitUntil("the copy is guarded", timeout: .seconds(10)) {
      source.pump()
      return try daemon.state()?.clipboard?.guarded.contains { $0.selection == "CLIPBOARD" && $0.state == "guarded" }
        ?? false
    }
    // The user pastes elsewhere: another client has the focus from now on.
    let other = try await TestWindow.open(on: server, rect: PixelRect(x: 400, y: 300, width: 50, height: 50))
    defer { other.close() }
    let fx = try server.connect()
    defer { fx.disconnect() }
    xcb_set_input_focus(fx.raw, UInt8(XCB_INPUT_FOCUS_POINTER_ROOT.rawValue), other.id, 0)
    try fx.sync()

    // The source's read-back: its own text.
    let back = try await source.readBack()
    #expect(back == Self.secret, "read back: \(back ?? "refused")")
    #expect(
      daemon.auditEvents("clipboard-read").contains { $0["why"] as? String == "source reads back its own copy" },
      "\(daemon.auditEvents("clipboard-read")) \(daemon.auditEvents("clipboard-read-refused"))")
    // A background reader still gets nothing.
    let background = try await server.run("xclip", ["-o", "-selection", "clipboard"], timeout: .seconds(10))
    #expect(background.stdoutText.isEmpty)

    // The source clears with the timestamp it copied at: the guarded copy goes at once.
    source.setOwner(0, time: copiedAt)
    try await waitUntil("the guarded copy is wiped", timeout: .seconds(10)) {
      try daemon.state()?.clipboard?.guarded.isEmpty == true
    }
    #expect(try fx.selectionOwner("CLIPBOARD") == 0)
    #expect(daemon.auditEvents("clipboard-clear").map { $0["why"] as? String } == ["cleared (no owner)"])
    print(
      "source read-back: \(back?.utf8.count ?? 0) bytes; background xclip \(background.stdout.count) bytes; "
        + "clear: \(daemon.auditEvents("clipboard-clear").map { $0["why"] ?? "" })")
    await daemon.stop()
    await server.stop()
  }
}

// Capture notices: the `_CAPTURE_SHIELD_CAPTURE_CHANGED` ClientMessage goes only to apps
// that opted in with `_CAPTURE_SHIELD_NOTIFY` (Qt logs every message it does not know:
// KeePassXC wrote 162 "Unhandled client message" lines). The root's
// `_CAPTURE_SHIELD_CAPTURING` stays for everyone.

import CXCB
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Capture notices only to apps that opted in", .serialized, .timeLimit(.minutes(2)))
struct CaptureNoticeTests {
  /// What the app's connection received, in order.
  enum Seen: Equatable {
    case rootProperty(xcb_atom_t)
    case message(window: xcb_window_t, type: xcb_atom_t, value: UInt32)
  }

  @Test("a secure window without the opt-in receives no ClientMessage during a capture; one with it does")
  func onlyOptedIn() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, capture: {linger: \"200ms\"}}")
    let app = try XClient(display: server.display)
    let capturing = app.atom("_CAPTURE_SHIELD_CAPTURING")
    let state = app.atom("_CAPTURE_SHIELD_STATE")
    let changed = app.atom("_CAPTURE_SHIELD_CAPTURE_CHANGED")
    // The app watches the root's properties: the positive markers.
    var mask = XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue
    xcb_change_window_attributes(app.conn, app.root, XCB_CW_EVENT_MASK.rawValue, &mask)
    // Both secure; only `asked` sets `_CAPTURE_SHIELD_NOTIFY` = 1 (before mapping).
    let quiet = app.appWindow(x: 10, y: 10, width: 80, height: 60, color: 0xFF0000, title: "quiet", secure: true)
    let asked = app.appWindow(
      x: 100, y: 10, width: 80, height: 60, color: 0xFF0000, title: "asked", secure: true, map: false)
    var one: UInt32 = 1
    xcb_change_property(
      app.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), asked, app.atom("_CAPTURE_SHIELD_NOTIFY"), 6, 32, 1, &one)
    xcb_map_window(app.conn, asked)
    app.sync()
    try await waitUntil("the daemon lists both windows as secure", timeout: .seconds(10)) {
      let rows = try daemon.state()?.windows ?? []
      return [quiet, asked].allSatisfy { w in rows.contains { $0.id == w && $0.secure } }
    }

    var seen: [Seen] = []
    func read() {
      while let ev = xcb_poll_for_event(app.conn) {
        let raw = UnsafeRawPointer(ev)
        switch Int32(ev.pointee.response_type & 0x7f) {
        case XCB_PROPERTY_NOTIFY:
          let e = raw.load(as: xcb_property_notify_event_t.self)
          if e.window == app.root { seen.append(.rootProperty(e.atom)) }
        case XCB_CLIENT_MESSAGE:
          let e = raw.load(as: xcb_client_message_event_t.self)
          seen.append(.message(window: e.window, type: e.type, value: e.data.data32.0))
        default: break
        }
        free(ev)
      }
    }
    read()
    seen = []
    // A capture session: xwd reads the screen and exits; the linger ends the session.
    let xwd = try await server.run("/usr/bin/xwd", ["-root", "-silent", "-out", "/dev/null"])
    #expect(xwd.status == .exited(0))
    // Positive marker: `_CAPTURE_SHIELD_CAPTURING` changed twice (capture on, then off),
    // and the state was published after that. The daemon sends the ClientMessages between
    // the property change and the state, on one connection; this connection receives
    // everything in the order the server handled it, so every message of both changes is
    // in `seen` by then.
    try await waitUntil("capture started and stopped, and the state after it", timeout: .seconds(20)) {
      read()
      let changes = seen.indices.filter { seen[$0] == .rootProperty(capturing) }
      guard changes.count >= 2 else { return false }
      return seen[changes[1]...].contains(.rootProperty(state))
    }
    let messages = seen.compactMap { s -> (xcb_window_t, UInt32)? in
      if case .message(let w, let type, let value) = s, type == changed { return (w, value) }
      return nil
    }
    #expect(!messages.contains { $0.0 == quiet }, "the window that never asked got \(messages.count) messages")
    #expect(messages.filter { $0.0 == asked }.map(\.1) == [1, 0])
    print(
      "capture notices: opted-in window got \(messages.filter { $0.0 == asked }.count), the other got \(messages.filter { $0.0 == quiet }.count)"
    )
    await daemon.stop()
    await server.stop()
  }
}

// A window manager's exit is not a capture: openbox gives up WM_S0 and
// then reparents the windows it managed back to the root. Recorded, those ReparentWindow
// requests of secure windows by a client that is no longer the window manager were
// "capture requests" (audited, a session, shields up for the linger). A reparent counts
// now only into a window of the client's own, where it could read the secure window.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("A window manager's exit", .serialized, .timeLimit(.minutes(2)))
struct WindowManagerExitTests {
  static func parent(_ x: TestXConnection, of w: UInt32) -> UInt32? {
    guard let tree = xcb_query_tree_reply(x.raw, xcb_query_tree(x.raw, w), nil) else { return nil }
    defer { free(tree) }
    return tree.pointee.parent
  }

  @Test("openbox exits with a secure window managed: no capture request; a reparent into an own window is one")
  func exitIsNoCapture() async throws {
    let server = try await XvfbServer.start()
    let wm = try await server.startWindowManager()
    let window = try await TestWindow.open(
      on: server, rect: PixelRect(x: 100, y: 100, width: 200, height: 150), color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    let connection = try server.connect()
    try await waitUntil("openbox has framed the window", timeout: .seconds(10)) {
      Self.parent(connection, of: window.id) != connection.root
    }
    _ = await wm.stop()
    try await waitUntil("the window is back on the root", timeout: .seconds(10)) {
      Self.parent(connection, of: window.id) == connection.root
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    let afterExit = daemon.auditEvents("capture-request")
    print("capture requests after openbox's exit: \(afterExit)")
    #expect(afterExit.isEmpty, "\(afterExit)")
    // Control: a client reparents the secure window into a window of its own.
    let attacker = try server.connect()
    let own = attacker.generateID()
    try attacker.check(
      xcb_create_window_checked(
        attacker.raw, 0, own, attacker.root, 0, 0, 400, 400, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0,
        0, nil),
      "CreateWindow")
    try attacker.check(xcb_reparent_window_checked(attacker.raw, window.id, own, 0, 0), "ReparentWindow")
    try await waitUntil("the reparent into an own window is a capture request", timeout: .seconds(10)) {
      daemon.auditEvents("capture-request").contains { $0["request"] as? String == "ReparentWindow" }
    }
    attacker.disconnect()
    connection.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }
}

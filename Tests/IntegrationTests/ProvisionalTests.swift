// Provisional windows: a window whose facts are not known yet (created,
// not mapped) is shielded while shields are up, so that it cannot appear unshielded in a
// live capture between its MapWindow and the daemon reading its class and tag. It must not
// stay so: a window never mapped (a toolkit's hidden helper window, a window manager's
// own) is decided by its facts 1 s after it appeared (`Engine.provisionalLimit`), and
// property changes after that decide it like a mapped window's.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Provisional windows end", .serialized, .timeLimit(.minutes(2)))
struct ProvisionalTests {
  static let policy = "{version: 1, shield: {when: \"always\"}, secure: [{name: \"vault\", class: \"Vault\"}]}"

  /// A window of `x`'s, unmapped, with no property at all (like a toolkit's helper window).
  static func bareWindow(_ x: TestXConnection) throws -> xcb_window_t {
    let w = x.generateID()
    try x.check(
      xcb_create_window_checked(
        x.raw, 0, w, x.root, 10, 10, 50, 50, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0, 0, nil),
      "CreateWindow")
    return w
  }

  @Test(
    "a window of a secure app that is never mapped stops being provisional; a secure class set later shields it"
  )
  func neverMappedWindowSettles() async throws {
    let server = try await XvfbServer.start()
    let app = try await TestWindow.open(on: server, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: Self.policy)
    try await daemon.waitShielded(app.id)
    // The app's second window: the daemon sees it at CreateNotify, with no facts.
    let helper = try Self.bareWindow(app.connection)
    try await waitUntil("the daemon decided the helper window", timeout: .seconds(10)) {
      daemon.auditEvents("secure-decision").contains { $0["window"] as? String == hex(helper) }
    }
    let first = daemon.auditEvents("secure-decision").first { $0["window"] as? String == hex(helper) }
    #expect(first?["reason"] as? String == "provisional (facts not known yet)", "\(String(describing: first))")
    // It ends (on main it stayed provisional and shielded for as long as the app ran): its
    // shield goes, and the published state no longer lists it.
    try await waitUntil("the helper window's shield removal is audited", timeout: .seconds(10)) {
      daemon.auditEvents("unshield").contains { $0["window"] as? String == hex(helper) }
    }
    try await waitUntil("the state lists the helper window neither provisional nor shielded", timeout: .seconds(10)) {
      guard let s = try daemon.state() else { return false }
      return !s.windows.contains { $0.id == helper }
    }
    #expect(daemon.isShielded(app.id))
    // Still unmapped, it takes a secure class: shielded by the rule (property changes count).
    let wmClass = Array("vault\0Vault\0".utf8)
    try app.connection.check(
      xcb_change_property_checked(
        app.connection.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), helper, XCB_ATOM_WM_CLASS.rawValue,
        XCB_ATOM_STRING.rawValue, 8,
        UInt32(wmClass.count), wmClass),
      "ChangeProperty(WM_CLASS)")
    try await waitUntil("the helper window is secure by rule and shielded", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains {
        $0.id == helper && $0.reason.hasPrefix("rule #1 \"vault\"") && $0.shielded
      }
        ?? false
    }
    try app.connection.check(xcb_map_window_checked(app.connection.raw, helper), "MapWindow")
    try await daemon.waitUntilCaughtUp()
    #expect(daemon.isShielded(helper))
    await daemon.stop()
    app.close()
    await server.stop()
  }
}

// A capture session never outlives its client. With `capture.hold:
// "connected"` a request session lasts while its client is connected; the daemon reads
// RECORD in batches, and a read of a client's own drawable used to be handled after the
// batch's ClientDied: the client was then taken for a new one, and its session was pinned
// to a connection that was over, so the secure window stayed hidden until the daemon
// stopped (`make bench`'s reaction row: "the shield did not come down within 10.0 s").
// The daemon is stopped while the client acts, so that its requests and its end come in
// one batch, every time.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("A capture session never outlives its client", .serialized, .timeLimit(.minutes(3)))
struct SessionEndTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  enum Tool: String, CaseIterable, Sendable {
    /// Composite RedirectWindow + NameWindowPixmap of the secure window, GetImage of the
    /// pixmap, FreePixmap (the bench's composite-pixmap tool).
    case namedPixmap = "NameWindowPixmap, GetImage of the pixmap"
    /// A background-None window of its own over the secure window, read (GetImage).
    case ownOverlay = "GetImage of an own window over the secure window"
  }

  @Test(
    "the client acts and exits while the daemon is stopped: its session ends after the linger", arguments: Tool.allCases
  )
  func endsAfterItsClient(_ tool: Tool) async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {hold: \"connected\", linger: \"300ms\"}}")
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    daemon.signal(SIGSTOP)
    let attacker = try server.connect()
    let client = "0x" + String(attacker.generateID() & ~xcb_get_setup(attacker.raw).pointee.resource_id_mask, radix: 16)
    var secret = 0
    switch tool {
    case .namedPixmap:
      xcb_composite_redirect_window(attacker.raw, window.id, UInt8(XCB_COMPOSITE_REDIRECT_AUTOMATIC.rawValue))
      let pixmap = attacker.generateID()
      try attacker.check(xcb_composite_name_window_pixmap_checked(attacker.raw, window.id, pixmap), "NameWindowPixmap")
      secret = try attacker.getImage(of: pixmap).count(of: .red)
      try attacker.check(xcb_free_pixmap_checked(attacker.raw, pixmap), "FreePixmap")
    case .ownOverlay:
      let w = attacker.generateID()
      try attacker.check(
        xcb_create_window_checked(
          attacker.raw, 0, w, attacker.root, Int16(Self.rect.x), Int16(Self.rect.y), UInt16(Self.rect.width),
          UInt16(Self.rect.height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0,
          XCB_CW_OVERRIDE_REDIRECT.rawValue, [1]),
        "CreateWindow")
      try attacker.check(xcb_map_window_checked(attacker.raw, w), "MapWindow")
      secret = try attacker.getImage(of: w).count(of: .red)
    }
    attacker.disconnect()
    print("\(tool.rawValue): the attacker read \(secret) secret pixels (the daemon was stopped)")
    daemon.signal(SIGCONT)
    // The capture is seen (the shield goes up for the linger) ...
    try await waitUntil("the capture is audited", timeout: .seconds(10)) {
      daemon.auditEvents("session-start").contains {
        $0["client"] as? String == client && $0["kind"] as? String == "request"
      }
    }
    // ... and every session of the client ends, and the shield comes down.
    try await waitUntil("every session of the client ends", timeout: .seconds(10)) {
      let started = daemon.auditEvents("session-start").filter { $0["client"] as? String == client }.count
      let ended = daemon.auditEvents("session-end").filter { $0["client"] as? String == client }.count
      return started > 0 && started == ended
    }
    try await daemon.waitShielded(window.id, false)
    // What the audit names: the naming of the window's pixmap is the capture, and reading the
    // named pixmap back is no read of an own window; a read of an own window over the secure
    // window is one.
    let requests = (daemon.auditEvents("capture-request") + daemon.auditEvents("session-start"))
      .filter { $0["client"] as? String == client }.compactMap { $0["request"] as? String }
    print("\(tool.rawValue): audited \(requests)")
    switch tool {
    case .namedPixmap:
      #expect(requests.contains("Composite NameWindowPixmap"))
      #expect(!requests.contains { $0.hasSuffix("(own window)") })
    case .ownOverlay:
      #expect(requests.contains("GetImage(own window)"))
    }
    #expect(secret > 0, "the attack read the window (the daemon was stopped)")
    #expect(!daemon.isShielded(window.id))
    await daemon.stop()
    window.close()
    await server.stop()
  }
}

// Secure views in client-side mode (`_CAPTURE_SHIELD_VIEWS`): the shield
// covers a view, not the whole window. A 400x300 green top-level holds a 200x100 red area:
// (1) a child window tagged `_CAPTURE_SHIELD_SECURE` (an embedded widget), (2) a rectangle of
// the top-level declared in its `_CAPTURE_SHIELD_VIEWS` (what toolkits without native child
// windows do), moved as the app updates the property. xwd shots of the root during a capture
// session must get 0 red pixels and keep all 100,000 green ones; the controls (the child
// untagged, the property absent) must get the 20,000 red ones.
//
// The red area is a child window with a red background in both cases, so its pixels survive
// the exposures a shield causes (the server repaints a background; an app would repaint what
// it draws). In case (2) the child is not tagged: only the top-level's property names it.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Secure views (client-side)", .serialized, .timeLimit(.minutes(4)))
struct SecureViewTests {
  static let top = PixelRect(x: 100, y: 100, width: 400, height: 300)
  static let area = PixelRect(x: 100, y: 100, width: 200, height: 100)  // in the top-level
  static let policy = "{version: 1, capture: {linger: \"30s\"}}"

  /// The green top-level with the red child (`tagged`: the child carries the tag; `views`:
  /// the top-level declares the child's rectangle as a view). Both mapped.
  static func open(on server: XvfbServer, tagged: Bool, views: Bool) async throws -> (TestWindow, UInt32) {
    let window = try await TestWindow.open(on: server, rect: top, color: .green, map: false)
    let c = window.connection
    let child = c.generateID()
    try c.check(
      xcb_create_window_checked(
        c.raw, UInt8(XCB_COPY_FROM_PARENT), child, window.id, Int16(area.x), Int16(area.y), UInt16(area.width),
        UInt16(area.height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), c.rootVisual,
        XCB_CW_BACK_PIXEL.rawValue, [c.pixel(for: .red)]),
      "CreateWindow(child)")
    if tagged {
      try c.check(
        xcb_change_property_checked(
          c.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), child, try c.internAtom(secureWindowProperty),
          try c.internAtom("CARDINAL"), 32, 1, [UInt32(1)]),
        "ChangeProperty(child tag)")
    }
    if views { try setViews(window, area) }
    try c.check(xcb_map_window_checked(c.raw, child), "MapWindow(child)")
    try await window.map()
    return (window, child)
  }

  static func setViews(_ window: TestWindow, _ r: PixelRect) throws {
    try window.setProperty32(
      "_CAPTURE_SHIELD_VIEWS", type: "CARDINAL", [UInt32(r.x), UInt32(r.y), UInt32(r.width), UInt32(r.height)])
  }

  /// A capture session (a client that read the root and stays connected), then two xwd
  /// shots of the root: (red, green) pixels of each.
  static func shots(_ server: XvfbServer, daemon: DaemonProcess, shielded: UInt32?) async throws -> [(Int, Int)] {
    if let shielded { try await daemon.waitShielded(shielded) }
    var out: [(Int, Int)] = []
    for _ in 0..<2 {
      let shot = try await Capture.xwdRoot(on: server)
      out.append((shot.count(of: .red), shot.count(of: .green)))
    }
    return out
  }

  @Test("a tagged child window is shielded alone: 0 red, the green around it kept", arguments: [true, false])
  func taggedChild(_ tagged: Bool) async throws {
    let server = try await XvfbServer.start()
    let (window, child) = try await Self.open(on: server, tagged: tagged, views: false)
    let daemon = try await DaemonProcess.start(on: server, policy: Self.policy)
    try await daemon.waitUntilCaughtUp()
    let capturer = try server.connect()
    _ = try capturer.getImage(of: capturer.root)  // the session starts
    if !tagged { try await daemon.waitUntilCaughtUp() }
    let counts = try await Self.shots(server, daemon: daemon, shielded: tagged ? child : nil)
    let list = try await Shieldctl.run(["list"], on: server)
    let listed = String(decoding: list.stdout, as: UTF8.self)
    print("secure view, child \(tagged ? "tagged" : "untagged (control)"): xwd (red, green) \(counts); list: \(listed)")
    if tagged {
      #expect(counts.allSatisfy { $0 == (0, 100_000) }, "\(counts)")
      #expect(!daemon.isShielded(window.id), "the top-level itself is not shielded")
      #expect(listed.contains(hex(child)), "\(listed)")
    } else {
      #expect(counts.allSatisfy { $0 == (20_000, 100_000) }, "control: \(counts)")
    }
    capturer.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("_CAPTURE_SHIELD_VIEWS: only its rectangle is shielded, and it follows the property", arguments: [true, false])
  func viewProperty(_ declared: Bool) async throws {
    let server = try await XvfbServer.start()
    let (window, child) = try await Self.open(on: server, tagged: false, views: declared)
    let daemon = try await DaemonProcess.start(on: server, policy: Self.policy)
    try await daemon.waitUntilCaughtUp()
    let capturer = try server.connect()
    _ = try capturer.getImage(of: capturer.root)
    if !declared { try await daemon.waitUntilCaughtUp() }
    let before = try await Self.shots(server, daemon: daemon, shielded: declared ? window.id : nil)
    // The layout changes: the area moves to 20,20, then the app updates the property.
    let moved = PixelRect(x: 20, y: 20, width: 200, height: 100)
    let c = window.connection
    try c.check(
      xcb_configure_window_checked(
        c.raw, child, UInt16(XCB_CONFIG_WINDOW_X.rawValue | XCB_CONFIG_WINDOW_Y.rawValue), [UInt32(20), UInt32(20)]),
      "ConfigureWindow(child)")
    if declared {
      try Self.setViews(window, moved)
      try await waitUntil("the daemon follows the view to 20,20", timeout: .seconds(10)) {
        try daemon.state()?.windows.contains { $0.id == window.id && $0.reason.contains("200x100+20+20") } ?? false
      }
    }
    try await daemon.waitUntilCaughtUp()
    let after = try await Self.shots(server, daemon: daemon, shielded: nil)
    let list = String(decoding: try await Shieldctl.run(["list"], on: server).stdout, as: UTF8.self)
    print(
      "secure view property \(declared ? "set" : "absent (control)"): xwd (red, green) \(before), moved \(after); list: \(list)"
    )
    if declared {
      #expect((before + after).allSatisfy { $0 == (0, 100_000) }, "\(before) \(after)")
      #expect(list.contains("views (app): 200x100+20+20"), "\(list)")
    } else {
      #expect((before + after).allSatisfy { $0 == (20_000, 100_000) }, "control: \(before) \(after)")
    }
    capturer.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }
}

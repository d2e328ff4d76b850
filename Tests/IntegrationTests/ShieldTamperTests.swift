// Client-side mode: another client of the display tampers with a shield other than by
// unmapping or destroying it. Each attack, on a real Xvfb against a
// daemon whose shields are always up, must be repaired at once, audited, and leave no
// secret pixel in a screenshot, also after the attacker has gone.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Shield tampering other than unmap/destroy", .serialized, .timeLimit(.minutes(4)))
struct ShieldTamperTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  @Test("a displaced shield is repaired at once and audited; no secret pixel leaks", arguments: ShieldTamper.displacing)
  func displacedShieldIsRepaired(_ attack: ShieldTamper) async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, shield: {when: \"always\"}}")
    try await daemon.waitShielded(window.id)

    // The app has a red child covering the window (what a lowered shield would show).
    let app = try server.connect()
    let child = app.generateID()
    var back: [UInt32] = [app.pixel(for: .red)]
    try app.check(
      xcb_create_window_checked(
        app.raw, 0, child, window.id, 0, 0, UInt16(Self.rect.width), UInt16(Self.rect.height), 0,
        UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0, XCB_CW_BACK_PIXEL.rawValue, &back),
      "CreateWindow(child)")
    try app.check(xcb_map_window_checked(app.raw, child), "MapWindow(child)")
    try await waitUntil("the shield is on top of the app's child", timeout: .seconds(10)) {
      try await Self.shieldInPlace(in: window, on: server, app) != nil
    }
    let shield = try #require(try await Self.shieldInPlace(in: window, on: server, app))
    #expect(try await Capture.xwdRoot(on: server).count(of: .red, in: Self.rect) == 0)

    let attacker = try server.connect()
    let before = daemon.auditEvents("shield-tampered").count
    try attack.send(attacker, shield: shield)
    // Another window passes over the secure one: the server repaints what it uncovers
    // (an empty clip shape leaves the shield unpainted).
    try Self.passOver(Self.rect, on: attacker)

    // Positive markers: the daemon audits the tampering and a shield is back in place (on
    // a build without the repair these time out, and the screenshots below show the leak).
    try? await waitUntil("the tampering is audited", timeout: .seconds(10)) {
      daemon.auditEvents("shield-tampered").count > before
    }
    try? await waitUntil("a shield is in place again", timeout: .seconds(10)) {
      // A redirected shield cannot be told from outside: its replacement can.
      let now = try await Self.shieldInPlace(in: window, on: server, app)
      return now != nil && (attack != .redirect || now != shield)
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    let leaked = try await Capture.xwdRoot(on: server).count(of: .red, in: Self.rect)
    // The attacker exits: the shield must not stay displaced (it did on main).
    attacker.disconnect()
    try await daemon.waitUntilCaughtUp(retitling: window)
    let leakedAfterExit = try await Capture.xwdRoot(on: server).count(of: .red, in: Self.rect)
    print("ShieldTamperTests \(attack): red pixels \(leaked) during, \(leakedAfterExit) after the attacker exits")
    #expect(leaked == 0, "\(attack): \(leaked) secret pixels in the screenshot")
    #expect(leakedAfterExit == 0, "\(attack): \(leakedAfterExit) secret pixels after the attacker exits")

    let records = daemon.auditEvents("shield-tampered").dropFirst(before)
    #expect(
      records.contains { ($0["how"] as? String)?.contains(attack.audited) == true }, "\(attack): \(Array(records))")
    if attack == .redirect {
      // The redirecting client is named, with its identity, by the bypass record.
      let bypass = daemon.auditEvents("shield-bypass-attempt")
      #expect(bypass.contains { $0["target"] as? String == hex(shield) && $0["pid"] as? Int == Int(getpid()) })
    }
    // `list --json` tells the truth: shielded, and a shield is in place.
    let list = try await Shieldctl.run(["list", "--json"], on: server)
    let rows = try JSONSerialization.jsonObject(with: Data(list.stdoutText.utf8)) as? [[String: Any]] ?? []
    let row = rows.first { ($0["id"] as? Int).map(UInt32.init) == window.id || $0["id"] as? String == hex(window.id) }
    #expect(row?["shielded"] as? Bool == true, "\(list.stdoutText)")
    #expect(try await Self.shieldInPlace(in: window, on: server, app) != nil)
    #expect(daemon.process.isRunning)
    await daemon.stop()
    window.close()
    await server.stop()
  }

  /// Maps an override-redirect window over `rect` and destroys it again (an exposure).
  static func passOver(_ rect: PixelRect, on c: TestXConnection) throws {
    let w = c.generateID()
    var values: [UInt32] = [c.blackPixel, 1]
    try c.check(
      xcb_create_window_checked(
        c.raw, 0, w, c.root, Int16(rect.x), Int16(rect.y), UInt16(rect.width), UInt16(rect.height), 0,
        UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0,
        XCB_CW_BACK_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue, &values),
      "CreateWindow(pass over)")
    try c.check(xcb_map_window_checked(c.raw, w), "MapWindow(pass over)")
    try c.check(xcb_destroy_window_checked(c.raw, w), "DestroyWindow(pass over)")
  }

  /// The shield of `window` when it is where the daemon puts it: a child named
  /// "CaptureShield", the topmost, at the window's origin, 32767×32767, viewable, with no
  /// bounding or clip shape. Nil otherwise.
  static func shieldInPlace(in window: TestWindow, on server: XvfbServer, _ c: TestXConnection) async throws -> UInt32?
  {
    guard let shield = try? await shieldChild(of: window.id, on: server) else { return nil }
    guard let tree = xcb_query_tree_reply(c.raw, xcb_query_tree(c.raw, window.id), nil) else { return nil }
    defer { free(tree) }
    let n = Int(xcb_query_tree_children_length(tree))
    let children = Array(UnsafeBufferPointer(start: xcb_query_tree_children(tree), count: n))
    guard children.last == shield else { return nil }
    let origin = try c.geometry(of: window.id)
    guard let g = try? c.geometry(of: shield), g.isViewable, g.x == origin.x, g.y == origin.y, g.width == 32767,
      g.height == 32767, g.borderWidth == 0
    else { return nil }
    guard let shape = xcb_shape_query_extents_reply(c.raw, xcb_shape_query_extents(c.raw, shield), nil) else {
      return nil
    }
    defer { free(shape) }
    return shape.pointee.bounding_shaped == 0 && shape.pointee.clip_shaped == 0 ? shield : nil
  }
}

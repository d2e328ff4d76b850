// Forged registry plus a restart: another client plants a fake shield
// (a child of the secure window, named and marked like ours, with an empty SHAPE, so it
// covers nothing) and lists it in `_CAPTURE_SHIELD_SHIELDS`. A restarted daemon must adopt
// only what an earlier daemon provably left (its registry file) and what provably covers:
// the fake is refused (audited), the window is shielded by a real shield, no frame leaks;
// in closed mode the real retained shield is adopted and guarded, not left an orphan.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("A forged shield registry and a daemon restart", .serialized, .timeLimit(.minutes(4)))
struct ForgedRegistryTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  static let frames = 10

  /// The attacker's fake shield in `target`: InputOutput, (0,0) 32767x32767, named
  /// "CaptureShield", marked with the target, an empty bounding shape, mapped, and listed
  /// alone in the root's `_CAPTURE_SHIELD_SHIELDS`.
  static func plantFake(_ a: TestXConnection, in target: UInt32) throws -> UInt32 {
    let fake = a.generateID()
    try a.check(
      xcb_create_window_checked(
        a.raw, 0, fake, target, 0, 0, 32767, 32767, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0, 0, nil),
      "CreateWindow")
    let name = Array("CaptureShield".utf8)
    try a.check(
      xcb_change_property_checked(
        a.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), fake, XCB_ATOM_WM_NAME.rawValue, XCB_ATOM_STRING.rawValue, 8,
        UInt32(name.count), name),
      "ChangeProperty(WM_NAME)")
    var mark = target
    try a.check(
      xcb_change_property_checked(
        a.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), fake, try a.internAtom("_CAPTURE_SHIELD_SHIELD"),
        XCB_ATOM_CARDINAL.rawValue, 32, 1, &mark),
      "ChangeProperty(_CAPTURE_SHIELD_SHIELD)")
    try a.check(
      xcb_shape_rectangles_checked(
        a.raw, UInt8(XCB_SHAPE_SO_SET.rawValue), UInt8(XCB_SHAPE_SK_BOUNDING.rawValue), 0, fake, 0, 0, 0, nil),
      "ShapeRectangles(empty)")
    try a.check(xcb_map_window_checked(a.raw, fake), "MapWindow")
    var pair: [UInt32] = [fake, target]
    try a.check(
      xcb_change_property_checked(
        a.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), a.root, try a.internAtom("_CAPTURE_SHIELD_SHIELDS"),
        XCB_ATOM_CARDINAL.rawValue, 32, 2, &pair),
      "ChangeProperty(_CAPTURE_SHIELD_SHIELDS)")
    return fake
  }

  /// Secret pixels in each of `frames` GetImages of the root.
  static func leaks(_ a: TestXConnection) throws -> [Int] {
    try (0..<frames).map { _ in try a.getImage(of: a.root).count(of: .red, in: rect) }
  }

  static func children(of window: UInt32, _ c: TestXConnection) throws -> [UInt32] {
    let tree = try #require(xcb_query_tree_reply(c.raw, xcb_query_tree(c.raw, window), nil))
    defer { free(tree) }
    return Array(UnsafeBufferPointer(start: xcb_query_tree_children(tree), count: Int(tree.pointee.children_len)))
  }

  static func expectRefused(_ daemon: DaemonProcess, fake: UInt32) {
    #expect(
      daemon.auditEvents("shield-adoption-refused").contains { $0["window"] as? String == hex(fake) },
      "\(daemon.audit)")
  }

  @Test("open mode: the fake shield is refused at the restart and a real shield covers the window")
  func fakeShieldRefusedOpenMode() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let policy = "{version: 1, shield: {when: \"always\"}}"
    let first = try await DaemonProcess.start(on: server, policy: policy)
    try await first.waitShielded(window.id)
    await first.stop()  // open mode: its shields go with it

    let attacker = try server.connect()
    let fake = try Self.plantFake(attacker, in: window.id)
    let restarted = try await DaemonProcess.start(on: server, policy: policy)
    try await restarted.waitShielded(window.id)
    try await restarted.waitUntilCaughtUp(retitling: window)
    let leaked = try Self.leaks(attacker)
    print("forged registry, open mode: \(leaked.filter { $0 > 0 }.count) of \(leaked.count) frames leaked \(leaked)")
    #expect(leaked.allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    Self.expectRefused(restarted, fake: fake)
    let registry = try rootCardinals("_CAPTURE_SHIELD_SHIELDS", on: server)
    #expect(!registry.contains(fake), "\(registry.map(hex))")
    attacker.disconnect()
    await restarted.stop()
    window.close()
    await server.stop()
  }

  @Test("closed mode: the fake is refused and no shield of ours is left an orphan")
  func fakeShieldRefusedClosedMode() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let policy = "{version: 1, shield: {when: \"always\", failMode: \"closed\"}}"
    let first = try await DaemonProcess.start(on: server, policy: policy)
    try await first.waitShielded(window.id)
    let retained = try await shieldChild(of: window.id, on: server)
    first.signal(SIGKILL)
    _ = await first.stop()

    let attacker = try server.connect()
    let fake = try Self.plantFake(attacker, in: window.id)
    let restarted = try await DaemonProcess.start(on: server, policy: policy)
    try await restarted.waitShielded(window.id)
    try await restarted.waitUntilCaughtUp(retitling: window)
    Self.expectRefused(restarted, fake: fake)
    // The registry names one shield for the window, not the fake: the retained one
    // (adopted), or a new one when the retained one no longer covered (the fake lies on top
    // of it) and was destroyed. Either way no shield of ours is left unguarded.
    let registry = try rootCardinals("_CAPTURE_SHIELD_SHIELDS", on: server)
    let refusals = restarted.auditEvents("shield-adoption-refused")
    print(
      "forged registry, closed mode: retained \(hex(retained)), registry \(registry.map(hex)), refused: \(refusals)")
    #expect(registry.count == 2 && registry.last == window.id && registry.first != fake, "\(registry.map(hex))")
    #expect(
      registry.first == retained || (try? server.geometry(of: retained)) == nil,
      "the retained \(hex(retained)) is an orphan; registry \(registry.map(hex)); \(refusals)")

    // Every real shield in the window is guarded: unmapping it is repaired (a daemon that
    // adopted the fake instead left the retained one an orphan, and every frame leaked).
    let tampered = restarted.auditEvents("shield-tampered").count
    let real = try Self.children(of: window.id, attacker).filter { $0 != fake }
    #expect(!real.isEmpty)
    for s in real { try attacker.check(xcb_unmap_window_checked(attacker.raw, s), "UnmapWindow") }
    do {
      try await waitUntil("the daemon repairs its shield", timeout: .seconds(5)) {
        restarted.auditEvents("shield-tampered").count > tampered
      }
    } catch { /* counted below */  }
    try await restarted.waitUntilCaughtUp(retitling: window)
    let leaked = try Self.leaks(attacker)
    print("forged registry, closed mode: \(leaked.filter { $0 > 0 }.count) of \(leaked.count) frames leaked \(leaked)")
    #expect(leaked.allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    attacker.disconnect()
    await restarted.stop()
    window.close()
    await server.stop()
  }
}

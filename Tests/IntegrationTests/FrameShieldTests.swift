// The window manager's frame of a shielded window (issue 18, point 5): a reparenting window
// manager draws the window's title ("vault.kdbx - KeePassXC") in the frame around it. While
// the window is shielded, its frame is covered too, title bar and borders included.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Window-manager frames of shielded windows", .serialized, .timeLimit(.minutes(2)))
struct FrameShieldTests {
  /// The colours a shield shows: the two greys of its tile and its label.
  static let shieldColors = [RGB(0x1c, 0x1c, 0x1c), RGB(0x2e, 0x2e, 0x2e), RGB(0xd0, 0xd0, 0xd0)]

  /// The top-level ancestor of `window` (the frame openbox put it in).
  static func frame(of window: UInt32, _ x: XConnection) throws -> UInt32 {
    var current = window
    while true {
      let reply = try x.ownedReply("QueryTree") { xcb_query_tree_reply(x.raw, xcb_query_tree(x.raw, current), $0) }
      let parent = reply.pointee.parent
      free(reply)
      if parent == x.root { return current }
      current = parent
    }
  }

  /// The mapped children of `frame` that are shields (`_CAPTURE_SHIELD_SHIELD` set).
  static func mappedShields(in frame: UInt32, _ x: XConnection) throws -> Int {
    let tree = try x.ownedReply("QueryTree") { xcb_query_tree_reply(x.raw, xcb_query_tree(x.raw, frame), $0) }
    defer { free(tree) }
    let children = (0..<Int(xcb_query_tree_children_length(tree))).map { xcb_query_tree_children(tree)![$0] }
    let name = "_CAPTURE_SHIELD_SHIELD"
    let atom = try x.ownedReply("InternAtom") {
      xcb_intern_atom_reply(x.raw, xcb_intern_atom(x.raw, 1, UInt16(name.utf8.count), name), $0)
    }
    defer { free(atom) }
    var n = 0
    for c in children {
      let p = try x.ownedReply("GetProperty") {
        xcb_get_property_reply(x.raw, xcb_get_property(x.raw, 0, c, atom.pointee.atom, 0, 0, 1), $0)
      }
      let marked = p.pointee.type != 0
      free(p)
      let a = try x.ownedReply("GetWindowAttributes") {
        xcb_get_window_attributes_reply(x.raw, xcb_get_window_attributes(x.raw, c), $0)
      }
      if marked && a.pointee.map_state != UInt8(XCB_MAP_STATE_UNMAPPED.rawValue) { n += 1 }
      free(a)
    }
    return n
  }

  /// Pixels of `rect` outside `inner` that are not shield colours.
  static func unshieldedPixels(_ image: RGBImage, frame rect: PixelRect, client inner: PixelRect) -> Int {
    let all = rect.area - inner.intersection(rect).area
    let shield = shieldColors.reduce(0) { $0 + image.count(of: $1, in: rect) - image.count(of: $1, in: inner) }
    return all - shield
  }

  @Test("under openbox, a capture sees neither the secure window nor its frame's title bar (after the first frame)")
  func titleBarCovered() async throws {
    let server = try await XvfbServer.start()
    let windowManager = try await server.startWindowManager()
    let window = try await TestWindow.open(
      on: server, color: .red, title: "vault.kdbx - KeePassXC", secure: true)
    try await window.waitFor("openbox to reparent the window") { $0.reparentedTo != nil }
    let observer = try server.connect()
    let frame = try Self.frame(of: window.id, observer)
    let frameRect = try observer.geometry(of: frame).rect
    let clientRect = try observer.geometry(of: window.id).rect
    #expect(frame != window.id && frameRect.area > clientRect.area, "frame \(frameRect), client \(clientRect)")
    // Before the daemon: the frame shows openbox's decorations (the measure is not empty).
    let before = try Capture.getImageRoot(on: server)
    let decorated = Self.unshieldedPixels(before, frame: frameRect, client: clientRect)
    #expect(decorated > 0)

    let daemon = try await Daemon.start(on: server, policy: "{version: 1}")
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    var leaked: [Int] = []
    var secret: [Int] = []
    for i in 0..<4 {
      let image = try await Capture.xwdRoot(on: server)
      leaked.append(Self.unshieldedPixels(image, frame: frameRect, client: clientRect))
      secret.append(image.count(of: .red))
      if i == 0 { try await daemon.waitShielded(window.id) }
    }
    print("frame pixels not covered per frame: \(leaked) (of \(frameRect.area - clientRect.area)); secret: \(secret)")
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "\(leaked)")
    #expect(secret.dropFirst().allSatisfy { $0 == 0 }, "\(secret)")

    #expect(try Self.mappedShields(in: frame, observer) == 1)
    // The capture over, the shields go, the frame's too: the user sees the title again.
    try await daemon.waitShielded(window.id, false, timeout: .seconds(20))
    try await waitUntil("the frame's shield is gone", timeout: .seconds(10)) {
      try Self.mappedShields(in: frame, observer) == 0
    }
    observer.disconnect()
    await daemon.stop()
    window.close()
    await windowManager.stop()
    await server.stop()
  }
}

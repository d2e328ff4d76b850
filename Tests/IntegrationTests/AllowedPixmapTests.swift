// Reading an allowed client's pixmaps. An allowed
// compositor names every window's pixmap (Composite NameWindowPixmap) without starting a
// capture session. Any other client can then use such a pixmap as a GC tile, fill a pixmap
// of its own with it and read that back: a request that can only read a pixmap, which the
// daemon did not record (recording CreateGC/ChangeGC costs every client). With an allow
// rule in the policy those requests are recorded too, and one that uses an allowed client's
// pixmap is capture.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Another client reads an allowed compositor's pixmaps", .serialized, .timeLimit(.minutes(4)))
struct AllowedPixmapTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  static let policy = "{version: 1, capture: {allow: [{exe: \"*/picom\"}], linger: \"300ms\"}}"

  /// The attacker's search: a pixmap (not a window) of the compositor's client with the
  /// secure window's size, found by asking the geometry of every id in the compositor's
  /// first 8192 (pipelined), as an attacker would.
  static func compositorPixmap(_ c: TestXConnection, compositorBase: UInt32) -> xcb_pixmap_t? {
    let ids = (1..<8192).map { compositorBase | UInt32($0) }
    let geometry = ids.map { xcb_get_geometry(c.raw, $0) }
    let attributes = ids.map { xcb_get_window_attributes(c.raw, $0) }
    var found: xcb_pixmap_t?
    for (i, id) in ids.enumerated() {
      var error: UnsafeMutablePointer<xcb_generic_error_t>?
      let g = xcb_get_geometry_reply(c.raw, geometry[i], &error)
      free(error)
      error = nil
      let a = xcb_get_window_attributes_reply(c.raw, attributes[i], &error)
      free(error)
      defer {
        free(g)
        free(a)
      }
      if let g, a == nil, found == nil, g.pointee.width == UInt16(rect.width), g.pointee.height == UInt16(rect.height),
        g.pointee.depth == c.rootDepth
      {
        found = id
      }
    }
    return found
  }

  /// One frame of the attack: an own pixmap filled through a GC tiled with `tile`, read
  /// back. Returns the secret (red) pixels in it.
  static func readThroughTile(_ c: TestXConnection, tile: xcb_pixmap_t) throws -> Int {
    let own = c.generateID()
    xcb_create_pixmap(c.raw, c.rootDepth, own, c.root, UInt16(rect.width), UInt16(rect.height))
    let gc = c.generateID()
    let values: [UInt32] = [UInt32(XCB_FILL_STYLE_TILED.rawValue), tile]
    xcb_create_gc(c.raw, gc, own, XCB_GC_FILL_STYLE.rawValue | XCB_GC_TILE.rawValue, values)
    var r = xcb_rectangle_t(x: 0, y: 0, width: UInt16(rect.width), height: UInt16(rect.height))
    xcb_poly_fill_rectangle(c.raw, own, gc, 1, &r)
    let image = try c.getImage(of: own)
    xcb_free_gc(c.raw, gc)
    xcb_free_pixmap(c.raw, own)
    c.flush()
    return image.count(of: .red)
  }

  @Test(
    "a GC tiled with the allowed compositor's pixmap of a secure window: at most the first frame, audited",
    arguments: ["at start", "after a reload"])
  func tileFromAnAllowedCompositorsPixmap(_ when: String) async throws {
    let server = try await XvfbServer.start()
    let picom = try await server.startCompositor()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon: DaemonProcess
    if when == "at start" {
      daemon = try await DaemonProcess.start(on: server, policy: Self.policy)
    } else {
      // No allow rule at first: pixmap reads are not recorded (and the compositor counts as
      // capturing); the reload that allows it must start recording them.
      daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, capture: {linger: \"300ms\"}}")
      try Self.policy.write(toFile: daemon.policyPath, atomically: true, encoding: .utf8)
      daemon.signal(SIGHUP)
      try await waitUntil("the reloaded policy allows the compositor", timeout: .seconds(10)) {
        !daemon.auditEvents("policy-loaded").isEmpty
      }
      try await daemon.waitShielded(window.id, false)
    }
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    #expect(!daemon.isShielded(window.id), "the allowed compositor must not start a session")

    let attacker = try server.connect()
    let owner = try attacker.selectionOwner("_NET_WM_CM_S0")
    let mask = xcb_get_setup(attacker.raw).pointee.resource_id_mask
    let base = owner & ~mask
    var tile: xcb_pixmap_t?
    try await waitUntil("the attacker finds the compositor's pixmap of the window", timeout: .seconds(10)) {
      tile = Self.compositorPixmap(attacker, compositorBase: base)
      return tile != nil
    }
    var leaked: [Int] = []
    for frame in 0..<5 {
      // The compositor may name a new pixmap when the window changes: look again.
      if frame > 0 { tile = Self.compositorPixmap(attacker, compositorBase: base) ?? tile }
      leaked.append(try Self.readThroughTile(attacker, tile: try #require(tile)))
      if frame == 0 {
        print("tile from the allowed compositor's pixmap (\(when)): first frame \(leaked[0]) secret pixels")
        // Not part of the attack: the first frame races the shields; the next ones come
        // after the daemon put them up (a positive wait).
        try await daemon.waitShielded(window.id)
        try await waitUntil("the compositor's pixmap shows the shield", timeout: .seconds(5)) {
          let t = Self.compositorPixmap(attacker, compositorBase: base) ?? tile!
          return try attacker.getImage(of: window.id).count(of: .red) == 0
            && (try? Self.readThroughTile(attacker, tile: t)) ?? 0 == 0
        }
      }
    }
    print("tile from the allowed compositor's pixmap (\(when)): secret pixels per frame \(leaked)")
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    let starts = daemon.auditEvents("session-start").filter { $0["pid"] as? Int == Int(getpid()) }
    #expect(starts.count == 1, "\(daemon.auditEvents("session-start"))")
    #expect((starts.first?["request"] as? String)?.hasPrefix("CreateGC") == true, "\(starts)")

    attacker.disconnect()
    await daemon.stop()
    _ = await picom.stop()
    window.close()
    await server.stop()
  }

  @Test("a tile from a pixmap of a client that is not allowed starts no session (recorded, not capture)")
  func tileFromAnOrdinaryClientsPixmap() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: Self.policy)
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    // Another ordinary client's pixmap (as a wallpaper setter's root pixmap would be).
    let owner = try server.connect()
    let pixmap = owner.generateID()
    xcb_create_pixmap(owner.raw, owner.rootDepth, pixmap, owner.root, UInt16(Self.rect.width), UInt16(Self.rect.height))
    owner.flush()
    try owner.sync()
    let reader = try server.connect()
    _ = try Self.readThroughTile(reader, tile: pixmap)
    try reader.sync()
    // A positive marker: the daemon has handled every record and event before it.
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(daemon.auditEvents("session-start").isEmpty, "\(daemon.auditEvents("session-start"))")
    #expect(!daemon.isShielded(window.id))
    reader.disconnect()
    owner.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }
}

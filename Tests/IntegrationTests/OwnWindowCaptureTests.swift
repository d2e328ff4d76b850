// Capture through the client's own window: a client maps a window of
// its own with background None over a secure window and reads that window (GetImage, or
// CopyArea into an own pixmap read back later, or Composite's pixmap of it, named by
// NameWindowPixmap), or reparents the secure window into a
// window of its own and reads the parent. Its requests name only its own drawables. A
// client-side daemon learns of a request after the server ran it (RECORD), so the first
// frame may leak; the bound every correct build meets: no later frame leaks, and the
// capture is audited with the attacker's executable.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Capture through the client's own window", .serialized, .timeLimit(.minutes(4)))
struct OwnWindowCaptureTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  static let frames = 10

  /// The red secure window, and a daemon with the default policy that has decided it is
  /// secure (and, under `shield.when: capturing`, not shielded it).
  static func setUp() async throws -> (XvfbServer, TestWindow, DaemonProcess) {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    #expect(!daemon.isShielded(window.id))
    return (server, window, daemon)
  }

  /// The attacker's client id as the audit names it.
  static func clientID(_ x: TestXConnection) -> String {
    let mask = xcb_get_setup(x.raw).pointee.resource_id_mask
    return "0x" + String(x.generateID() & ~mask, radix: 16)
  }

  /// A top-level window of the attacker's: override-redirect, background None (it shows
  /// what the screen holds beneath it), unmapped.
  static func overlay(_ x: TestXConnection, _ r: PixelRect, backgroundNone: Bool = true) throws -> xcb_window_t {
    let w = x.generateID()
    let mask = (backgroundNone ? 0 : XCB_CW_BACK_PIXEL.rawValue) | XCB_CW_OVERRIDE_REDIRECT.rawValue
    let values: [UInt32] = backgroundNone ? [1] : [x.whitePixel, 1]
    try x.check(
      xcb_create_window_checked(
        x.raw, 0, w, x.root, Int16(r.x), Int16(r.y), UInt16(r.width), UInt16(r.height), 0,
        UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0, mask, values),
      "CreateWindow")
    return w
  }

  /// Runs `frame` `frames` times and counts the secret (red) pixels of each. After the first
  /// frame (not part of the attack) it waits until the daemon has shielded the window, so
  /// that what follows does not race the daemon's reaction: a daemon that never reacts
  /// fails that wait (recorded, not thrown) and then leaks the other frames.
  static func attack(
    _ daemon: DaemonProcess, _ window: TestWindow, _ name: String, frame: () throws -> RGBImage
  ) async throws -> [Int] {
    var leaked: [Int] = []
    for i in 0..<Self.frames {
      leaked.append(try frame().count(of: .red))
      if i == 0 {
        do {
          try await daemon.waitShielded(window.id)
        } catch {
          print("\(name): the daemon did not shield the window after the first frame: \(error)")
        }
      }
    }
    print("\(name): \(leaked.filter { $0 > 0 }.count) of \(leaked.count) frames leaked (secret pixels: \(leaked))")
    return leaked
  }

  /// The capture is audited, with the attacker's client id, pid and executable.
  static func expectAudited(_ daemon: DaemonProcess, attacker: String, requests: Set<String>) throws {
    let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let captures = daemon.auditEvents("capture-request").filter { $0["client"] as? String == attacker }
    #expect(captures.count == 1, "\(daemon.auditEvents("capture-request"))")
    #expect(requests.contains(captures.first?["request"] as? String ?? ""), "\(captures)")
    #expect(captures.first?["exe"] as? String == exe, "\(captures)")
    let starts = daemon.auditEvents("session-start").filter {
      $0["kind"] as? String == "request" && $0["client"] as? String == attacker
    }
    #expect(starts.count == 1, "\(daemon.auditEvents("session-start"))")
    #expect(starts.first?["exe"] as? String == exe, "\(starts)")
    #expect(starts.first?["pid"] as? Int == Int(getpid()), "\(starts)")
  }

  @Test("a background-None window over the secure window, GetImage on it, unmap: at most the first frame leaks")
  func getImageOfOwnOverlay() async throws {
    let (server, window, daemon) = try await Self.setUp()
    let attacker = try server.connect()
    let overlay = try Self.overlay(attacker, Self.rect)
    let leaked = try await Self.attack(daemon, window, "GetImage of an own overlay") {
      try attacker.check(xcb_map_window_checked(attacker.raw, overlay), "MapWindow")
      let image = try attacker.getImage(of: overlay)
      try attacker.check(xcb_unmap_window_checked(attacker.raw, overlay), "UnmapWindow")
      return image
    }
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    try Self.expectAudited(daemon, attacker: Self.clientID(attacker), requests: ["GetImage(own window)"])
    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test(
    "the same, moved away from the secure window before GetImage (the contents move along): at most the first frame leaks"
  )
  func getImageOfMovedOverlay() async throws {
    let (server, window, daemon) = try await Self.setUp()
    let attacker = try server.connect()
    let overlay = try Self.overlay(attacker, Self.rect)
    let xy = UInt16(XCB_CONFIG_WINDOW_X.rawValue | XCB_CONFIG_WINDOW_Y.rawValue)
    let away: [UInt32] = [500, 400]
    let back: [UInt32] = [UInt32(Self.rect.x), UInt32(Self.rect.y)]
    let leaked = try await Self.attack(daemon, window, "GetImage of an own overlay moved away") {
      // Over the secure window (unmapped), mapped there, moved away, read, unmapped: when the
      // daemon asks where the window is, it is away (after the first frame it stays there
      // until the daemon has reacted).
      try attacker.check(xcb_configure_window_checked(attacker.raw, overlay, xy, back), "ConfigureWindow")
      try attacker.check(xcb_map_window_checked(attacker.raw, overlay), "MapWindow")
      try attacker.check(xcb_configure_window_checked(attacker.raw, overlay, xy, away), "ConfigureWindow")
      let image = try attacker.getImage(of: overlay)
      try attacker.check(xcb_unmap_window_checked(attacker.raw, overlay), "UnmapWindow")
      return image
    }
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    try Self.expectAudited(daemon, attacker: Self.clientID(attacker), requests: ["GetImage(own window)"])
    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test(
    "a pixmap's id, read as a pixmap, then freed and reused for a background-None window over the secure window: at most the first frame leaks"
  )
  func pixmapIDReusedForOverlay() async throws {
    let (server, window, daemon) = try await Self.setUp()
    let attacker = try server.connect()
    let id = attacker.generateID()
    try attacker.check(
      xcb_create_pixmap_checked(
        attacker.raw, attacker.rootDepth, id, attacker.root, UInt16(Self.rect.width), UInt16(Self.rect.height)),
      "CreatePixmap")
    // The daemon learns that `id` is a pixmap (GetImage of an own pixmap reads nothing
    // secret). A later capture by another client, recorded after that read, marks that the
    // daemon has handled it; the marker's session then ends (it disconnects) before the attack.
    _ = try attacker.getImage(of: id)
    let marker = try server.connect()
    let markerID = Self.clientID(marker)
    _ = try marker.getImage(of: marker.root, rect: PixelRect(x: 0, y: 0, width: 1, height: 1))
    try await waitUntil("the daemon saw the marker's capture", timeout: .seconds(10)) {
      try daemon.state()?.sessions.contains { "\($0.client)" == markerID } ?? false
    }
    marker.disconnect()
    try await waitUntil("the marker's session ended and the shield is down", timeout: .seconds(20)) {
      try daemon.state()?.sessions.isEmpty ?? false
    }
    try await waitUntil("the shield is down", timeout: .seconds(10)) { !daemon.isShielded(window.id) }
    #expect(daemon.auditEvents("capture-request").filter { $0["client"] as? String == Self.clientID(attacker) }.isEmpty)
    // The same id, now a window over the secure window.
    try attacker.check(xcb_free_pixmap_checked(attacker.raw, id), "FreePixmap")
    let mask = XCB_CW_OVERRIDE_REDIRECT.rawValue
    let values: [UInt32] = [1]
    try attacker.check(
      xcb_create_window_checked(
        attacker.raw, 0, id, attacker.root, Int16(Self.rect.x), Int16(Self.rect.y), UInt16(Self.rect.width),
        UInt16(Self.rect.height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0, mask, values),
      "CreateWindow(reused id)")
    let leaked = try await Self.attack(daemon, window, "GetImage of an overlay with a freed pixmap's id") {
      try attacker.check(xcb_map_window_checked(attacker.raw, id), "MapWindow")
      let image = try attacker.getImage(of: id)
      try attacker.check(xcb_unmap_window_checked(attacker.raw, id), "UnmapWindow")
      return image
    }
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    try Self.expectAudited(daemon, attacker: Self.clientID(attacker), requests: ["GetImage(own window)"])
    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("the same, copied into an own pixmap (CopyArea) and read from there: at most the first frame leaks")
  func copyOfOwnOverlay() async throws {
    let (server, window, daemon) = try await Self.setUp()
    let attacker = try server.connect()
    let overlay = try Self.overlay(attacker, Self.rect)
    let pixmap = attacker.generateID()
    try attacker.check(
      xcb_create_pixmap_checked(
        attacker.raw, attacker.rootDepth, pixmap, attacker.root, UInt16(Self.rect.width), UInt16(Self.rect.height)),
      "CreatePixmap")
    let gc = attacker.generateID()
    let black: [UInt32] = [attacker.blackPixel]
    try attacker.check(
      xcb_create_gc_checked(attacker.raw, gc, pixmap, XCB_GC_FOREGROUND.rawValue, black), "CreateGC")
    var all = xcb_rectangle_t(x: 0, y: 0, width: UInt16(Self.rect.width), height: UInt16(Self.rect.height))
    let leaked = try await Self.attack(daemon, window, "CopyArea of an own overlay") {
      // Each frame starts from a black pixmap: what it holds afterwards is this frame's copy.
      try attacker.check(xcb_poly_fill_rectangle_checked(attacker.raw, pixmap, gc, 1, &all), "PolyFillRectangle")
      try attacker.check(xcb_map_window_checked(attacker.raw, overlay), "MapWindow")
      try attacker.check(
        xcb_copy_area_checked(
          attacker.raw, overlay, pixmap, gc, 0, 0, 0, 0, UInt16(Self.rect.width), UInt16(Self.rect.height)),
        "CopyArea")
      try attacker.check(xcb_unmap_window_checked(attacker.raw, overlay), "UnmapWindow")
      return try attacker.getImage(of: pixmap)
    }
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    try Self.expectAudited(daemon, attacker: Self.clientID(attacker), requests: ["CopyArea(own window)"])
    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  /// Composite gives a window it redirects a pixmap of its own and fills it with what the
  /// parent shows there (the screen, with the secure window) when the window has background
  /// None; NameWindowPixmap names that pixmap, and GetImage of the pixmap reads it. The
  /// requests name only the attacker's own window and pixmap.
  @Test(
    "the same, redirected and named (Composite NameWindowPixmap) and read from the pixmap: at most the first frame leaks"
  )
  func namedPixmapOfOwnOverlay() async throws {
    let (server, window, daemon) = try await Self.setUp()
    let attacker = try server.connect()
    if let r = xcb_composite_query_version_reply(attacker.raw, xcb_composite_query_version(attacker.raw, 0, 4), nil) {
      free(r)
    }
    let overlay = try Self.overlay(attacker, Self.rect)
    let automatic = UInt8(XCB_COMPOSITE_REDIRECT_AUTOMATIC.rawValue)
    let leaked = try await Self.attack(daemon, window, "NameWindowPixmap of an own overlay") {
      try attacker.check(xcb_map_window_checked(attacker.raw, overlay), "MapWindow")
      try attacker.check(xcb_composite_redirect_window_checked(attacker.raw, overlay, automatic), "RedirectWindow")
      let pixmap = attacker.generateID()
      try attacker.check(
        xcb_composite_name_window_pixmap_checked(attacker.raw, overlay, pixmap), "NameWindowPixmap")
      let image = try attacker.getImage(of: pixmap)
      try attacker.check(xcb_free_pixmap_checked(attacker.raw, pixmap), "FreePixmap")
      try attacker.check(
        xcb_composite_unredirect_window_checked(attacker.raw, overlay, automatic), "UnredirectWindow")
      try attacker.check(xcb_unmap_window_checked(attacker.raw, overlay), "UnmapWindow")
      return image
    }
    #expect(leaked.first ?? 0 > 0, "the attack reads the secure window before the daemon reacts: \(leaked)")
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    try Self.expectAudited(
      daemon, attacker: Self.clientID(attacker), requests: ["Composite NameWindowPixmap(own window)"])
    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("reparenting the secure window into an own window and reading the parent: at most the first frame leaks")
  func reparentIntoOwnWindow() async throws {
    let (server, window, daemon) = try await Self.setUp()
    let attacker = try server.connect()
    // A plain window elsewhere on the screen (white background), the new parent.
    let parentRect = PixelRect(x: 400, y: 300, width: 240, height: 190)
    let parent = try Self.overlay(attacker, parentRect, backgroundNone: false)
    try attacker.check(xcb_map_window_checked(attacker.raw, parent), "MapWindow")
    try attacker.check(xcb_reparent_window_checked(attacker.raw, window.id, parent, 20, 20), "ReparentWindow")
    let leaked = try await Self.attack(daemon, window, "reparent and GetImage of the parent") {
      try attacker.getImage(of: parent)
    }
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    try Self.expectAudited(
      daemon, attacker: Self.clientID(attacker), requests: ["ReparentWindow", "GetImage(own window)"])
    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test(
    "ReparentWindow of a secure window by itself starts a session, audited with the attacker; the window manager's does not"
  )
  func reparentAlone() async throws {
    let (server, window, daemon) = try await Self.setUp()
    // A window manager (the owner of WM_S0) puts the secure window into a frame of its own.
    let wm = try server.connect()
    let frame = try Self.overlay(wm, PixelRect(x: 90, y: 80, width: 220, height: 180), backgroundNone: false)
    let selection = try wm.internAtom("WM_S0")
    try wm.check(xcb_set_selection_owner_checked(wm.raw, frame, selection, 0), "SetSelectionOwner")
    try wm.check(xcb_map_window_checked(wm.raw, frame), "MapWindow")
    try wm.check(xcb_reparent_window_checked(wm.raw, window.id, frame, 10, 20), "ReparentWindow")
    // Then another client takes it into a window of its own; it reads nothing.
    let attacker = try server.connect()
    let parent = try Self.overlay(attacker, PixelRect(x: 400, y: 300, width: 240, height: 190), backgroundNone: false)
    try attacker.check(xcb_map_window_checked(attacker.raw, parent), "MapWindow")
    try attacker.check(xcb_reparent_window_checked(attacker.raw, window.id, parent, 20, 20), "ReparentWindow")
    try await daemon.waitShielded(window.id)
    // RECORD reports requests in the order the server ran them: the window manager's
    // reparenting was handled before the attacker's, which started the session.
    let attackerID = Self.clientID(attacker)
    let captures = daemon.auditEvents("capture-request")
    #expect(captures.count == 1 && captures.first?["client"] as? String == attackerID, "\(captures)")
    try Self.expectAudited(daemon, attacker: attackerID, requests: ["ReparentWindow"])
    attacker.disconnect()
    wm.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test(
    "while the daemon is stopped: an own pixmap created, read and freed is no capture; a window read then destroyed, or its id made a pixmap, is"
  )
  func decidedAfterTheDrawableWent() async throws {
    let (server, window, daemon) = try await Self.setUp()
    // The daemon decides after the drawables are gone: it asks the server too late to
    // learn what they were, and must know it from the records.
    daemon.signal(SIGSTOP)
    let app = try server.connect()
    let pixmap = app.generateID()
    try app.check(
      xcb_create_pixmap_checked(
        app.raw, app.rootDepth, pixmap, app.root, UInt16(Self.rect.width), UInt16(Self.rect.height)),
      "CreatePixmap")
    _ = try app.getImage(of: pixmap)
    try app.check(xcb_free_pixmap_checked(app.raw, pixmap), "FreePixmap")
    // Positive controls: reads through an own window over the secure window, the window
    // destroyed before the daemon looks; and the same with the window's id then made a
    // pixmap (the server then answers "pixmap" for it).
    var attackers: [String: Int] = [:]
    var connections: [TestXConnection] = []  // kept open: a closed one's id base goes to the next
    for reuse in [false, true] {
      let attacker = try server.connect()
      connections.append(attacker)
      let overlay = try Self.overlay(attacker, Self.rect)
      try attacker.check(xcb_map_window_checked(attacker.raw, overlay), "MapWindow")
      attackers[Self.clientID(attacker)] = try attacker.getImage(of: overlay).count(of: .red)
      try attacker.check(xcb_destroy_window_checked(attacker.raw, overlay), "DestroyWindow")
      if reuse {
        try attacker.check(
          xcb_create_pixmap_checked(attacker.raw, attacker.rootDepth, overlay, attacker.root, 8, 8), "CreatePixmap")
      }
    }
    print("decided after the drawable went: secret pixels read by the attackers \(attackers)")
    daemon.signal(SIGCONT)
    try await daemon.waitShielded(window.id)
    try await waitUntil("both attackers audited", timeout: .seconds(10)) {
      Set(daemon.auditEvents("capture-request").compactMap { $0["client"] as? String }) == Set(attackers.keys)
    }
    let audited = daemon.auditEvents("capture-request").compactMap { $0["client"] as? String }
    #expect(!audited.contains(Self.clientID(app)), "\(daemon.auditEvents("capture-request"))")
    #expect(Set(audited) == Set(attackers.keys), "\(daemon.auditEvents("capture-request"))")
    #expect(attackers.count == 2)
    for c in connections { c.disconnect() }
    app.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("no false alarm: the secure window's owner reading it, and a client reading its own window beside it")
  func ordinaryOwnReads() async throws {
    let (server, window, daemon) = try await Self.setUp()
    // The app reads its own secure window (a toolkit's drag icon, say).
    let image = try window.connection.getImage(of: window.id)
    #expect(image.count(of: .red) == Self.rect.width * Self.rect.height)
    // Another client reads and copies its own window, beside the secure window.
    let app = try server.connect()
    let beside = try Self.overlay(app, PixelRect(x: 400, y: 100, width: 100, height: 100), backgroundNone: false)
    try app.check(xcb_map_window_checked(app.raw, beside), "MapWindow")
    let pixmap = app.generateID()
    try app.check(xcb_create_pixmap_checked(app.raw, app.rootDepth, pixmap, app.root, 100, 100), "CreatePixmap")
    let gc = app.generateID()
    try app.check(xcb_create_gc_checked(app.raw, gc, pixmap, 0, nil), "CreateGC")
    for _ in 0..<3 {
      _ = try app.getImage(of: beside)
      try app.check(xcb_copy_area_checked(app.raw, beside, pixmap, gc, 0, 0, 0, 0, 100, 100), "CopyArea")
      try app.check(xcb_copy_area_checked(app.raw, pixmap, beside, gc, 0, 0, 0, 0, 100, 100), "CopyArea")
      try app.check(xcb_copy_area_checked(app.raw, beside, beside, gc, 0, 0, 0, 10, 100, 90), "CopyArea")
    }
    // The positive marker: then an attacker reads through its own window. RECORD reports
    // requests in the order the server ran them, so by the time its session is up the
    // reads above were decided.
    let attacker = try server.connect()
    let overlay = try Self.overlay(attacker, Self.rect)
    try attacker.check(xcb_map_window_checked(attacker.raw, overlay), "MapWindow")
    _ = try attacker.getImage(of: overlay)
    try await daemon.waitShielded(window.id)
    let attackerID = Self.clientID(attacker)
    let captures = daemon.auditEvents("capture-request")
    #expect(captures.count == 1 && captures.first?["client"] as? String == attackerID, "\(captures)")
    attacker.disconnect()
    app.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }
}

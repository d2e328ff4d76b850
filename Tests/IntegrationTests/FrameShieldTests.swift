// The window manager's frame of a shielded window: a reparenting window
// manager draws the window's title ("vault.kdbx - KeePassXC") in the frame around it. While
// the window is shielded, its frame is covered too, title bar and borders included. Another
// client that tampers with the frame's shield, or takes the window out of its frame, gets
// no title and no secret pixel after the repair, and the tampering is audited.

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
  static func frame(of window: UInt32, _ x: TestXConnection) throws -> UInt32 {
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
  static func mappedShields(in frame: UInt32, _ x: TestXConnection) throws -> Int {
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

    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
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

  /// The frame's shield when it is where the daemon puts it: the frame's topmost child,
  /// marked `_CAPTURE_SHIELD_SHIELD`, viewable, at the frame's origin, 32767×32767. Nil
  /// otherwise (also when the frame is gone).
  static func shieldOnTop(of frame: UInt32, _ x: TestXConnection) -> UInt32? {
    guard let tree = xcb_query_tree_reply(x.raw, xcb_query_tree(x.raw, frame), nil) else { return nil }
    let children = (0..<Int(xcb_query_tree_children_length(tree))).map { xcb_query_tree_children(tree)![$0] }
    free(tree)
    guard let top = children.last, (try? x.cardinalProperty("_CAPTURE_SHIELD_SHIELD", of: top)) == frame,
      let g = try? x.geometry(of: top), let origin = try? x.geometry(of: frame)
    else { return nil }
    let placed = g.isViewable && g.x == origin.x && g.y == origin.y && g.width == 32767 && g.height == 32767
    return placed ? top : nil
  }

  /// Starts openbox, a secure red window titled like a password manager's, and the daemon
  /// (capture sessions held for long: the shields stay up between captures), then starts a
  /// capture session with xwd and waits until the frame's shield is in place.
  static func shieldedFrame() async throws -> FrameSetup {
    let server = try await XvfbServer.start()
    let windowManager = try await server.startWindowManager()
    let window = try await TestWindow.open(
      on: server, color: .red, title: "vault.kdbx - KeePassXC", secure: true)
    try await window.waitFor("openbox to reparent the window") { $0.reparentedTo != nil }
    let observer = try server.connect()
    let frame = try Self.frame(of: window.id, observer)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, capture: {linger: \"600s\"}}")
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    _ = try await Capture.xwdRoot(on: server)
    try await daemon.waitShielded(window.id)
    try await waitUntil("the frame's shield is on top", timeout: .seconds(10)) {
      Self.shieldOnTop(of: frame, observer) != nil
    }
    return FrameSetup(
      server: server, windowManager: windowManager, window: window, observer: observer, frame: frame,
      daemon: daemon)
  }

  struct FrameSetup {
    let server: XvfbServer
    let windowManager: BackgroundProcess
    let window: TestWindow
    let observer: TestXConnection
    let frame: UInt32
    let daemon: DaemonProcess

    func stop() async {
      observer.disconnect()
      await daemon.stop()
      window.close()
      await windowManager.stop()
      await server.stop()
    }
  }

  @Test(
    "an attacker displaces the frame's shield during a capture: it is back on top at once, audited as the frame's",
    arguments: [ShieldTamper.move, .unmap, .lower, .destroy])
  func tamperedFrameShield(_ attack: ShieldTamper) async throws {
    let s = try await Self.shieldedFrame()
    let (server, window, observer, frame, daemon) = (s.server, s.window, s.observer, s.frame, s.daemon)
    let frameRect = try observer.geometry(of: frame).rect
    let clientRect = try observer.geometry(of: window.id).rect
    let shield = try #require(Self.shieldOnTop(of: frame, observer))
    let before = daemon.auditEvents("shield-tampered").count

    // ffmpeg records while the attacker strikes (after ffmpeg's first frame request).
    let recording = Task { try await Capture.ffmpegFrames(on: server, count: 30, frameRate: 15, drawMouse: false) }
    try? await waitUntil("ffmpeg's first capture request", timeout: .seconds(10)) {
      daemon.auditEvents("capture-request").contains { ($0["exe"] as? String)?.hasSuffix("ffmpeg") == true }
    }
    let attacker = try server.connect()
    try attack.send(attacker, shield: shield)
    let frames = try await recording.value

    // Positive markers: the record and the shield back in place (on main neither came for
    // some attacks: these time out, and the checks below say what is missing).
    let isRecord: ([String: Any]) -> Bool = {
      $0["window"] as? String == hex(frame) && $0["frame-of"] as? String == hex(window.id)
        && ($0["how"] as? String)?.contains(attack.audited) == true
    }
    try? await waitUntil("the frame shield's tampering is audited", timeout: .seconds(10)) {
      daemon.auditEvents("shield-tampered").dropFirst(before).contains(where: isRecord)
    }
    try? await waitUntil("a shield is on top of the frame again", timeout: .seconds(10)) {
      Self.shieldOnTop(of: frame, observer) != nil
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    let after = try await Capture.xwdRoot(on: server)
    let leakedAfter = Self.unshieldedPixels(after, frame: frameRect, client: clientRect)
    let leaked = frames.map { Self.unshieldedPixels($0, frame: frameRect, client: clientRect) }
    let secret = frames.map { $0.count(of: .red) }
    print(
      "FrameShieldTests \(attack): frame pixels not covered in ffmpeg frames \(leaked) "
        + "(\(leaked.filter { $0 > 0 }.count) of \(leaked.count) frames; of \(frameRect.area - clientRect.area)), "
        + "secret \(secret); after the repair: \(leakedAfter), secret \(after.count(of: .red))")

    let records = Array(daemon.auditEvents("shield-tampered").dropFirst(before))
    #expect(records.contains(where: isRecord), "\(attack): \(records)")
    #expect(Self.shieldOnTop(of: frame, observer) != nil, "\(attack): no shield on top of the frame")
    #expect(leakedAfter == 0, "\(attack): \(leakedAfter) frame pixels not covered after the repair")
    #expect(after.count(of: .red) == 0)
    #expect(secret.allSatisfy { $0 == 0 }, "\(secret)")
    #expect(daemon.process.isRunning)
    attacker.disconnect()
    await s.stop()
  }

  @Test("an attacker reparents the secure window out of its frame during a capture: its shield stays, the frame's goes")
  func reparentedOutOfFrame() async throws {
    let s = try await Self.shieldedFrame()
    let (server, window, observer, frame, daemon) = (s.server, s.window, s.observer, s.frame, s.daemon)
    let ownShield = try await shieldChild(of: window.id, on: server)

    let attacker = try server.connect()
    try attacker.check(
      xcb_reparent_window_checked(attacker.raw, window.id, attacker.root, 300, 300), "ReparentWindow(root)")
    // The window manager may take the window into a new frame: wait until it settled.
    try await daemon.waitUntilCaughtUp(retitling: window)
    var secret: [Int] = []
    for _ in 0..<4 { secret.append(try await Capture.xwdRoot(on: server).count(of: .red)) }

    // The window's own shield went with it: still its topmost child, in place.
    try? await waitUntil("the window's own shield is in place", timeout: .seconds(10)) {
      try await ShieldTamperTests.shieldInPlace(in: window, on: server, observer) == ownShield
    }
    let children = try await server.run("xwininfo", ["-children", "-id", hex(window.id)]).stdoutText
    #expect(try await ShieldTamperTests.shieldInPlace(in: window, on: server, observer) == ownShield, "\(children)")
    // The old frame shows no shield for a window no longer in it (or is gone).
    let top = try Self.frame(of: window.id, observer)
    var staleOld = -1
    if top != frame {
      try? await waitUntil("the old frame's shield is taken down", timeout: .seconds(10)) {
        (try? Self.mappedShields(in: frame, observer)) ?? 0 == 0
      }
      staleOld = (try? Self.mappedShields(in: frame, observer)) ?? 0
    }
    // A new frame around the window (openbox manages it again: it was created while the
    // shields were up, so the daemon shielded it as a window of unknown facts first) gets a
    // shield; its title bar shows no pixel of its own.
    var newFrameLeaked = -1
    if top != window.id {
      try? await waitUntil("the new frame's shield is on top", timeout: .seconds(10)) {
        Self.shieldOnTop(of: top, observer) != nil
      }
      let image = try await Capture.xwdRoot(on: server)
      newFrameLeaked = Self.unshieldedPixels(
        image, frame: try observer.geometry(of: top).rect, client: try observer.geometry(of: window.id).rect)
    }
    print(
      "FrameShieldTests reparent: old frame \(hex(frame)) (\(staleOld) stale shields), window now under \(hex(top)) "
        + "(\(newFrameLeaked) pixels not covered); secret per frame \(secret)")
    #expect(staleOld <= 0, "the old frame \(hex(frame)) still shows \(staleOld) shield(s)")
    if top != window.id {
      #expect(Self.shieldOnTop(of: top, observer) != nil, "new frame \(hex(top))")
      #expect(newFrameLeaked == 0, "new frame \(hex(top)): \(newFrameLeaked) pixels not covered")
    }
    #expect(secret.allSatisfy { $0 == 0 }, "\(secret)")
    #expect(daemon.process.isRunning)
    attacker.disconnect()
    await s.stop()
  }

  @Test("a secure window opened during a capture: the frame openbox makes for it is covered too")
  func frameMadeDuringCapture() async throws {
    let server = try await XvfbServer.start()
    let windowManager = try await server.startWindowManager()
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, capture: {linger: \"600s\"}}")
    _ = try await Capture.xwdRoot(on: server)
    try await waitUntil("capturing", timeout: .seconds(10)) { (try? daemon.state())??.capturing == true }
    // The frame is created while the shields are up: the daemon shields it as a window of
    // unknown facts first, and unshields it as a window once openbox has mapped it.
    let window = try await TestWindow.open(
      on: server, color: .red, title: "vault.kdbx - KeePassXC", secure: true)
    try await window.waitFor("openbox to reparent the window") { $0.reparentedTo != nil }
    let observer = try server.connect()
    let frame = try Self.frame(of: window.id, observer)
    try await daemon.waitShielded(window.id)
    try await daemon.waitUntilCaughtUp(retitling: window)
    try? await waitUntil("the frame's shield is on top", timeout: .seconds(10)) {
      Self.shieldOnTop(of: frame, observer) != nil
    }
    let image = try await Capture.xwdRoot(on: server)
    let leaked = Self.unshieldedPixels(
      image, frame: try observer.geometry(of: frame).rect, client: try observer.geometry(of: window.id).rect)
    print(
      "FrameShieldTests opened during a capture: \(leaked) frame pixels not covered, secret \(image.count(of: .red))")
    #expect(Self.shieldOnTop(of: frame, observer) != nil, "frame \(hex(frame))")
    #expect(leaked == 0)
    #expect(image.count(of: .red) == 0)
    observer.disconnect()
    await daemon.stop()
    window.close()
    await windowManager.stop()
    await server.stop()
  }
}

// Running it for real: the daemon against faults on a real Xvfb. The X server going
// away, windows destroyed between requests, capture tools killed mid-lookup, SIGHUP
// storms during policy rewrites, SIGKILL and restart in closed mode, shields tampered
// with in a loop, and hostile window and root properties written by other clients.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Faults", .timeLimit(.minutes(5)))
struct FaultTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  @Test("the X server going away: the daemon exits with status 69 and says why")
  func xServerGone() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, secure: true)
    let daemon = try await DaemonProcess.start(on: server)
    try await daemon.waitShielded(window.id)
    window.close()
    await server.stop()
    let result = try await daemon.process.waitForExit(timeout: .seconds(10))
    #expect(result.status == .exited(WatchExit.xServerGone), "\(result)")
    #expect(result.stderrText.contains("exiting so the service manager restarts us"), "\(result.stderrText)")
  }

  @Test("windows created, tagged and destroyed in a tight loop: the daemon survives and stays correct")
  func windowChurn() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server)
    let app = try server.connect()
    let tagger = try server.connect()
    let secure = try app.internAtom(secureWindowProperty)
    let cardinal = try app.internAtom("CARDINAL")
    var one: UInt32 = 1
    var previous: [UInt32] = []
    for i in 0..<400 {
      let w = app.generateID()
      var values: [UInt32] = [app.whitePixel]
      xcb_create_window(
        app.raw, UInt8(XCB_COPY_FROM_PARENT), w, app.root, Int16(i % 500), Int16(i % 300), 60, 40, 0,
        UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), app.rootVisual, XCB_CW_BACK_PIXEL.rawValue, &values)
      if i % 2 == 0 {
        xcb_change_property(app.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, secure, cardinal, 32, 1, &one)
      }
      if i % 3 != 0 { xcb_map_window(app.raw, w) }
      // Another client tags windows that may already be gone (BadWindow on its connection).
      for p in previous.suffix(2) {
        xcb_change_property(tagger.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), p, secure, cardinal, 32, 1, &one)
      }
      tagger.flush()
      switch i % 4 {
      case 0: xcb_destroy_window(app.raw, w)
      case 1: previous.append(w)
      case 2:
        app.flush()
        xcb_destroy_window(app.raw, w)
      default:
        xcb_unmap_window(app.raw, w)
        xcb_destroy_window(app.raw, w)
      }
      if previous.count > 4 { xcb_destroy_window(app.raw, previous.removeFirst()) }
      app.flush()
      if i % 50 == 0 { try await Task.sleep(for: .milliseconds(5)) }
    }
    for p in previous { xcb_destroy_window(app.raw, p) }
    try app.sync()
    try tagger.sync()
    #expect(daemon.process.isRunning, "\(String(decoding: daemon.process.stderr, as: UTF8.self).suffix(2000))")
    // Still correct afterwards: a new secure window is shielded, nothing else is tracked.
    let window = try await TestWindow.open(on: server, rect: Self.rect, secure: true)
    try await daemon.waitShielded(window.id)
    #expect(try Capture.getImage(of: window.id, on: server).count(of: (255, 0, 0)) == 0)
    try await waitUntil("the destroyed windows are forgotten", timeout: .seconds(10)) {
      let rows = try daemon.state()?.windows ?? []
      return rows.map(\.id) == [window.id]
    }
    // A window destroyed before `track` reads its attributes must not leave the shield
    // that CreateNotify put up in ShieldDriver's table or in the registry.
    try await daemon.waitUntilCaughtUp(retitling: window)
    let pairs = try rootCardinals("_CAPTURE_SHIELD_SHIELDS", on: server)
    #expect(pairs.count == 2 && pairs.last == window.id, "shield registry has \(pairs.count / 2) pairs")
    app.disconnect()
    tagger.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("capture clients killed mid-lookup, many times: the daemon survives and the sessions end")
  func captureClientsKilled() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, capture: {linger: \"500ms\"}}")
    let scratch = try makeTemporaryDirectory(prefix: "captureshield-fault-capture")
    defer { removeTree(scratch) }
    var generator = SplitMix64(seed: 42)
    for i in 0..<30 {
      let tool: BackgroundProcess
      if i % 2 == 0 {
        tool = try server.startBackground("xwd", ["-root", "-silent", "-out", scratch + "/\(i).xwd"])
      } else {
        tool = try server.startBackground(
          "ffmpeg",
          [
            "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "x11grab", "-framerate", "30",
            "-video_size", "320x240", "-i", "\(server.display).0+0,0", "-frames:v", "5", "-y",
            scratch + "/\(i).mkv",
          ])
      }
      try await Task.sleep(for: .milliseconds(Int(generator.next() % 60)))
      kill(tool.pid, SIGKILL)
      _ = await tool.stop(grace: .seconds(2))
      #expect(daemon.process.isRunning, "died after kill #\(i)")
    }
    #expect(daemon.process.isRunning, "\(String(decoding: daemon.process.stderr, as: UTF8.self).suffix(2000))")
    try await waitUntil("every session ends", timeout: .seconds(15)) {
      guard let state = try daemon.state() else { return false }
      return state.sessions.isEmpty && !state.capturing
    }
    try await daemon.waitShielded(window.id, false)
    // Started and ended in pairs.
    try await waitUntil("session audits balance", timeout: .seconds(5)) {
      daemon.auditEvents("session-start").count == daemon.auditEvents("session-end").count
    }
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("100 SIGHUPs while the policy file is rewritten: the daemon survives with the last good policy")
  func sighupStorm() async throws {
    let server = try await XvfbServer.start()
    let final = try await TestWindow.open(on: server, rect: Self.rect, className: "FinalBank")
    let other = try await TestWindow.open(
      on: server, rect: PixelRect(x: 400, y: 100, width: 100, height: 100), className: "Generation")
    let daemon = try await DaemonProcess.start(on: server)
    for i in 0..<100 {
      if i % 10 == 0 {
        let text =
          i % 20 == 0
          ? "{version: 1, secure: [{class: \"Gen*\"}], shield: {when: \"always\"}}"
          : "{version: 1, secure: [{clas: \"broken \(i)\"}]"
        if i % 30 == 0 {
          // In place (not atomic): a reload may read a half-written file.
          let handle = try #require(FileHandle(forWritingAtPath: daemon.policyPath))
          try handle.truncate(atOffset: 0)
          try handle.write(contentsOf: Data(text.utf8))
          try handle.close()
        } else {
          try text.write(toFile: daemon.policyPath, atomically: true, encoding: .utf8)
          chmod(daemon.policyPath, 0o644)
        }
      }
      daemon.signal(SIGHUP)
    }
    // The last good file, then the last signal.
    try "{version: 1, secure: [{class: \"Final*\"}], shield: {when: \"always\"}}".write(
      toFile: daemon.policyPath, atomically: true, encoding: .utf8)
    chmod(daemon.policyPath, 0o644)
    daemon.signal(SIGHUP)
    try await daemon.waitShielded(final.id)
    try await daemon.waitShielded(other.id, false)
    #expect(daemon.process.isRunning)
    #expect(try daemon.state()?.policy.rules == 1)
    #expect(try Capture.getImage(of: final.id, on: server).count(of: (255, 0, 0)) == 0)
    // A broken rewrite after that keeps it.
    try "{version: 1, secure: [".write(toFile: daemon.policyPath, atomically: true, encoding: .utf8)
    let rejected = daemon.auditEvents("policy-rejected").count
    daemon.signal(SIGHUP)
    try await waitUntil("rejected", timeout: .seconds(5)) { daemon.auditEvents("policy-rejected").count > rejected }
    #expect(daemon.isShielded(final.id))
    await daemon.stop()
    final.close()
    other.close()
    await server.stop()
  }

  @Test("SIGKILL and restart in closed mode: no captured frame shows the secret")
  func killAndRestartClosedMode() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, secure: true)
    let policy = "{version: 1, shield: {when: \"always\", failMode: \"closed\"}}"
    let first = try await DaemonProcess.start(on: server, policy: policy)
    try await first.waitShielded(window.id)
    let capturer = Task {
      var counts: [Int] = []
      while !Task.isCancelled {
        counts.append(try Capture.getImage(of: window.id, on: server).count(of: (255, 0, 0)))
        counts.append(try Capture.getImageRoot(on: server).count(of: (255, 0, 0)))
      }
      return counts
    }
    var restarted: [DaemonProcess] = []
    var current = first
    for _ in 0..<3 {
      try await Task.sleep(for: .milliseconds(150))
      current.signal(SIGKILL)
      _ = await current.stop()
      try await Task.sleep(for: .milliseconds(100))
      current = try await DaemonProcess.start(on: server, policy: policy)
      try await current.waitShielded(window.id)
      restarted.append(current)
    }
    try await Task.sleep(for: .milliseconds(200))
    capturer.cancel()
    let counts = try await capturer.value
    #expect(counts.count > 3, "too few captures to judge: \(counts.count)")
    #expect(counts.allSatisfy { $0 == 0 }, "red pixels per capture: \(counts.filter { $0 != 0 })")
    let tree = try await server.run("xwininfo", ["-children", "-id", hex(window.id)])
    #expect(tree.stdoutText.contains("1 child:"), "\(tree.stdoutText)")
    await current.stop()
    window.close()
    await server.stop()
  }

  @Test("another client unmaps and destroys the shield in a rapid loop: re-created every time")
  func rapidTampering() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, secure: true)
    let daemon = try await DaemonProcess.start(on: server)
    try await daemon.waitShielded(window.id)
    let attacker = try server.connect()
    defer { attacker.disconnect() }
    var attacks = 0
    for i in 0..<40 {
      guard let shield = try? await shieldChild(of: window.id, on: server) else {
        try await Task.sleep(for: .milliseconds(5))
        continue
      }
      if i % 2 == 0 { xcb_destroy_window(attacker.raw, shield) } else { xcb_unmap_window(attacker.raw, shield) }
      attacker.flush()
      attacks += 1
    }
    try attacker.sync()
    #expect(attacks >= 20)
    try await waitUntil("the shield is back", timeout: .seconds(5)) {
      let child = try? await shieldChild(of: window.id, on: server)
      return try child != nil && Capture.getImage(of: window.id, on: server).count(of: (255, 0, 0)) == 0
    }
    #expect(daemon.process.isRunning)
    #expect(daemon.auditEvents("shield-tampered").count >= attacks / 2)
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("hostile window properties: 1 MB titles, invalid UTF-8 classes, malformed tags")
  func hostileWindowProperties() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server)
    let huge = try await TestWindow.open(on: server, rect: PixelRect(x: 10, y: 10, width: 80, height: 60), map: false)
    try huge.setString("_NET_WM_NAME", type: "UTF8_STRING", String(repeating: "\u{202E}ab\n\u{2028}", count: 200_000))
    try setRawProperty(
      on: server, huge.id, "WM_CLASS", type: "STRING", format: 8, [0xFF, 0xC3, 0x28, 0, 0xED, 0xA0, 0x80, 0xF8, 0])
    try huge.setCardinal(secureWindowProperty, 1)
    try await huge.map()
    // `_CAPTURE_SHIELD_SECURE` of the wrong type, format, value or length: secure (malformed tag).
    let shapes: [(type: String, format: UInt8, bytes: [UInt8])] = [
      ("STRING", 8, Array("1".utf8)),
      ("CARDINAL", 8, [1]),
      ("CARDINAL", 16, [1, 0]),
      ("CARDINAL", 32, [2, 0, 0, 0]),
      ("CARDINAL", 32, [1, 0, 0, 0, 1, 0, 0, 0]),
      ("INTEGER", 32, [1, 0, 0, 0]),
    ]
    var malformed: [TestWindow] = []
    for (i, shape) in shapes.enumerated() {
      let w = try await TestWindow.open(
        on: server, rect: PixelRect(x: 120 + i * 110, y: 200, width: 100, height: 80), map: false)
      try setRawProperty(on: server, w.id, secureWindowProperty, type: shape.type, format: shape.format, shape.bytes)
      try await w.map()
      malformed.append(w)
    }
    try await daemon.waitShielded(huge.id)
    for w in malformed { try await daemon.waitShielded(w.id) }
    // Shielded first as provisional (facts not known yet), then decided by the tag.
    try await waitUntil("every malformed tag decided", timeout: .seconds(10)) {
      let rows = (try? daemon.state())??.windows ?? []
      return malformed.allSatisfy { w in rows.first { $0.id == w.id }?.reason.contains("malformed") == true }
    }
    let rows = try #require(try daemon.state()).windows
    for w in malformed {
      let row = try #require(rows.first { $0.id == w.id })
      #expect(row.reason.contains("malformed"), "\(row)")
    }
    let hugeRow = try #require(rows.first { $0.id == huge.id })
    #expect((hugeRow.title?.unicodeScalars.count ?? 0) <= PropertyDecoding.maxTextScalars)
    // A well-formed tag set later by another client on a malformed window keeps it shielded;
    // the property changing in a loop does not upset the daemon.
    for round in 0..<50 {
      let shape = shapes[round % shapes.count]
      try setRawProperty(
        on: server, malformed[0].id, secureWindowProperty, type: shape.type, format: shape.format, shape.bytes)
    }
    try await daemon.waitUntilCaughtUp(retitling: malformed[0])
    #expect(daemon.isShielded(malformed[0].id))
    let list = try await Shieldctl.run(["list", "--json"], on: server)
    #expect(list.status == .exited(0), "\(list)")
    #expect(daemon.process.isRunning)
    // The JSON audit log stays one record per line.
    let lines = String(decoding: daemon.process.stderr, as: UTF8.self).split(separator: "\n")
    #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil })
    await daemon.stop()
    huge.close()
    for w in malformed { w.close() }
    await server.stop()
  }

  @Test("garbage in _CAPTURE_SHIELD_STATE and _CAPTURE_SHIELD_SHIELDS before start: no crash, nothing adopted")
  func garbageRootProperties() async throws {
    let server = try await XvfbServer.start()
    let app = try await TestWindow.open(on: server, rect: Self.rect, secure: true)
    // A child window of the app (not a shield), and a plain top-level.
    let child = try await TestWindow.open(
      on: server, rect: PixelRect(x: 5, y: 5, width: 20, height: 20), color: RGB(0, 0, 255), overrideRedirect: true,
      map: false)
    _ = try await server.run("xdotool", ["windowreparent", hex(child.id), hex(app.id)])
    let plain = try await TestWindow.open(on: server, rect: PixelRect(x: 500, y: 100, width: 80, height: 80))
    let root = try server.connect()
    defer { root.disconnect() }
    var generator = SplitMix64(seed: 7)
    var garbage = (0..<64).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    try setRawProperty(on: server, root.root, "_CAPTURE_SHIELD_STATE", type: "UTF8_STRING", format: 8, garbage)
    // Pairs pointing at real windows that are not shields, at the root, at nothing.
    let pairs: [UInt32] = [
      child.id, app.id, plain.id, root.root, root.root, app.id, 0, 0, 0xFFFF_FFFF, 0x1234, app.id, child.id,
    ]
    garbage = pairs.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } } + [1, 2, 3]
    try setRawProperty(on: server, root.root, "_CAPTURE_SHIELD_SHIELDS", type: "CARDINAL", format: 8, garbage)
    for format: UInt8 in [8, 32] {
      let policy = "{version: 1, shield: {when: \"always\", failMode: \"closed\"}}"
      if format == 32 {
        try setRawProperty(
          on: server, root.root, "_CAPTURE_SHIELD_SHIELDS", type: "CARDINAL", format: 32, Array(garbage.prefix(48)))
        try setRawProperty(on: server, root.root, "_CAPTURE_SHIELD_STATE", type: "STRING", format: 8, Array("{".utf8))
      }
      let daemon = try await DaemonProcess.start(on: server, policy: policy)
      try await daemon.waitShielded(app.id)
      let log = String(decoding: daemon.process.stderr, as: UTF8.self)
      #expect(!log.contains("adopted"), "\(log)")
      // The app's child and the plain window still exist; the shield is a new window.
      _ = try server.geometry(of: child.id)
      _ = try server.geometry(of: plain.id)
      let shield = try await shieldChild(of: app.id, on: server)
      #expect(shield != child.id)
      #expect(try Capture.getImage(of: app.id, on: server).count(of: (255, 0, 0)) == 0)
      await daemon.stop()
      // Closed mode leaves the shield; the next round starts from garbage again.
      if format == 8 {
        _ = try await server.run("xdotool", ["windowkill", hex(shield)])
      }
    }
    child.close()
    app.close()
    plain.close()
    await server.stop()
  }

  @Test("a forged shield (a marked child listed in _CAPTURE_SHIELD_SHIELDS) is neither adopted nor destroyed")
  func forgedShieldNotAdopted() async throws {
    let server = try await XvfbServer.start()
    // Not secure: the daemon has nothing to shield in it.
    let app = try await TestWindow.open(on: server, rect: Self.rect)
    let forged = try await TestWindow.open(
      on: server, rect: PixelRect(x: 0, y: 0, width: 4, height: 4), color: RGB(0, 0, 255), overrideRedirect: true,
      map: false)
    _ = try await server.run("xdotool", ["windowreparent", hex(forged.id), hex(app.id)])
    try forged.setCardinal("_CAPTURE_SHIELD_SHIELD", app.id)
    let root = try server.connect()
    defer { root.disconnect() }
    let pair = [forged.id, app.id].flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    try setRawProperty(on: server, root.root, "_CAPTURE_SHIELD_SHIELDS", type: "CARDINAL", format: 32, pair)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, shield: {when: \"always\", failMode: \"closed\"}}")
    try await daemon.waitUntilCaughtUp()
    let log = String(decoding: daemon.process.stderr, as: UTF8.self)
    #expect(!log.contains("adopted"), "\(log)")
    #expect((try? server.geometry(of: forged.id)) != nil, "the daemon destroyed another client's window")
    #expect(daemon.process.isRunning)
    await daemon.stop()
    forged.close()
    app.close()
    await server.stop()
  }
}

// MARK: - Helpers

/// Sets a property of any type and format from a connection of its own (as a hostile
/// client would), and waits until the server has processed it.
func setRawProperty(
  on server: XvfbServer, _ window: UInt32, _ name: String, type: String, format: UInt8, _ bytes: [UInt8]
) throws {
  let c = try server.connect()
  defer { c.disconnect() }
  let atom = try c.internAtom(name)
  let typeAtom = try c.internAtom(type)
  let count = UInt32(bytes.count / max(1, Int(format) / 8))
  try c.check(
    xcb_change_property_checked(
      c.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, atom, typeAtom, format, count, bytes),
    "ChangeProperty(\(name))")
}

/// A root window CARDINAL/32 list property (empty when absent).
func rootCardinals(_ name: String, on server: XvfbServer) throws -> [UInt32] {
  let c = try server.connect()
  defer { c.disconnect() }
  let atom = try c.internAtom(name)
  let cookie = xcb_get_property(c.raw, 0, c.root, atom, 0, 0, 1 << 16)
  guard let reply = xcb_get_property_reply(c.raw, cookie, nil) else { return [] }
  defer { free(reply) }
  guard reply.pointee.format == 32 else { return [] }
  let n = Int(xcb_get_property_value_length(reply)) / 4
  let p = xcb_get_property_value(reply)!.assumingMemoryBound(to: UInt32.self)
  return (0..<n).map { p[$0] }
}

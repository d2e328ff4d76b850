// Shields on a real Xvfb against real capture tools: tag → 0 secret pixels in every
// capture path; untag → visible again; moves/resizes; fail modes; tampering; the
// app-side tag at creation; a reparenting window manager with --pick.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Shields", .timeLimit(.minutes(5)))
struct ShieldTests {
  static let red = RGB.red
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  static func redCounts(_ method: CaptureMethod, _ window: UInt32, _ server: XvfbServer) async throws -> [Int] {
    try await method.capture(window: window, on: server).counts(of: red)
  }

  @Test(
    "tag shields the window from every capture path; untag shows it again (without and with a window manager)",
    arguments: CaptureMethod.allCases, [false, true])
  func tagAndUntag(_ method: CaptureMethod, withWindowManager: Bool) async throws {
    let server = try await XvfbServer.start()
    let wm = withWindowManager ? try await server.startWindowManager() : nil
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red)
    let daemon = try await DaemonProcess.start(on: server)
    #expect(!daemon.isShielded(window.id))

    let tag = try await Shieldctl.run(["tag", hex(window.id)], on: server)
    #expect(tag.status == .exited(0), "\(tag)")
    try await daemon.waitShielded(window.id)
    let shielded = try await Self.redCounts(method, window.id, server)
    #expect(shielded.allSatisfy { $0 == 0 }, "\(method): red pixels while shielded: \(shielded)")

    let untag = try await Shieldctl.run(["untag", hex(window.id)], on: server)
    #expect(untag.status == .exited(0), "\(untag)")
    try await daemon.waitShielded(window.id, false)
    // The app repaints on Expose; give it a moment, then the secret is visible again.
    try await waitUntil("the app repainted", timeout: .seconds(5)) {
      try await Self.redCounts(method, window.id, server).allSatisfy { $0 == 200 * 150 }
    }
    #expect(daemon.auditEvents("shield").count == 1)
    #expect(daemon.auditEvents("unshield").count == 1)
    await daemon.stop()
    window.close()
    if let wm { _ = await wm.stop() }
    await server.stop()
  }

  @Test("a window tagged by the app before mapping is shielded from its first frame, every time")
  func appTaggedAtCreation() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server)
    for i in 0..<10 {
      let window = try await TestWindow.open(
        on: server, rect: PixelRect(x: 50 + i * 10, y: 60, width: 120, height: 90), color: Self.red, secure: true)
      try await daemon.waitShielded(window.id)
      let counts = try await Self.redCounts(.xwdRoot, window.id, server)
      #expect(counts == [0], "window \(i): \(counts)")
      window.close()
    }
    await daemon.stop()
    await server.stop()
  }

  @Test("moving and resizing a shielded window while capturing leaks nothing")
  func moveAndResizeWhileCapturing() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(on: server)
    try await daemon.waitShielded(window.id)
    // ffmpeg records while the window moves and resizes in a tight loop.
    let mover = Task {
      for i in 0..<40 {
        try window.moveResize(
          to: PixelRect(
            x: 50 + (i * 17) % 400, y: 40 + (i * 11) % 300, width: 120 + (i * 13) % 200, height: 90 + (i * 7) % 150))
        try await Task.sleep(for: .milliseconds(15))
      }
    }
    let frames = try await Capture.ffmpegFrames(on: server, count: 20, frameRate: 30)
    try await mover.value
    let counts = frames.map { $0.count(of: (255, 0, 0)) }
    #expect(counts.allSatisfy { $0 == 0 }, "red pixels per frame: \(counts)")
    var xwdCounts: [Int] = []
    for i in 0..<20 {
      try window.moveResize(to: PixelRect(x: 30 + i * 20, y: 30 + i * 10, width: 100 + i * 5, height: 80 + i * 3))
      xwdCounts.append(try await Capture.xwdRoot(on: server).count(of: (255, 0, 0)))
    }
    #expect(xwdCounts.allSatisfy { $0 == 0 }, "xwd red counts: \(xwdCounts)")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test(
    "open mode: a killed daemon's shields vanish; closed mode: they stay and are adopted",
    arguments: [FailMode.open, .closed])
  func failModes(_ mode: FailMode) async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let policy = "{version: 1, shield: {when: \"always\", failMode: \"\(mode.rawValue)\"}}"
    let daemon = try await DaemonProcess.start(on: server, policy: policy)
    try await daemon.waitShielded(window.id)
    daemon.signal(SIGKILL)
    _ = await daemon.stop()
    // The server cleans up a dead client's resources at once (or retains them).
    try await Task.sleep(for: .milliseconds(200))
    let afterKill = try await Self.redCounts(.getImageWindow, window.id, server)
    if mode == .open {
      try await waitUntil("the window is visible again", timeout: .seconds(5)) {
        try await Self.redCounts(.getImageWindow, window.id, server) == [200 * 150]
      }
    } else {
      #expect(afterKill == [0], "closed mode must keep the shield after SIGKILL: \(afterKill)")
      let restarted = try await DaemonProcess.start(on: server, policy: policy)
      try await restarted.waitShielded(window.id)
      #expect(try await Self.redCounts(.xwdRoot, window.id, server) == [0])
      // Adopted, not duplicated: exactly one shield child.
      let tree = try await server.run("xwininfo", ["-children", "-id", hex(window.id)])
      #expect(tree.stdoutText.contains("1 child:"), "\(tree.stdoutText)")
      #expect(String(decoding: restarted.process.stderr, as: UTF8.self).contains("adopted 1 shields"))
      await restarted.stop()
      // Clean stop in closed mode leaves shields for the next daemon.
      #expect(try await Self.redCounts(.xwdRoot, window.id, server) == [0])
    }
    window.close()
    await server.stop()
  }

  @Test("the default failMode is closed: a killed daemon's shields stay, and a stop leaves them for the next")
  func failModeDefaultClosed() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let policy = "{version: 1, shield: {when: \"always\"}}"
    let daemon = try await DaemonProcess.start(on: server, policy: policy, productDefaults: true)
    #expect(try daemon.state()?.policy.failMode == .closed)
    try await daemon.waitShielded(window.id)
    daemon.signal(SIGKILL)
    _ = await daemon.stop()
    try await Task.sleep(for: .milliseconds(200))
    #expect(try await Self.redCounts(.getImageWindow, window.id, server) == [0], "the shield went with the daemon")
    let restarted = try await DaemonProcess.start(on: server, policy: policy, productDefaults: true)
    try await restarted.waitShielded(window.id)
    let tree = try await server.run("xwininfo", ["-children", "-id", hex(window.id)])
    #expect(tree.stdoutText.contains("1 child:"), "\(tree.stdoutText)")
    _ = await restarted.stop()
    #expect(try await Self.redCounts(.xwdRoot, window.id, server) == [0], "a clean stop took the shield down")
    window.close()
    await server.stop()
  }

  @Test("SIGTERM in open mode removes shields and exits 0")
  func sigtermOpenMode() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    // (the tests' default policy: failMode open)
    let daemon = try await DaemonProcess.start(on: server)
    #expect(try daemon.state()?.policy.failMode == .open)
    try await daemon.waitShielded(window.id)
    let result = await daemon.stop()
    #expect(result.status == .exited(0), "\(result)")
    try await waitUntil("visible again", timeout: .seconds(5)) {
      try await Self.redCounts(.xwdRoot, window.id, server) == [200 * 150]
    }
    window.close()
    await server.stop()
  }

  @Test("a shield unmapped or destroyed by another client is re-created and audited")
  func tamperedShieldIsRecreated() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(on: server)
    try await daemon.waitShielded(window.id)
    for how in ["windowunmap", "destroy", "windowkill"] {
      let shield = try await shieldChild(of: window.id, on: server)
      if how == "destroy" {
        let other = try server.connect()
        xcb_destroy_window(other.raw, shield)
        xcb_flush(other.raw)
        _ = xcb_get_input_focus_reply(other.raw, xcb_get_input_focus(other.raw), nil).map { free($0) }
      } else {
        // windowkill is XKillClient: it closes the daemon's whole shield connection.
        _ = try await server.run("xdotool", [how, hex(shield)])
      }
      try await waitUntil("re-created after \(how)", timeout: .seconds(5)) {
        let counts = try await Self.redCounts(.xwdRoot, window.id, server)
        let child = try? await shieldChild(of: window.id, on: server)
        return counts == [0] && child != nil
      }
    }
    try await waitUntil("audited", timeout: .seconds(5)) { daemon.auditEvents("shield-tampered").count >= 3 }
    #expect(daemon.process.isRunning)
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("the shield stays above children the app adds later")
  func shieldStaysOnTopOfNewChildren() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(on: server)
    try await daemon.waitShielded(window.id)
    // Another connection of the "app" adds a green child and raises it.
    let child = try await TestWindow.open(
      on: server, rect: PixelRect(x: 10, y: 10, width: 50, height: 50), color: RGB(0, 255, 0),
      overrideRedirect: true, map: false)
    _ = try await server.run("xdotool", ["windowreparent", hex(child.id), hex(window.id)])
    try await child.map()
    try child.raise()
    try await waitUntil("shield above the child", timeout: .seconds(5)) {
      let img = try await Capture.xwdRoot(on: server)
      return img.count(of: (0, 255, 0)) == 0 && img.count(of: (255, 0, 0)) == 0
    }
    await daemon.stop()
    child.close()
    window.close()
    await server.stop()
  }

  @Test("a second daemon on the same display exits with status 75")
  func secondDaemonRefused() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server)
    let second = try await Shieldctl.run(["watch", "--policy", daemon.policyPath], on: server, timeout: .seconds(10))
    #expect(second.status == .exited(75), "\(second)")
    #expect(second.stderrText.contains("already runs"))
    await daemon.stop()
    await server.stop()
  }

  @Test("a policy rule by class shields an untagged window; a broken reload keeps the last good policy")
  func policyRuleAndReload() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, className: "BankApp")
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, secure: [{class: \"Bank*\"}], shield: {when: \"always\"}}")
    try await daemon.waitShielded(window.id)
    let list = try await Shieldctl.run(["list", "--json"], on: server)
    #expect(list.stdoutText.contains("rule #1"), "\(list.stdoutText)")
    // Break the file and reload: the old rule stays in force.
    try "{version: 1, secure: [{clas: \"x\"}]}".write(toFile: daemon.policyPath, atomically: true, encoding: .utf8)
    daemon.signal(SIGHUP)
    try await waitUntil("rejected", timeout: .seconds(5)) { !daemon.auditEvents("policy-rejected").isEmpty }
    #expect(daemon.isShielded(window.id))
    #expect(try await Self.redCounts(.xwdRoot, window.id, server) == [0])
    // A good reload that drops the rule unshields.
    try "{version: 1, shield: {when: \"always\"}}".write(toFile: daemon.policyPath, atomically: true, encoding: .utf8)
    let reload = try await Shieldctl.run(["reload"], on: server)
    #expect(reload.status == .exited(0))
    try await daemon.waitShielded(window.id, false)
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("manual shield/unshield and pause/resume reach the daemon and are audited")
  func manualOverrideAndPause() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red)
    let daemon = try await DaemonProcess.start(on: server)
    _ = try await Shieldctl.run(["shield", hex(window.id)], on: server)
    try await daemon.waitShielded(window.id)
    _ = try await Shieldctl.run(["unshield", hex(window.id)], on: server)
    try await daemon.waitShielded(window.id, false)
    _ = try await Shieldctl.run(["tag", hex(window.id)], on: server)
    try await daemon.waitShielded(window.id)
    _ = try await Shieldctl.run(["pause", "--for", "3s"], on: server)
    try await daemon.waitShielded(window.id, false)
    try await daemon.waitShielded(window.id, true, timeout: .seconds(5))  // the pause expires
    #expect(daemon.auditEvents("manual-shield").count == 1)
    #expect(daemon.auditEvents("pause").count == 1)
    #expect(daemon.auditEvents("resume").count == 1)
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("under a reparenting window manager: tag by client id, and by --pick on the frame")
  func underWindowManager() async throws {
    let server = try await XvfbServer.start()
    let wm = try await server.startWindowManager()
    let a = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, title: "A")
    let b = try await TestWindow.open(
      on: server, rect: PixelRect(x: 500, y: 300, width: 200, height: 150), color: RGB(0, 0, 255), title: "B")
    let daemon = try await DaemonProcess.start(on: server)
    // By the client window's id.
    _ = try await Shieldctl.run(["tag", hex(a.id)], on: server)
    try await daemon.waitShielded(a.id)
    for method in [CaptureMethod.xwdRoot, .getImageWindow, .compositePixmap] {
      #expect(try await Self.redCounts(method, a.id, server).allSatisfy { $0 == 0 }, "\(method)")
    }
    // By --pick: click the window manager's frame (its title bar) of B.
    let geometry = try b.rootGeometry()
    let pick = try server.startBackground(Shieldctl.path, ["tag", "--pick"])
    try await Task.sleep(for: .milliseconds(500))
    _ = try await server.run(
      "xdotool", ["mousemove", String(geometry.rect.x + 20), String(geometry.rect.y - 8), "click", "1"])
    let picked = try await pick.waitForExit(timeout: .seconds(10))
    #expect(picked.status == .exited(0), "\(picked)")
    #expect(picked.stdoutText.contains(hex(b.id)), "picked: \(picked.stdoutText)")
    try await daemon.waitShielded(b.id)
    let blue = try await Capture.xwdRoot(on: server).count(of: (0, 0, 255))
    #expect(blue == 0)
    await daemon.stop()
    a.close()
    b.close()
    _ = await wm.stop()
    await server.stop()
  }
}

/// The shield child of `window` (the child named "CaptureShield").
func shieldChild(of window: UInt32, on server: XvfbServer) async throws -> UInt32 {
  let tree = try await server.run("xwininfo", ["-children", "-id", hex(window)])
  for line in tree.stdoutText.split(separator: "\n") where line.contains("\"CaptureShield\"") {
    if let id = line.split(separator: " ").first(where: { $0.hasPrefix("0x") }),
      let v = UInt32(id.dropFirst(2), radix: 16)
    {
      return v
    }
  }
  throw DaemonError.exited("no shield child in:\n\(tree.stdoutText)")
}

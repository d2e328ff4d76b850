// A bounded soak: the daemon under churn (windows created and destroyed, tags toggled,
// short capture sessions with ffmpeg and xwd) for CAPTURESHIELD_SOAK_SECONDS (default 180: several minutes, also in CI).
// At the end: no secret pixel in any frame after a session's second, no shield on a
// non-secure window, and the daemon's RSS flat (< 20% growth after warm-up). A session's
// first frames race the daemon's reaction (detection, then the shield): the first is not
// judged, the second (ffmpeg's, 66 ms in) is counted and printed, not asserted: on a loaded
// machine the reaction can take longer (a timing, which bench row 1 measures).

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Soak", .timeLimit(.minutes(60)))
struct SoakTests {
  static var duration: Duration {
    let text = ProcessInfo.processInfo.environment["CAPTURESHIELD_SOAK_SECONDS"] ?? ""
    return .seconds(Int(text).map { max(10, $0) } ?? 180)
  }

  /// Secure windows are red, the others blue: any red pixel in a frame is a leak.
  static let secret = RGB.red
  static let plain = RGB(0, 0, 255)

  @Test("churn, tags and capture sessions: no leak, no stray shield, flat memory")
  func soak() async throws {
    let server = try await XvfbServer.start()
    // A desktop with a window manager (windows opened during a session are mapped through
    // it; without one an app mapping in the same batch can win by ~1 ms: docs/security.md,
    // Known limitations). Linger 2 s: the second xwd of a session (after the first one's image
    // conversion) must fall inside the session even on a loaded machine.
    let wm = try await server.startWindowManager()
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, secure: [{class: \"Secret*\"}], capture: {linger: \"2s\"}}")
    var generator = SplitMix64(seed: 99)
    var windows: [(window: TestWindow, secure: Bool, byClass: Bool)] = []
    var leaks: [String] = []
    var sessions = 0
    var frames = 0
    var xwdRaces = 0

    /// xwd -root lists the root's children and then asks each for its attributes: a window
    /// manager frame destroyed in between (the churn) makes xwd exit with BadWindow. That
    /// is xwd racing the desktop, not a capture to judge: try again (counted, printed).
    func xwdRoot() async throws -> RGBImage {
      var attempt = 0
      while true {
        attempt += 1
        do {
          return try await Capture.xwdRoot(on: server)
        } catch  where attempt < 3 && "\(error)".contains("BadWindow") {
          xwdRaces += 1
        }
      }
    }

    func open(secure: Bool, byClass: Bool) async throws -> TestWindow {
      let n = Int(generator.next() % 40)
      return try await TestWindow.open(
        on: server, rect: PixelRect(x: 20 + n * 20, y: 20 + (n * 13) % 500, width: 80, height: 60),
        color: secure ? Self.secret : Self.plain, className: byClass && secure ? "SecretApp" : "PlainApp",
        secure: secure && !byClass)
    }

    // Windows opened during a session (the churn task below, in `sessionChurn`) race the
    // daemon: a window manager maps them after reparenting, which is usually after the
    // shield, but not always (1 window-frame of ~800 such windows in one clean-clone run,
    // docs/security.md, Known limitations). Their leaks are counted and printed, not
    // asserted; every other secure window must never leak.
    // (x ≥ 900: beyond every other window, whose right edge is at most 880)
    let sessionChurn = PixelRect(x: 900, y: 380, width: 124, height: 80)
    var newWindowLeaks: [String] = []
    var reactionRaces: [String] = []
    func judge(_ image: RGBImage, _ what: String) {
      frames += 1
      let inChurn = image.count(of: (255, 0, 0), in: sessionChurn)
      let red = image.count(of: (255, 0, 0)) - inChurn
      if red != 0 { leaks.append("\(what): \(red) red pixels") }
      if inChurn != 0 { newWindowLeaks.append("\(what): \(inChurn) red pixels") }
    }

    let start = ContinuousClock.now
    let warmUp = min(Self.duration / 4, .seconds(15))
    var rssAfterWarmUp: Int?
    var round = 0
    while ContinuousClock.now - start < Self.duration {
      round += 1
      // Churn: open and close windows, toggle tags (no session is live here).
      for _ in 0..<2 {
        let secure = generator.next() % 2 == 0
        let byClass = secure && generator.next() % 2 == 0
        windows.append((try await open(secure: secure, byClass: byClass), secure, byClass))
      }
      while windows.count > 12 {
        let victim = windows.remove(at: Int(generator.next() % UInt64(windows.count)))
        victim.window.close()
      }
      if let i = windows.indices.randomElement(using: &generator), !windows[i].byClass {
        let (w, secure, _) = windows[i]
        if secure {
          try w.setColor(Self.plain)
          try w.setSecure(false)
        } else {
          try w.setSecure(true)
          try w.setColor(Self.secret)
        }
        windows[i].secure = !secure
      }
      // A short session every other round, with churn going on during it (windows are
      // tagged before they map, so they are shielded from their first frame).
      if round % 2 == 0 {
        sessions += 1
        let churn = Task { () -> [TestWindow] in
          var opened: [TestWindow] = []
          for i in 0..<3 {
            opened.append(
              try await TestWindow.open(
                on: server, rect: PixelRect(x: 900 + i * 20, y: 400, width: 40, height: 40), color: Self.secret,
                secure: true))
            try await Task.sleep(for: .milliseconds(50))
          }
          return opened
        }
        if round % 4 == 0 {
          let captured = try await Capture.ffmpegFrames(on: server, count: 6, frameRate: 15)
          for (i, frame) in captured.enumerated().dropFirst() {
            if i == 1 {
              let red = frame.count(of: (255, 0, 0)) - frame.count(of: (255, 0, 0), in: sessionChurn)
              if red != 0 { reactionRaces.append("session \(sessions) ffmpeg frame 1: \(red) red pixels") }
              continue
            }
            judge(frame, "session \(sessions) ffmpeg frame \(i)")
          }
        } else {
          _ = try await xwdRoot()  // a one-shot session; its first frame is not judged
          judge(try await xwdRoot(), "session \(sessions) xwd")
        }
        for w in try await churn.value { w.close() }
      }
      if rssAfterWarmUp == nil, ContinuousClock.now - start >= warmUp {
        rssAfterWarmUp = residentKilobytes(daemon.process.pid)
      }
      #expect(daemon.process.isRunning, "the daemon died in round \(round)")
      if !daemon.process.isRunning { break }
    }

    #expect(leaks.isEmpty, "\(leaks.prefix(20))")
    #expect(sessions > 0 && frames > 0)
    // After the last session lingers out, no shield stays on any window (when=capturing),
    // and the state lists every live window with the right verdict.
    try await waitUntil("sessions end", timeout: .seconds(10)) { try daemon.state()?.sessions.isEmpty ?? false }
    try await waitUntil("no window shielded", timeout: .seconds(10)) {
      try (daemon.state()?.windows ?? []).allSatisfy { !$0.shielded }
    }
    let rows = try #require(try daemon.state()).windows
    for (w, secure, _) in windows {
      let row = rows.first { $0.id == w.id }
      // The state lists secure windows (and ones with a shield); an absent row is "not secure".
      #expect((row?.secure ?? false) == secure, "window \(hex(w.id)): \(String(describing: row))")
    }
    // No visible shield on a live non-secure window (unshielding unmaps a shield and keeps
    // it, listed in the registry, for the next session).
    let secureIDs = Set(windows.filter(\.secure).map(\.window.id))
    let liveIDs = Set(windows.map(\.window.id))
    let registry = try rootCardinals("_CAPTURE_SHIELD_SHIELDS", on: server)
    for pair in stride(from: 0, to: registry.count - 1, by: 2)
    where liveIDs.contains(registry[pair + 1]) && !secureIDs.contains(registry[pair + 1]) {
      let viewable = (try? server.geometry(of: registry[pair]).isViewable) ?? false
      // The shield put up at CreateNotify (ShieldDriver.shieldAtOnce) must go when the
      // engine's first decision for the window is "not shielded".
      #expect(!viewable, "shield \(hex(registry[pair])) is visible on non-secure \(hex(registry[pair + 1]))")
    }
    let end = residentKilobytes(daemon.process.pid)
    if let before = rssAfterWarmUp, let end {
      print(
        "[soak] \(round) rounds, \(sessions) sessions, \(frames) frames judged (xwd retried after racing the"
          + " window manager: \(xwdRaces)); RSS \(before) kB -> \(end) kB; windows opened during a session"
          + " (\(3 * sessions)) seen in a frame: \(newWindowLeaks.count) \(newWindowLeaks.prefix(5)); ffmpeg's"
          + " second frames ahead of the shield: \(reactionRaces.count) \(reactionRaces.prefix(5))")
      #expect(Double(end) < Double(before) * 1.2, "RSS grew from \(before) kB to \(end) kB")
    }
    await daemon.stop()
    for (w, _, _) in windows { w.close() }
    _ = await wm.stop()
    await server.stop()
  }
}

/// VmRSS of a process in kB, from /proc.
func residentKilobytes(_ pid: pid_t) -> Int? {
  guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
  for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
  }
  return nil
}

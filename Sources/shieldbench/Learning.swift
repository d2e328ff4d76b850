// Row 11: learning per program (`capture.learn`), learning off (today's
// behaviour) and on, in one run, each daemon with a history of its own:
// - first-shot leaks: each one-shot screenshot tool BENCH_LEARN_USES times in a row (default
//   5; import, scrot, maim, xwd, gnome-screenshot (GTK), flameshot (Qt)) against a red secure window nobody else captures, waiting between uses until no
//   session is live and the shield is down; a use leaks when its picture has a secret pixel.
//   First use and later uses apart; with learning on, how long each learned tool's session
//   held the shields (from the audit). Then `scrot -d 3` and `scrot -d 6` (a delayed shot:
//   scrot connects, then waits): hidden or leaked.
// - darkened ms per ordinary program start: with `capture.quarantine: "300ms"` (on launch,
//   the default), short X programs that never capture (xdpyinfo, xprop, xwininfo) started
//   BENCH_LEARN_STARTS times each (default 8); the secure window's shield time per start,
//   measured as row 9 does (the app's SubstructureNotify on its window), starts after the
//   third (`CaptureHistory.quietAfter`) apart; and `xprop -spy` for 1 s (a client that
//   stays connected longer than the quarantine), and xclock for 1 s. What the daemon learned
//   of each program is printed (a program that made a capture request is not "ordinary").
import CXCB
import CaptureShield
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

@MainActor
func runLearningBenchmark(
  server: XvfbServer, scratch: String, shieldctl: String, uses: Int, starts: Int, delays: [Int] = [3, 6]
) async throws -> (figures: [String: Any], rows: [TableRow]) {
  var table: [TableRow] = []
  var result: [String: Any] = ["uses": uses, "starts": starts]
  print(
    "\n11. learning per program (capture.learn off = today, on), \(uses) uses per tool, \(starts) starts per program")
  let probe = try XClient(display: server.display)
  let app = try XClient(display: server.display)
  let secure = app.appWindow(
    x: 200, y: 150, width: 400, height: 300, color: 0xFF0000, title: "Bench secret", wmClass: "BenchSecret",
    secure: true)
  var mask = XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY.rawValue
  xcb_change_window_attributes(app.conn, secure, XCB_CW_EVENT_MASK.rawValue, &mask)
  app.sync()

  // First-shot leaks.
  let tools: [(name: String, executable: String, shot: (XvfbServer) async throws -> RGBImage)] = [
    ("import", "import", { try await Capture.importRoot(on: $0) }),
    ("scrot", "scrot", { try await Capture.scrot(on: $0) }),
    ("maim", "maim", { try await Capture.maim(on: $0, hideCursor: true) }),
    ("xwd", "xwd", { try await Capture.xwdRoot(on: $0) }),
    ("gnome-screenshot", "gnome-screenshot", { try await Capture.gnomeScreenshot(on: $0) }),
    ("flameshot", "flameshot", { try await Capture.flameshot(on: $0) }),
  ]
  var leaks: [String: Any] = [:]
  var totals: [String: (first: Int, firstOf: Int, later: Int, laterOf: Int)] = [:]
  for learn in [false, true] {
    let mode = learn ? "on" : "off"
    let policyPath = scratch + "/policy-learn-\(mode).json5"
    try writePolicy("{ version: 1, capture: { linger: \"200ms\", learn: \(learn) } }\n", to: policyPath)
    let daemon = try DaemonProcess(
      shieldctl: shieldctl, display: server.display, policy: policyPath,
      logPath: scratch + "/daemon-learn-\(mode).log", stateHome: scratch + "/state-learn-\(mode)")
    defer { daemon.stop() }
    try daemon.waitUntil(probe) { s in s.windows.contains { $0.id == secure && $0.secure } }
    /// Until no session is live and the secure window's shield is down (between uses).
    func waitQuiet() throws {
      try daemon.waitUntil(probe, timeout: 20) { s in
        s.sessions.isEmpty && s.windows.contains { $0.id == secure && !$0.shielded }
      }
    }
    for tool in tools {
      guard findExecutable(tool.executable, environment: server.environment) != nil else {
        print("  \(tool.name): not installed, skipped")
        continue
      }
      var leaked: [Int] = []
      for _ in 0..<uses {
        try waitQuiet()
        let image = try await tool.shot(server)
        leaked.append(image.count(of: .red))
      }
      let first = leaked.first.map { $0 > 0 ? 1 : 0 } ?? 0
      let later = leaked.dropFirst().filter { $0 > 0 }.count
      var t = totals[mode] ?? (0, 0, 0, 0)
      t = (t.first + first, t.firstOf + 1, t.later + later, t.laterOf + leaked.count - 1)
      totals[mode] = t
      let line = "first use \(first)/1 leaked, later uses \(later)/\(leaked.count - 1) leaked"
      print(
        "  learn \(mode): " + tool.name.padding(toLength: 8, withPad: " ", startingAt: 0) + line
          + " (secret px \(leaked))")
      leaks["\(tool.name)_learn_\(mode)"] = ["secret_pixels": leaked, "first_leaked": first, "later_leaked": later]
    }
    // How long each learned tool's session held the shields per later use (its `known`
    // session from the connection: before, `Engine.learnedKnownHold`; now until the tool
    // exits, plus the linger), from the daemon's audit.
    if learn {
      try waitQuiet()
      let held = learnedSessionSeconds(logPath: daemon.logPath)
      let mean = held.reduce(0, +) / Double(max(1, held.count))
      let line = String(format: "%.2f s mean of %d (max %.2f s)", mean, held.count, held.max() ?? 0)
      print("  learn on: a learned tool's session per later use: " + line)
      result["learned_session_seconds"] = held
      table.append(
        TableRow(
          row: "11 learning", figure: "a learned tool's session per later use (linger 200 ms)", value: line,
          target: "-", met: nil))
    }
    // A delayed shot of the tool used above (learned, with learning on): scrot connects,
    // waits, then reads; a learned program's session lasts at most `Engine.learnedKnownHold`
    // from its connection.
    if findExecutable("scrot", environment: server.environment) != nil {
      var delayed: [String] = []
      for delay in delays {
        try waitQuiet()
        let px = try await Capture.scrot(on: server, delay: delay).count(of: .red)
        delayed.append("-d \(delay) \(px > 0 ? "leaked" : "hidden")")
        leaks["scrot_d\(delay)_learn_\(mode)"] = ["secret_pixels": px]
      }
      let line = delayed.joined(separator: ", ")
      print("  learn \(mode): scrot after its uses, delayed: " + line)
      table.append(
        TableRow(
          row: "11 learning",
          figure: "scrot -d N after its uses, learn \(mode)"
            + (learn ? " (a learned session lasts at most \(Engine.learnedKnownHold) from the connection)" : ""),
          value: line, target: "-", met: nil))
    }
  }
  for mode in ["off", "on"] {
    guard let t = totals[mode] else { continue }
    let line = "first use \(t.first)/\(t.firstOf), later uses \(t.later)/\(t.laterOf) leaked"
    table.append(
      TableRow(
        row: "11 learning", figure: "one-shot tools' leaks, learn \(mode)\(mode == "off" ? " (today)" : "")",
        value: line, target: "-", met: nil))
  }
  result["leaks"] = leaks

  // Darkened ms per ordinary program start, quarantine 300 ms.
  var here = server.environment
  here["DISPLAY"] = server.display
  let programs: [(name: String, executable: String, arguments: [String])] = [
    ("xdpyinfo", "xdpyinfo", []), ("xprop -root", "xprop", ["-root", "_NET_SUPPORTED"]),
    ("xwininfo -root", "xwininfo", ["-root"]),
    ("xprop -spy for 1 s", "timeout", ["1", "xprop", "-spy", "-root", "_NET_ACTIVE_WINDOW"]),
    ("xclock for 1 s", "timeout", ["1", "xclock"]),
  ]
  var darkened: [String: Any] = [:]
  let fd = xcb_get_file_descriptor(app.conn)
  for learn in [false, true] {
    let mode = learn ? "on" : "off"
    let policyPath = scratch + "/policy-quarantine-learn-\(mode).json5"
    try writePolicy(
      "{ version: 1, capture: { linger: \"200ms\", quarantine: \"300ms\", learn: \(learn) } }\n", to: policyPath)
    let daemon = try DaemonProcess(
      shieldctl: shieldctl, display: server.display, policy: policyPath,
      logPath: scratch + "/daemon-quarantine-learn-\(mode).log", stateHome: scratch + "/state-quarantine-\(mode)")
    defer { daemon.stop() }
    try daemon.waitUntil(probe) { s in s.windows.contains { $0.id == secure && $0.secure } }
    sleepSeconds(5)  // the program scan (launches by program) runs in the background
    var allLater: [Double] = []
    for p in programs {
      guard findExecutable(p.executable, environment: here) != nil else {
        print("  \(p.name): not installed, skipped")
        continue
      }
      var up: [Double] = []
      for _ in 0..<starts {
        _ = try? daemon.waitUntil(probe, timeout: 5) { s in s.windows.contains { $0.id == secure && !$0.shielded } }
        sleepSeconds(0.4)
        app.discardEvents()
        up.append(
          try ShieldTime.measure(
            app, secure, fd: fd, executable: p.executable, arguments: p.arguments, environment: here
          ).up)
      }
      let ms = up.map { $0 * 1000 }
      let later = Array(ms.dropFirst(CaptureHistory.quietAfter))
      if !p.name.hasPrefix("xclock") { allLater += later }  // xclock: apart (see above)
      let line = String(
        format: "%.1f ms per start (starts 1-%d %.1f, starts %d-%d %.1f)", ms.reduce(0, +) / Double(ms.count),
        CaptureHistory.quietAfter,
        ms.prefix(CaptureHistory.quietAfter).reduce(0, +) / Double(CaptureHistory.quietAfter),
        CaptureHistory.quietAfter + 1, ms.count, later.reduce(0, +) / Double(max(1, later.count)))
      print("  learn \(mode): " + p.name.padding(toLength: 16, withPad: " ", startingAt: 0) + line)
      darkened["\(p.name)_learn_\(mode)"] = ["ms_up": ms]
    }
    let stateHome = scratch + "/state-quarantine-\(mode)"
    daemon.stop()  // saves the history
    if learn, let h = try? HistoryFile.read(stateHome + "/captureshield/history.json") {
      let seen = h.sorted.map { "\($0.path): \(h.standing($0.file).rawValue) (\($0.starts) starts)" }
      print("  learned: " + seen.joined(separator: "; "))
    }
    let mean = allLater.reduce(0, +) / Double(max(1, allLater.count))
    darkened["mean_after_quiet_learn_\(mode)"] = mean
    table.append(
      TableRow(
        row: "11 learning",
        figure: "darkened ms per ordinary start (quarantine 300 ms), learn \(mode)\(mode == "off" ? " (today)" : "")",
        value: String(format: "%.1f ms (starts %d-%d of each program)", mean, CaptureHistory.quietAfter + 1, starts),
        target: "-", met: nil))
  }
  result["darkened"] = darkened
  return (result, table)
}

/// The `seconds` of every `session-end` of a session known by learning (`kind=known`,
/// `known=learned`) in a daemon's text audit log.
func learnedSessionSeconds(logPath: String) -> [Double] {
  guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
  return text.split(separator: "\n").compactMap { line -> Double? in
    guard line.contains("session-end"), line.contains("kind=known"), line.contains("known=learned"),
      let r = line.range(of: " seconds=")
    else { return nil }
    return Double(line[r.upperBound...].prefix { $0.isNumber || $0 == "." })
  }
}

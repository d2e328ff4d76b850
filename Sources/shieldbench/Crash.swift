// Row 12: what `shield.failMode` costs when the daemon dies (a crash, or a same-user
// process that kills it), under the systemd unit's restart (dist/captureshield.service.in:
// Restart=on-failure, RestartSec=2), open and closed, BENCH_CRASH_RUNS runs each (default 3):
// (a) the attacker's view: a recorder (one connection reading the secure window's area of
//     the root every 33 ms) captures; the daemon is killed (SIGKILL) while it shields; a new
//     daemon starts 2 s later. The frames with a secret pixel from the kill until the new
//     daemon's shield is up, and the milliseconds they span.
// (b) the user's view: the capture ends and the daemon is killed at once (its shields still
//     up for the linger); a new daemon starts 2 s later. How long the window stays dark
//     after the capture ended, against the same without a crash.
// "Dark" is read from the X tree (a mapped child of the secure window: the shield), not
// from the daemon's state, which a dead daemon does not update.
import CXCB
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

@MainActor
func runCrashBenchmark(server: XvfbServer, scratch: String, shieldctl: String, runs: Int) async throws -> (
  [String: Any], [TableRow]
) {
  let restartDelay = 2.0  // the unit's RestartSec
  let probe = try XClient(display: server.display)
  let app = try XClient(display: server.display)
  let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  let window = app.appWindow(
    x: Int16(rect.x), y: Int16(rect.y), width: UInt16(rect.width), height: UInt16(rect.height), color: 0xFF0000,
    title: "secret", secure: true)
  app.sync()

  /// A mapped child of the secure window: its shield is up.
  func dark() -> Bool {
    guard let tree = xcb_query_tree_reply(probe.conn, xcb_query_tree(probe.conn, window), nil) else { return false }
    defer { free(tree) }
    let n = Int(xcb_query_tree_children_length(tree))
    guard n > 0, let children = xcb_query_tree_children(tree) else { return false }
    return (0..<n).contains { probe.mapState(children[$0]) == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue) }
  }

  var result: [String: Any] = ["runs": runs, "restart_s": restartDelay]
  var rows: [TableRow] = []
  print("\n12. the daemon killed under systemd's restart (\(Int(restartDelay)) s), \(runs) runs per failMode")
  var generation = 0
  for mode in ["open", "closed"] {
    let policyPath = scratch + "/policy-crash-\(mode).json5"
    try writePolicy("{ version: 1, shield: { failMode: \"\(mode)\" } }\n", to: policyPath)
    func daemon() throws -> DaemonProcess {
      generation += 1
      return try DaemonProcess(
        shieldctl: shieldctl, display: server.display, policy: policyPath,
        logPath: scratch + "/daemon-crash-\(mode)-\(generation).log")
    }
    var leakedFrames: [Int] = []
    var leakedMs: [Double] = []
    var framesAfterKill: [Int] = []
    var darkAfterCrash: [Double] = []
    var darkNoCrash: [Double] = []
    for _ in 0..<runs {
      // (a) the recorder captures through a crash and the restart.
      var current = try daemon()
      try current.waitUntil(probe) { $0.windows.contains { $0.id == window && $0.secure } }
      var recorder: TestXConnection? = try server.connect()
      func frame() throws -> Int {
        guard let r = recorder else { return 0 }
        return try r.getImage(of: r.root, rect: rect).count(of: (255, 0, 0))
      }
      let t0 = monotonicNow()
      while monotonicNow() - t0 < 1 || !dark() {
        _ = try frame()
        sleepSeconds(0.033)
        if monotonicNow() - t0 > 10 { throw BenchError("no shield within 10 s of the capture (\(mode))") }
      }
      kill(current.pid, SIGKILL)
      _ = current.child.terminateBlocking(grace: .seconds(1))
      let killed = monotonicNow()
      var restarted: DaemonProcess?
      var leaks: [Double] = []
      var frames = 0
      while true {
        let now = monotonicNow()
        if restarted == nil && now - killed >= restartDelay { restarted = try daemon() }
        if let r = restarted, now - killed > restartDelay + 1, dark(),
          let s = readState(probe), s.windows.contains(where: { $0.id == window && $0.shielded })
        {
          current = r
          break
        }
        if now - killed > 20 { throw BenchError("the new daemon did not shield within 18 s (\(mode))") }
        let px = try frame()
        frames += 1
        if px > 0 { leaks.append(monotonicNow() - killed) }
        sleepSeconds(0.033)
      }
      leakedFrames.append(leaks.count)
      leakedMs.append(leaks.isEmpty ? 0 : 1000 * ((leaks.last ?? 0) - (leaks.first ?? 0) + 0.033))
      framesAfterKill.append(frames)

      // (b) the capture ends; the daemon is killed at once, a new one starts 2 s later.
      recorder?.disconnect()
      recorder = nil
      let ended = monotonicNow()
      kill(current.pid, SIGKILL)
      _ = current.child.terminateBlocking(grace: .seconds(1))
      var next: DaemonProcess?
      while dark() {
        if next == nil && monotonicNow() - ended >= restartDelay { next = try daemon() }
        if monotonicNow() - ended > 30 { throw BenchError("the window stayed dark 30 s (\(mode))") }
        sleepSeconds(0.005)
      }
      darkAfterCrash.append(1000 * (monotonicNow() - ended))
      if next == nil { next = try daemon() }
      guard let baseline = next else { continue }
      try baseline.waitUntil(probe) { $0.windows.contains { $0.id == window && $0.secure } }

      // The same capture end without a crash: the linger alone.
      recorder = try server.connect()
      let t1 = monotonicNow()
      while monotonicNow() - t1 < 1 || !dark() {
        _ = try frame()
        sleepSeconds(0.033)
        if monotonicNow() - t1 > 10 { throw BenchError("no shield within 10 s of the capture (\(mode))") }
      }
      recorder?.disconnect()
      recorder = nil
      let ended2 = monotonicNow()
      while dark() {
        if monotonicNow() - ended2 > 30 { throw BenchError("the window stayed dark 30 s (\(mode))") }
        sleepSeconds(0.005)
      }
      darkNoCrash.append(1000 * (monotonicNow() - ended2))
      baseline.stop()
      // A clean stop in closed mode leaves the shields for the next daemon: none are up now.
      sleepSeconds(0.2)
    }
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    print(
      "    failMode \(mode): secret frames after the kill \(leakedFrames) of \(framesAfterKill) "
        + "(spanning \(leakedMs.map { Int($0) }) ms); dark after the capture ended: "
        + "\(darkAfterCrash.map { Int($0) }) ms with a crash, \(darkNoCrash.map { Int($0) }) ms without")
    result[mode] = [
      "leaked_frames": leakedFrames, "frames_after_kill": framesAfterKill, "leaked_ms": leakedMs,
      "dark_ms_after_crash": darkAfterCrash, "dark_ms_no_crash": darkNoCrash,
    ]
    let leakedValue =
      "\(leakedFrames.reduce(0, +)) of \(framesAfterKill.reduce(0, +)) (\(Int(median(leakedMs))) ms median)"
    rows.append(
      TableRow(
        row: "12 crash", figure: "\(mode): secret frames after a kill", value: leakedValue, target: "-", met: nil))
    rows.append(
      TableRow(
        row: "12 crash", figure: "\(mode): dark ms after capture, crash / none",
        value: "\(Int(median(darkAfterCrash))) / \(Int(median(darkNoCrash)))", target: "-", met: nil))
  }
  return (result, rows)
}

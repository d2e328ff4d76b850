// Row 9: the flicker `capture.quarantineOnLaunch` causes per launch. A
// secure window nobody captures; the daemon with quarantine 300 ms on launch; then
// BENCH_LAUNCH_RUNS (default 10) launches of each kind, one at a time: an X client of this
// display (xdpyinfo), the daemon's own CLI (`shieldctl status`), a non-X program that loads
// libxcb (ffmpeg encoding a generated picture to nothing) of this display, and the same
// ffmpeg of another session (no DISPLAY). The app's own connection follows its shield (a
// child of its window: SubstructureNotify) and counts each map and unmap, and how long the
// shield was up, from the launch until 400 ms after the process exited. On a shared machine
// other processes' launches add to these; the daemon's audit log then tells, per launch it
// saw, why it ended and how long it held the shields (printed last). Run it with the old and the new shieldctl (SHIELDCTL)
// for before and after.
import CXCB
import CaptureShield
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// The figures, and the table's rows.
@MainActor
func runLaunchFlickerBenchmark(
  server: XvfbServer, scratch: String, shieldctl: String, runs: Int
) async throws -> (figures: [String: Any], rows: [TableRow]) {
  var table: [TableRow] = []
  print("\n9. launch flicker with capture.quarantineOnLaunch (quarantine 300 ms, \(runs) launches per kind)")
  let probe = try XClient(display: server.display)
  let app = try XClient(display: server.display)
  let secure = app.appWindow(
    x: 200, y: 150, width: 400, height: 300, color: 0xFF0000, title: "Bench secret", wmClass: "BenchSecret",
    secure: true)
  var mask = XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY.rawValue
  xcb_change_window_attributes(app.conn, secure, XCB_CW_EVENT_MASK.rawValue, &mask)
  app.sync()
  let policyPath = scratch + "/policy-launch-flicker.json5"
  try writePolicy(
    "{ version: 1, capture: { linger: \"200ms\", quarantine: \"300ms\", quarantineOnLaunch: true, learn: false } }\n",
    to: policyPath)
  let daemon = try DaemonProcess(
    shieldctl: shieldctl, display: server.display, policy: policyPath, logPath: scratch + "/daemon-launch-flicker.log")
  defer { daemon.stop() }
  try daemon.waitUntil(probe) { s in s.windows.contains { $0.id == secure && $0.secure } }
  // The program scan (launches named by program) is done in the background within seconds.
  sleepSeconds(5)

  var here = server.environment
  here["DISPLAY"] = server.display
  var elsewhere = server.environment
  elsewhere["DISPLAY"] = nil
  let ffmpeg = ["-nostdin", "-loglevel", "quiet", "-f", "lavfi", "-i", "nullsrc=s=64x64:d=2", "-f", "null", "-"]
  let kinds: [(name: String, executable: String, arguments: [String], environment: [String: String])] = [
    ("xdpyinfo (X client)", "xdpyinfo", [], here),
    ("shieldctl status", shieldctl, ["status"], here),
    ("ffmpeg, no X (this display)", "ffmpeg", ffmpeg, here),
    ("ffmpeg, no X (no DISPLAY)", "ffmpeg", ffmpeg, elsewhere),
  ]
  var result: [String: Any] = ["runs_per_kind": runs, "shieldctl": shieldctl]
  let fd = xcb_get_file_descriptor(app.conn)
  for kind in kinds {
    guard findExecutable(kind.executable, environment: kind.environment) != nil else {
      print("  \(kind.name): not installed, skipped")
      continue
    }
    var maps = 0
    var unmaps = 0
    var upSeconds: [Double] = []
    var runSeconds: [Double] = []
    for _ in 0..<runs {
      // From an unshielded window with no event pending.
      // (Best effort: other processes of the machine that load libxcb are launches too.)
      _ = try? daemon.waitUntil(probe, timeout: 5) { s in s.windows.contains { $0.id == secure && !$0.shielded } }
      sleepSeconds(0.4)
      app.discardEvents()
      // A shield already up (another process's launch) counts from the start.
      let t = try ShieldTime.measure(
        app, secure, fd: fd, executable: kind.executable, arguments: kind.arguments, environment: kind.environment,
        upAtStart: shieldMapped(app, secure), name: kind.name)
      maps += t.maps
      unmaps += t.unmaps
      upSeconds.append(t.up)
      runSeconds.append(t.ran)
    }
    let meanUp = upSeconds.reduce(0, +) / Double(max(1, upSeconds.count)) * 1000
    let maxUp = (upSeconds.max() ?? 0) * 1000
    let meanRun = runSeconds.reduce(0, +) / Double(max(1, runSeconds.count)) * 1000
    let line = String(
      format: "%.1f maps, %.1f ms up per launch (max %.1f; process ran %.0f ms)",
      Double(maps) / Double(runs), meanUp, maxUp, meanRun)
    print("  " + kind.name.padding(toLength: 30, withPad: " ", startingAt: 0) + line)
    result[kind.name] = [
      "maps": maps, "unmaps": unmaps, "launches": runs, "ms_up_mean": meanUp, "ms_up_max": maxUp,
      "ms_up": upSeconds.map { $0 * 1000 }, "process_ms_mean": meanRun,
    ]
    table.append(
      TableRow(row: "9 launch flicker", figure: "\(kind.name): shield per launch", value: line, target: "-", met: nil))
  }
  // Every launch the daemon saw while the row ran, this Xvfb's and the machine's (the watch
  // sees every process that loads libxcb), by why it ended and how long it held the shields.
  var ends: [String: [Double]] = [:]
  var byProgram: [String: [Double]] = [:]
  let log = (try? String(contentsOfFile: daemon.logPath, encoding: .utf8)) ?? ""
  for line in log.split(separator: "\n") where line.contains("launch-end") {
    guard let w = line.range(of: "why=\""), let s = line.range(of: " seconds=") else { continue }
    let why = line[w.upperBound...].prefix { $0 != "\"" }
    let seconds = Double(line[s.upperBound...].prefix { $0 != " " }) ?? 0
    ends[String(why), default: []].append(seconds)
    if let p = line.range(of: " program=") {
      let program = line[p.upperBound...].prefix { $0 != " " }
      if program == "xdpyinfo" || program == "ffmpeg" { byProgram["\(program): \(why)", default: []].append(seconds) }
    }
  }
  print("  launches the daemon saw (all processes on the machine), by how they ended:")
  var endFigures: [String: Any] = [:]
  for (why, secs) in ends.sorted(by: { $0.value.count > $1.value.count }) {
    let sorted = secs.sorted()
    let median = sorted[sorted.count / 2] * 1000
    let line = String(format: "%d launches, median %.1f ms, max %.1f ms", secs.count, median, (sorted.last ?? 0) * 1000)
    print("    " + why.padding(toLength: 28, withPad: " ", startingAt: 0) + line)
    endFigures[why] = ["launches": secs.count, "ms_median": median, "ms_max": (sorted.last ?? 0) * 1000]
    table.append(TableRow(row: "9 launch flicker", figure: "launch ended: \(why)", value: line, target: "-", met: nil))
  }
  result["launch_ends"] = endFigures
  print("  of these, starts of xdpyinfo and ffmpeg (this row's and any other on the machine):")
  for (what, secs) in byProgram.sorted(by: { $0.key < $1.key }) {
    let sorted = secs.sorted()
    print(
      "    " + what.padding(toLength: 36, withPad: " ", startingAt: 0)
        + String(format: "%d launches, median %.1f ms", secs.count, sorted[sorted.count / 2] * 1000))
  }
  result["launch_ends_by_program"] = byProgram.mapValues { $0.map { $0 * 1000 } }
  return (result, table)
}

/// Whether a child of `window` (the daemon's shield) is mapped.
private func shieldMapped(_ x: XClient, _ window: xcb_window_t) -> Bool {
  guard let r = xcb_query_tree_reply(x.conn, xcb_query_tree(x.conn, window), nil) else { return false }
  defer { free(r) }
  let n = Int(xcb_query_tree_children_length(r))
  guard n > 0, let children = xcb_query_tree_children(r) else { return false }
  return (0..<n).contains { x.mapState(children[$0]) == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue) }
}

// Row 5: 5,000 top-level windows from 50 clients (500 tagged), then a storm of windows.
import CXCB
import CaptureShield
import Foundation
import ShieldTestSupport

func runScaleBenchmark(
  display: String, scratch: String, shieldctl: String, stormSeconds: Double, stormRate: Int, table: inout [TableRow]
) throws -> [String: Any] {
  let probe = try XClient(display: display)
  var clients: [XClient] = []
  var secureCount = 0
  for c in 0..<50 {
    let x = try XClient(display: display)
    for i in 0..<100 {
      let secure = i % 10 == 0
      if secure { secureCount += 1 }
      x.appWindow(
        x: Int16((c * 23 + i * 7) % 1000), y: Int16((c * 13 + i * 11) % 700), width: UInt16(80 + i % 50),
        height: UInt16(60 + c % 40), color: UInt32(0x101010 * (c % 15)), title: "client \(c) window \(i)",
        wmClass: "ScaleApp\(c % 7)", secure: secure)
    }
    x.sync()
    clients.append(x)
  }
  let storm = try XClient(display: display)
  let policyPath = scratch + "/policy-scale.json5"
  try writePolicy("{ version: 1 }\n", to: policyPath)

  let daemon = try DaemonProcess(
    shieldctl: shieldctl, display: display, policy: policyPath, logPath: scratch + "/daemon-scale.log")
  defer { daemon.stop() }
  let want = secureCount
  let startup = try daemon.waitUntil(probe, timeout: 30, pollEvery: 0.01) { s in
    s.windows.count(where: \.secure) == want
  }
  let afterStart = ProcSample.read(pid: daemon.pid)
  sleepSeconds(1)
  let idleRSS = ProcSample.read(pid: daemon.pid)

  // The storm: every 10 ms, `perTick` top-level windows created (with WM_CLASS and a title;
  // not mapped: mapping over 5,000 mapped siblings is what limits Xvfb, not the daemon), the
  // previous tick's retitled, the tick before's destroyed.
  let perTick = max(1, stormRate / 100)
  guard let cpu0 = ProcSample.read(pid: daemon.pid) else { throw BenchError("daemon gone") }
  let t0 = monotonicNow()
  var ring: [[xcb_window_t]] = []
  var created = 0
  var tick = 0
  while monotonicNow() - t0 < stormSeconds {
    var fresh: [xcb_window_t] = []
    for j in 0..<perTick {
      fresh.append(
        storm.appWindow(
          x: Int16((tick * 3 + j * 17) % 1100), y: Int16((tick + j * 29) % 700), width: 120, height: 90,
          color: 0x405060, title: "storm \(tick)-\(j)", wmClass: "Storm", map: false))
    }
    created += perTick
    if let prev = ring.last { for w in prev { storm.setTitle(w, "storm retitled \(w)") } }
    ring.append(fresh)
    if ring.count > 2 { for w in ring.removeFirst() { xcb_destroy_window(storm.conn, w) } }
    storm.sync()
    storm.discardEvents()
    tick += 1
    let next = t0 + Double(tick) * 0.01
    sleepSeconds(next - monotonicNow())
  }
  for batch in ring { for w in batch { xcb_destroy_window(storm.conn, w) } }
  storm.sync()
  let wall = monotonicNow() - t0
  guard let cpu1 = ProcSample.read(pid: daemon.pid) else { throw BenchError("the daemon died during the storm") }

  // Kept up? A tagged marker window created now must be tracked (secure) within 1 s.
  let marker = storm.appWindow(x: 10, y: 10, width: 100, height: 100, color: 0xFF0000, title: "marker", secure: true)
  storm.sync()
  let tm = monotonicNow()
  var markerLatency: Double?
  while monotonicNow() - tm < 10 {
    if let s = readState(probe), s.windows.contains(where: { $0.id == marker && $0.secure }) {
      markerLatency = monotonicNow() - tm
      break
    }
    sleepSeconds(0.01)
  }
  let after = ProcSample.read(pid: daemon.pid)
  withExtendedLifetime(clients) {}

  let cpuShare = Double(cpu1.ticks - cpu0.ticks) / ProcSample.ticksPerSecond / wall
  let cpuShareSched = Double(cpu1.since(cpu0).runNanoseconds) / 1e9 / wall
  let rssMiB = Double(afterStart?.rssKiB ?? 0) / 1024
  let rssIdleMiB = Double(idleRSS?.rssKiB ?? 0) / 1024
  let hwmMiB = Double(after?.hwmKiB ?? 0) / 1024
  let keptUp = (markerLatency ?? 99) <= 1.0
  print("\nscale: 5,000 windows from 50 clients (\(secureCount) tagged), then a storm")
  print(
    String(
      format: "  start-up to fully tracked %.3f s; RSS %.1f MiB after start-up, %.1f MiB 1 s later, peak %.1f MiB",
      startup, rssMiB, rssIdleMiB, hwmMiB))
  print(
    String(
      format:
        "  storm: %d windows created/retitled/destroyed in %.1f s (%.0f/s); daemon CPU %.1f%% (ticks), %.1f%% (schedstat); marker tracked after %@",
      created, wall, Double(created) / wall, cpuShare * 100, cpuShareSched * 100,
      markerLatency.map { String(format: "%.3f s", $0) } ?? "never (10 s)"))
  table.append(
    TableRow(
      row: "5 scale", figure: "start-up to 5,000 windows tracked", value: String(format: "%.3f s", startup),
      target: "< 1 s", met: startup < 1))
  table.append(
    TableRow(
      row: "5 scale", figure: "RSS after start-up (1 s later)",
      value: String(format: "%.1f MiB (%.1f MiB)", rssMiB, rssIdleMiB),
      target: "< 30 MB", met: max(rssMiB, rssIdleMiB) * 1.048576 < 30))
  table.append(
    TableRow(
      row: "5 scale",
      figure: "storm \(Int((Double(created) / wall).rounded()))/s for \(Int(stormSeconds)) s: daemon CPU",
      value: String(format: "%.1f %%", cpuShareSched * 100), target: "-", met: nil))
  table.append(
    TableRow(
      row: "5 scale", figure: "storm: marker window tracked after",
      value: markerLatency.map { String(format: "%.3f s", $0) } ?? "not within 10 s", target: "<= 1 s", met: keptUp))
  return [
    "windows": 5_000, "clients": 50, "tagged": secureCount, "startup_s": startup,
    "rss_after_startup_kib": jsonValue(afterStart?.rssKiB), "rss_1s_later_kib": jsonValue(idleRSS?.rssKiB),
    "peak_rss_kib": jsonValue(after?.hwmKiB), "storm_windows": created, "storm_wall_s": wall,
    "storm_rate_per_s": Double(created) / wall, "storm_cpu_share_ticks": cpuShare,
    "storm_cpu_share_schedstat": cpuShareSched, "marker_tracked_after_s": jsonValue(markerLatency), "kept_up": keptUp,
  ]
}

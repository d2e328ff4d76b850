// Row 2: what the daemon costs while nothing happens.
import CaptureShield
import Foundation
import ShieldTestSupport

/// CPU and wake-ups of `pid` over `seconds` of wall time.
func measureProcess(pid: Int32, seconds: Double) throws -> [String: Any] {
  guard let a = ProcSample.read(pid: pid) else { throw BenchError("cannot read /proc/\(pid)") }
  let t0 = monotonicNow()
  sleepSeconds(seconds)
  guard let b = ProcSample.read(pid: pid) else { throw BenchError("the daemon (pid \(pid)) is gone") }
  let wall = monotonicNow() - t0
  let d = b.since(a)
  return [
    "wall_s": wall,
    "cpu_ms_ticks": Double(b.ticks - a.ticks) * 1000 / ProcSample.ticksPerSecond,
    "clock_ticks": b.ticks - a.ticks, "clock_ticks_per_s": ProcSample.ticksPerSecond,
    "cpu_ms_schedstat": Double(d.runNanoseconds) / 1e6,
    "voluntary_switches": d.voluntary, "involuntary_switches": d.involuntary, "exited_threads": d.exitedThreads,
    "rss_kib": b.rssKiB,
  ]
}

func runIdleBenchmark(display: String, scratch: String, shieldctl: String, table: inout [TableRow]) throws -> [String:
  Any]
{
  let probe = try XClient(display: display)
  let policyPath = scratch + "/policy-idle.json5"
  try writePolicy("{ version: 1 }\n", to: policyPath)  // built-in defaults
  var result: [String: Any] = ["policy": "{ version: 1 } (built-in defaults)"]

  // (a) 10 s, one secure window.
  let first = try XClient(display: display)
  first.appWindow(x: 50, y: 50, width: 300, height: 200, color: 0xFF0000, title: "secret 0", secure: true)
  first.sync()
  func measure(secureCount: Int, seconds: Double) throws -> [String: Any] {
    let daemon = try DaemonProcess(
      shieldctl: shieldctl, display: display, policy: policyPath, logPath: scratch + "/daemon-idle.log")
    defer { daemon.stop() }
    try daemon.waitUntil(probe) { $0.windows.filter(\.secure).count == secureCount }
    sleepSeconds(2.5)  // past the daemon's start-up and any RECORD poking window
    var m = try measureProcess(pid: daemon.pid, seconds: seconds)
    m["windows"] = secureCount == 1 ? 1 : 50
    m["secure_windows"] = secureCount
    return m
  }
  let idle10 = try measure(secureCount: 1, seconds: 10)
  result["idle_10s"] = idle10

  // (b) 30 s, 50 windows from 5 clients, 5 of them secure (the one above included).
  var apps: [XClient] = [first]
  for c in 0..<5 {
    let app = c == 0 ? first : try XClient(display: display)
    if c > 0 { apps.append(app) }
    for i in 0..<(c == 0 ? 9 : 10) {
      let secure = c > 0 && i == 0
      app.appWindow(
        x: Int16(20 + 60 * c + 5 * i), y: Int16(20 + 40 * i), width: 240, height: 160, color: 0x2040A0,
        title: "window \(c)-\(i)", wmClass: "App\(c)", secure: secure)
    }
    app.sync()
  }
  let idle30 = try measure(secureCount: 5, seconds: 30)
  result["idle_30s_50_windows"] = idle30

  // (c) What each short-lived X client costs the daemon: 300 clients, one every 10 ms, each
  // connecting, reading the daemon's state (one round trip) and disconnecting, as a status
  // poller or a panel applet does. Without and with quarantine (which also shields and
  // unshields for each).
  var perClient: [String: Double] = [:]
  for (key, text) in [("off", "{ version: 1 }\n"), ("on", "{ version: 1, capture: { quarantine: \"300ms\" } }\n")] {
    let path = scratch + "/policy-churn-\(key).json5"
    try writePolicy(text, to: path)
    let daemon = try DaemonProcess(
      shieldctl: shieldctl, display: display, policy: path, logPath: scratch + "/daemon-churn.log")
    defer { daemon.stop() }
    try daemon.waitUntil(probe) { $0.windows.filter(\.secure).count == 5 && !$0.shieldsActive }
    sleepSeconds(2.5)
    let clients = 300
    guard let a = ProcSample.read(pid: daemon.pid) else { throw BenchError("cannot read /proc/\(daemon.pid)") }
    let state = probe.atom("_CAPTURE_SHIELD_STATE")
    for _ in 0..<clients {
      let c = try XClient(display: display)
      _ = c.property(c.root, state)
      withExtendedLifetime(c) {}
      sleepSeconds(0.01)
    }
    sleepSeconds(1)  // the last quarantine and its audit lines
    guard let b = ProcSample.read(pid: daemon.pid) else { throw BenchError("the daemon is gone") }
    perClient[key] = Double(b.since(a).runNanoseconds) / 1e3 / Double(clients)
  }
  withExtendedLifetime(apps) {}
  result["cpu_us_per_client_quarantine_off"] = perClient["off"]
  result["cpu_us_per_client_quarantine_on"] = perClient["on"]

  func d(_ m: [String: Any], _ k: String) -> Double { (m[k] as? Double) ?? Double((m[k] as? Int) ?? 0) }
  let cpu30 = d(idle30, "cpu_ms_ticks")
  print(
    "\nidle cost (daemon pid utime+stime from /proc/PID/stat; run time from schedstat; wake-ups = voluntary switches)")
  for (label, m) in [("10 s, 1 secure window", idle10), ("30 s, 50 windows, 5 secure", idle30)] {
    print(
      "  \(label.padding(toLength: 28, withPad: " ", startingAt: 0)) cpu \(String(format: "%.0f", d(m, "cpu_ms_ticks"))) ms (ticks), \(String(format: "%.2f", d(m, "cpu_ms_schedstat"))) ms (schedstat), wake-ups \(Int(d(m, "voluntary_switches"))), RSS \(Int(d(m, "rss_kib"))) KiB"
    )
  }
  table.append(
    TableRow(
      row: "2 idle", figure: "10 s idle, 1 secure: CPU (ticks / schedstat), wake-ups",
      value: String(
        format: "%.0f ms / %.2f ms, %d", d(idle10, "cpu_ms_ticks"), d(idle10, "cpu_ms_schedstat"),
        Int(d(idle10, "voluntary_switches"))), target: "-", met: nil))
  print(
    "  per short-lived X client (300, one every 10 ms): daemon CPU \(String(format: "%.0f", perClient["off"] ?? 0)) us"
      + " (quarantine off), \(String(format: "%.0f", perClient["on"] ?? 0)) us (quarantine on)")
  table.append(
    TableRow(
      row: "2 idle", figure: "daemon CPU per short-lived X client (quarantine off / on)",
      value: String(format: "%.0f us / %.0f us", perClient["off"] ?? 0, perClient["on"] ?? 0), target: "-",
      met: nil))
  table.append(
    TableRow(
      row: "2 idle", figure: "30 s idle, 50 windows (5 secure): CPU (ticks / schedstat), wake-ups",
      value: String(
        format: "%.0f ms / %.2f ms, %d", cpu30, d(idle30, "cpu_ms_schedstat"), Int(d(idle30, "voluntary_switches"))),
      target: "< 10 ms CPU", met: cpu30 < 10 && d(idle30, "cpu_ms_schedstat") < 10))
  return result
}

// Row 7: how often a one-shot capture tool's first frame still shows a secure window under
// quarantine (the race the README's Known limitations measure). For each of xwd, import,
// maim and scrot, BENCH_QUARANTINE_RUNS (default 50) captures of the whole screen, each
// from an unshielded red secure window, with the integration tests' policy (linger 200 ms,
// quarantine 300 ms, quarantine on launch); a run leaks when its image has any red pixel
// inside the window. Prints "k of N" per tool.
import CaptureShield
import Foundation
import ShieldTestSupport

/// The figures, and the table's rows.
@MainActor
func runQuarantineRateBenchmark(
  server: XvfbServer, scratch: String, shieldctl: String, runs: Int
) async throws -> (figures: [String: Any], rows: [TableRow]) {
  var table: [TableRow] = []
  print("\n7. quarantine leak rate (first frames of one-shot tools with secret pixels, \(runs) runs per tool)")
  let probe = try XClient(display: server.display)
  let app = try XClient(display: server.display)
  let secure = app.appWindow(
    x: 200, y: 150, width: 400, height: 300, color: 0xFF0000, title: "Bench secret", wmClass: "BenchSecret",
    secure: true)
  app.sync()
  let policyPath = scratch + "/policy-quarantine-rate.json5"
  try writePolicy(
    "{ version: 1, capture: { linger: \"200ms\", quarantine: \"300ms\", learn: false } }\n", to: policyPath)
  let daemon = try DaemonProcess(
    shieldctl: shieldctl, display: server.display, policy: policyPath,
    logPath: scratch + "/daemon-quarantine-rate.log")
  defer { daemon.stop() }
  try daemon.waitUntil(probe) { s in s.windows.contains { $0.id == secure && $0.secure } }
  let tools: [(name: String, method: CaptureMethod, executable: String)] = [
    ("xwd", .xwdRoot, "xwd"), ("import", .importRoot, "import"), ("maim", .maim, "maim"), ("scrot", .scrot, "scrot"),
  ]
  var result: [String: Any] = ["runs_per_tool": runs]
  var missing: [String] = []
  for tool in tools {
    guard findExecutable(tool.executable, environment: server.environment) != nil else {
      missing.append(tool.name)
      continue
    }
    var leaks: [Int] = []
    var failures = 0
    for run in 0..<runs {
      // Each run starts from an unshielded window (the last run's quarantine is over).
      try daemon.waitUntil(probe, timeout: 20) { s in s.windows.contains { $0.id == secure && !$0.shielded } }
      do {
        let counts = try await tool.method.capture(window: secure, on: server).counts(of: .red)
        if counts.contains(where: { $0 > 0 }) { leaks.append(run) }
      } catch {
        failures += 1
      }
    }
    let line = "\(leaks.count) of \(runs - failures) first frames with secret pixels"
    print(
      "  " + tool.name.padding(toLength: 7, withPad: " ", startingAt: 0) + line
        + (leaks.isEmpty ? "" : " (runs \(leaks.map(String.init).joined(separator: ", ")))")
        + (failures == 0 ? "" : "; \(failures) captures failed"))
    result[tool.name] = ["leaks": leaks.count, "runs": runs - failures, "leaking_runs": leaks, "failures": failures]
    table.append(
      TableRow(
        row: "7 quarantine rate", figure: "\(tool.name): first frames with secret pixels", value: line,
        target: "-", met: nil))
  }
  if !missing.isEmpty {
    print("  (not installed, skipped: \(missing.joined(separator: ", ")))")
    result["missing_tools"] = missing
  }
  return (result, table)
}

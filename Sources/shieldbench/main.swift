// shieldbench: prints CaptureShield's benchmark figures (`make bench`).
//
// 0. the policy/engine micro-benchmark (no X);
// then, each on its own private Xvfb with the real daemon (`shieldctl watch`):
// 1. reaction per capture tool (and with quarantine), 3. a /proc name scanner on the same runs,
// 2. idle cost, 4. overhead on the X server, 5. scale, 6. the capture detector's recording
// overhead on xwd and on a drawing client, 7. the quarantine's leak rate for one-shot tools
// (BENCH_QUARANTINE_RUNS per tool, default 50), 9. the flicker of quarantine on launch per
// launch (BENCH_LAUNCH_RUNS per kind, default 10), 10. a known recorder that sits open
// (capture.idle; BENCH_SITOPEN_RUNS per path, default 10), 11. learning per program off and on:
// one-shot tools' first-use and later-use leaks (BENCH_LEARN_USES, default 5) and darkened
// ms per ordinary program start with quarantine (BENCH_LEARN_STARTS, default 8), 12. what
// shield.failMode costs when the daemon is killed and systemd restarts it (BENCH_CRASH_RUNS).
// Environment: BENCH_JSON (output file), BENCH_ONLY (comma list of reaction, idle, overhead,
// scale, detector, quarantine-rate, launch-flicker, sit-open, learning, crash, clipboard), BENCH_RUNS (runs per tool, default 10), SHIELDCTL (path of shieldctl),
// BENCH_KEEP (keep the scratch directories with the daemons' logs), BENCH_XVFB_WRAPPER (a
// command to run Xvfb under), OVERHEAD_PLACEMENTS / OVERHEAD_RUNS / OVERHEAD_MODE /
// OVERHEAD_ITERATIONS (row 4 only: see Overhead.swift and scripts/profile-overhead.sh).
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// One line of the final table.
struct TableRow {
  var row: String
  var figure: String
  var value: String
  var target: String
  /// nil: no target.
  var met: Bool?

  var json: [String: Any] {
    ["row": row, "figure": figure, "value": value, "target": target, "met": met.map { $0 as Any } ?? NSNull()]
  }
}

func jsonValue(_ v: Double?) -> Any { v.map { $0 as Any } ?? NSNull() }
func jsonValue(_ v: Int?) -> Any { v.map { $0 as Any } ?? NSNull() }
func jsonValue(_ v: String?) -> Any { v.map { $0 as Any } ?? NSNull() }

// The reaction bench's GetImage-first client runs as a process of its own.
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "getimage-first" {
  exit(getImageFirst(Array(CommandLine.arguments.dropFirst(2))))
}

let env = ProcessInfo.processInfo.environment
let started = monotonicNow()
let policy = runPolicyBenchmark()
var figures: [String: Any] = ["policy": policy]
var table: [TableRow] = []

let only = Set((env["BENCH_ONLY"] ?? "").split(separator: ",").map { String($0) })
func wanted(_ row: String) -> Bool { only.isEmpty || only.contains(row) }
let runs = max(1, Int(env["BENCH_RUNS"] ?? "") ?? 10)

/// Runs one row on a fresh private Xvfb; a failure is reported, never replaced by a figure.
@MainActor func onXvfb(
  _ key: String, _ rowName: String, _ body: (XvfbServer, String, String) async throws -> [String: Any]
) async {
  guard wanted(key) else { return }
  guard let shieldctl = locateShieldctl() else {
    print("\n\(key): not run: shieldctl not found next to shieldbench (set SHIELDCTL)")
    figures[key] = ["error": "shieldctl not found"]
    table.append(TableRow(row: rowName, figure: key, value: "not run (no shieldctl)", target: "-", met: false))
    return
  }
  do {
    let scratch = try makeScratchDirectory()
    // BENCH_XVFB_WRAPPER: a command the server runs under (scripts/profile-overhead.sh runs it
    // under callgrind), split on spaces.
    let wrapper = (env["BENCH_XVFB_WRAPPER"] ?? "").split(separator: " ").map(String.init)
    let xvfb = try await XvfbServer.start(
      width: 1280, height: 800, startupTimeout: .seconds(60), wrapper: wrapper)
    let t0 = monotonicNow()
    let result: Result<[String: Any], any Error>
    do { result = .success(try await body(xvfb, scratch, shieldctl)) } catch { result = .failure(error) }
    let seconds = monotonicNow() - t0
    await xvfb.stop()
    var r = try result.get()
    r["bench_seconds"] = seconds
    figures[key] = r
    if env["BENCH_KEEP"] == nil { try? FileManager.default.removeItem(atPath: scratch) }
  } catch {
    print("\n\(key): FAILED: \(error)")
    figures[key] = ["error": "\(error)"]
    table.append(TableRow(row: rowName, figure: key, value: "FAILED: \(error)", target: "-", met: false))
  }
}

await onXvfb("reaction", "1+3") { xvfb, scratch, shieldctl in
  return try runReactionBenchmark(
    display: xvfb.display, scratch: scratch, shieldctl: shieldctl, runs: runs, table: &table)
}
await onXvfb("idle", "2 idle") { xvfb, scratch, shieldctl in
  return try runIdleBenchmark(display: xvfb.display, scratch: scratch, shieldctl: shieldctl, table: &table)
}
await onXvfb("overhead", "4 overhead") { xvfb, scratch, shieldctl in
  return try runOverheadBenchmark(
    xvfb: xvfb, scratch: scratch, shieldctl: shieldctl, alternations: Int(env["OVERHEAD_RUNS"] ?? "") ?? 12,
    table: &table)
}
await onXvfb("scale", "5 scale") { xvfb, scratch, shieldctl in
  return try runScaleBenchmark(
    display: xvfb.display, scratch: scratch, shieldctl: shieldctl, stormSeconds: 10, stormRate: 1_000, table: &table)
}
await onXvfb("detector", "6 detector") { xvfb, scratch, _ in
  return try runDetectorOverheadBenchmark(display: xvfb.display, scratch: scratch, table: &table)
}

await onXvfb("quarantine-rate", "7 quarantine rate") { xvfb, scratch, shieldctl in
  let (r, rows) = try await runQuarantineRateBenchmark(
    server: xvfb, scratch: scratch, shieldctl: shieldctl,
    runs: max(1, Int(env["BENCH_QUARANTINE_RUNS"] ?? "") ?? 50))
  table += rows
  return r
}

await onXvfb("launch-flicker", "9 launch flicker") { xvfb, scratch, shieldctl in
  let (r, rows) = try await runLaunchFlickerBenchmark(
    server: xvfb, scratch: scratch, shieldctl: shieldctl, runs: max(1, Int(env["BENCH_LAUNCH_RUNS"] ?? "") ?? 10))
  table += rows
  return r
}

await onXvfb("sit-open", "10 sit open") { xvfb, scratch, shieldctl in
  let (r, rows) = try await runSitOpenBenchmark(
    server: xvfb, scratch: scratch, shieldctl: shieldctl, runs: max(1, Int(env["BENCH_SITOPEN_RUNS"] ?? "") ?? 10))
  table += rows
  return r
}

await onXvfb("learning", "11 learning") { xvfb, scratch, shieldctl in
  let (r, rows) = try await runLearningBenchmark(
    server: xvfb, scratch: scratch, shieldctl: shieldctl, uses: max(2, Int(env["BENCH_LEARN_USES"] ?? "") ?? 5),
    starts: max(4, Int(env["BENCH_LEARN_STARTS"] ?? "") ?? 8))
  table += rows
  return r
}

await onXvfb("crash", "12 crash") { xvfb, scratch, shieldctl in
  let (r, rows) = try await runCrashBenchmark(
    server: xvfb, scratch: scratch, shieldctl: shieldctl, runs: max(1, Int(env["BENCH_CRASH_RUNS"] ?? "") ?? 3))
  table += rows
  return r
}

// Server enforcement (its own two headless Xorg servers, one with the module).
if wanted("server") {
  if let shieldctl = locateShieldctl() {
    do {
      let scratch = try makeScratchDirectory()
      let (r, rows) = try await runServerModeBenchmark(
        scratch: scratch, shieldctl: shieldctl, alternations: Int(env["OVERHEAD_RUNS"] ?? "") ?? 12,
        tagRuns: max(1, Int(env["BENCH_TAG_RUNS"] ?? "") ?? 20))
      figures["server"] = r
      table += rows
    } catch {
      print("\nserver: FAILED: \(error)")
      figures["server"] = ["error": "\(error)"]
      table.append(TableRow(row: "8 server", figure: "server", value: "FAILED: \(error)", target: "-", met: false))
    }
  }
}

// The copied-text guard's figures (Clipboard.swift; its own Xvfb and daemon).
if wanted("clipboard") {
  let t0 = monotonicNow()
  var clip: [String: Any] = await runClipboardBenchmark()
  clip["bench_seconds"] = monotonicNow() - t0
  figures["clipboard"] = clip
}

// The table.
if !table.isEmpty {
  print("\nsummary (real figures of this run)")
  let w0 = max(4, table.map(\.row.count).max() ?? 0)
  let w1 = max(6, table.map(\.figure.count).max() ?? 0)
  let w2 = max(5, table.map(\.value.count).max() ?? 0)
  let w3 = max(6, table.map(\.target.count).max() ?? 0)
  func line(_ a: String, _ b: String, _ c: String, _ d: String, _ e: String) -> String {
    "  " + a.padding(toLength: w0, withPad: " ", startingAt: 0) + " | "
      + b.padding(toLength: w1, withPad: " ", startingAt: 0)
      + " | " + c.padding(toLength: w2, withPad: " ", startingAt: 0) + " | "
      + d.padding(toLength: w3, withPad: " ", startingAt: 0) + " | " + e
  }
  print(line("row", "figure", "value", "target", "met?"))
  print(
    line(
      String(repeating: "-", count: w0), String(repeating: "-", count: w1), String(repeating: "-", count: w2),
      String(repeating: "-", count: w3), "----"))
  for r in table { print(line(r.row, r.figure, r.value, r.target, r.met.map { $0 ? "yes" : "NO" } ?? "-")) }
}
figures["table"] = table.map(\.json)
figures["total_seconds"] = monotonicNow() - started
let out = env["BENCH_JSON"] ?? "bench-results.json"
if let data = try? JSONSerialization.data(withJSONObject: figures, options: [.prettyPrinted, .sortedKeys]) {
  _ = FileManager.default.createFile(atPath: out, contents: data)
  print("figures written to \(out)")
} else {
  print("error: could not encode the figures as JSON")
}
// A row that failed (an error, not a figure off its target) fails the bench run.
let failedRows = table.filter { $0.value.hasPrefix("FAILED") || $0.value.hasPrefix("not run") }
if !failedRows.isEmpty {
  print("error: \(failedRows.count) row(s) failed: \(failedRows.map(\.row).joined(separator: ", "))")
  exit(1)
}

// Row 10: a known recorder that sits open (`capture.idle`). (a) How long
// the secure window is hidden while a recorder (ShieldTestSupport's `IdleRecorder`, named in
// `capture.known`) sits open for 12 s without capturing: `capture.idle` off (before) and at
// its default (after). (b) Secret pixels in the first frame of each way of capturing again
// after the recorder went idle: a new connection (OBS's screen-capture source), a prelude
// (MIT-SHM Attach) 0, 16 or 33 ms before the capture on the connection it keeps, and a
// capture with no prelude (x11vnc when a viewer connects: the bound). Figures only.

import CaptureShield
import Foundation
import ShieldTestSupport

func runSitOpenBenchmark(server: XvfbServer, scratch: String, shieldctl: String, runs: Int) async throws -> (
  [String: Any], [TableRow]
) {
  // The path /proc shows (the scratch directory's may hold "//"): the known rule matches it.
  let recorder = try await IdleRecorder.build(in: scratch).replacingOccurrences(of: "//", with: "/")
  let probe = try XClient(display: server.display)
  let app = try XClient(display: server.display)
  let rect = (x: 100, y: 100, w: 200, h: 150)
  let window = app.appWindow(
    x: Int16(rect.x), y: Int16(rect.y), width: UInt16(rect.w), height: UInt16(rect.h), color: 0xFF0000,
    title: "secret", secure: true)
  app.sync()
  var result: [String: Any] = [:]
  var rows: [TableRow] = []

  func shielded(_ s: DaemonState) -> Bool { s.windows.first { $0.id == window }?.shielded ?? false }

  /// A daemon with the recorder known and `extra` capture keys, and the recorder started.
  func start(_ tag: String, extra: String) throws -> (DaemonProcess, BackgroundProcess, String) {
    let path = scratch + "/policy-sitopen-\(tag).json5"
    try writePolicy("{ version: 1, capture: { known: [{ exe: \"\(recorder)\" }]\(extra) } }\n", to: path)
    let daemon = try DaemonProcess(
      shieldctl: shieldctl, display: server.display, policy: path, logPath: scratch + "/daemon-sitopen-\(tag).log")
    try daemon.waitUntil(probe) { $0.windows.contains { $0.id == window && $0.secure } }
    let dir = scratch + "/rec-\(tag)"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let r = try server.startBackground(
      recorder, [dir, "\(rect.x)", "\(rect.y)", "\(rect.w)", "\(rect.h)", "33"])
    let deadline = monotonicNow() + 10
    while !String(decoding: r.stdout, as: UTF8.self).contains("ready") {
      guard monotonicNow() < deadline else { throw BenchError("the recorder did not start") }
      sleepSeconds(0.005)
    }
    return (daemon, r, dir)
  }

  // (a) Hidden seconds over 12 s of a recorder sitting open.
  var hidden: [String: Double] = [:]
  for (tag, extra) in [("off", ", idle: \"off\""), ("default", "")] {
    let (daemon, r, _) = try start("hidden-\(tag)", extra: extra)
    let t0 = monotonicNow()
    var samples = 0
    var up = 0
    while monotonicNow() - t0 < 12 {
      if let s = readState(probe) {
        samples += 1
        if shielded(s) { up += 1 }
      }
      sleepSeconds(0.05)
    }
    hidden[tag] = 12 * Double(up) / Double(max(samples, 1))
    await r.stop()
    daemon.stop()
    sleepSeconds(0.5)
  }
  print(
    "\n10. a known recorder that sits open 12 s: window hidden "
      + String(format: "%.1f s with capture.idle off, %.1f s at the default (5 s)", hidden["off"]!, hidden["default"]!))
  result["hidden_s_of_12"] = hidden
  rows.append(
    TableRow(
      row: "10 sit open", figure: "hidden s of 12 (idle off -> 5s)",
      value: String(format: "%.1f -> %.1f", hidden["off"]!, hidden["default"]!), target: "-", met: nil))

  // (b) First frames after idle, each path `runs` times (idle 1 s: the race, not the wait).
  let (daemon, r, dir) = try start("paths", extra: ", idle: \"1s\"")
  defer { daemon.stop() }
  var paths: [String: [Int]] = [:]
  let commands = ["new 33", "prelude 0", "prelude 16", "prelude 33", "bare"]
  for _ in 0..<runs {
    for command in commands {
      try daemon.waitUntil(probe, timeout: 10) { shielded($0) }
      try daemon.waitUntil(probe, timeout: 20) { !shielded($0) }
      let before = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").count
      try (command + "\n").write(toFile: dir + "/cmd.tmp", atomically: false, encoding: .utf8)
      rename(dir + "/cmd.tmp", dir + "/cmd")
      let deadline = monotonicNow() + 10
      var lines: [Substring] = []
      repeat {
        guard monotonicNow() < deadline else { throw BenchError("no answer from the recorder to \(command)") }
        sleepSeconds(0.002)
        lines = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n")
      } while lines.count <= before
      paths[command, default: []].append(Int(lines[before].split(separator: " ").last ?? "") ?? -1)
    }
  }
  await r.stop()
  var leaks: [String: Any] = [:]
  for command in commands {
    let px = paths[command]!
    let leaked = px.filter { $0 != 0 }.count
    leaks[command] = ["frames": px.count, "leaked": leaked, "secret_px": px]
    print("    first frame after idle, \(command): \(leaked) of \(px.count) leaked (secret px \(px))")
    rows.append(
      TableRow(
        row: "10 sit open", figure: "first frame, \(command) ms", value: "\(leaked)/\(px.count) leaked",
        target: "-", met: nil))
  }
  result["first_frame"] = leaks
  return (result, rows)
}

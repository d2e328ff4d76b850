// Row 1 (reaction per tool) and row 3 (the peer scanner), on the same tool runs.
//
// For every run the benchmark's own RECORD client (`Recorder`) gives the server's order of
// requests: the tool's capture requests (catalog requests that read pixels of a drawable the
// tool does not own) and the daemon's MapWindow of the shield. The daemon's shield connection
// is recognised by the CreateWindow whose parent is the secure window (cross-checked with the
// `_CAPTURE_SHIELD_SHIELDS` registry on the root).
import CXCB
import CaptureShield
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

struct CaptureTool {
  enum Kind {
    case external(String, [String])
    /// Core GetImage on the secure window, from a fresh connection of this process.
    case getImageWindow
    /// Composite RedirectWindow(Automatic) + NameWindowPixmap + GetImage on the pixmap.
    case compositePixmap
  }
  var name: String
  var kind: Kind
}

struct RunOutcome {
  var tool: String
  var toolOK: Bool
  /// Capture requests (reading foreign pixels) the server executed for the tool in the run.
  var captures = 0
  /// Of those, executed before the shield's MapWindow (all of them when no shield came).
  var beforeShield = 0
  var shielded = false
  /// Server ms from the tool's first capture request to the shield's MapWindow (negative:
  /// the shield was up before the first capture request).
  var reactionMs: Double?
  var firstCapture: String?
  /// Peer scanner: seconds from the tool's start to its sighting; nil: not noticed.
  var peerDelay: Double?
  var peerEligible = false
  var toolSeconds = 0.0

  var json: [String: Any] {
    var d: [String: Any] = [
      "tool_ok": toolOK, "captures": captures, "before_shield": beforeShield, "shielded": shielded,
      "tool_seconds": toolSeconds,
    ]
    if let r = reactionMs { d["reaction_ms"] = r }
    if let f = firstCapture { d["first_capture"] = f }
    if peerEligible { d["peer_noticed"] = peerDelay != nil }
    if let p = peerDelay { d["peer_delay_s"] = p }
    return d
  }
}

final class ReactionBench {
  let display: String
  let scratch: String
  let probe: XClient
  let secure: UInt32
  let secureSize: (UInt16, UInt16)
  let recorder: Recorder
  let scanner: PeerScanner
  private(set) var shieldWindows: Set<UInt32> = []
  private(set) var shieldBase: UInt32?
  private var scannedUpTo = 0

  init(
    display: String, scratch: String, probe: XClient, secure: UInt32, secureSize: (UInt16, UInt16),
    recorder: Recorder, scanner: PeerScanner
  ) {
    self.display = display
    self.scratch = scratch
    self.probe = probe
    self.secure = secure
    self.secureSize = secureSize
    self.recorder = recorder
    self.scanner = scanner
  }

  static func tools(display: String, scratch: String) -> (available: [CaptureTool], missing: [String]) {
    let wanted: [(String, String, [String])] = [
      ("xwd", "xwd", ["-root", "-silent", "-out", scratch + "/xwd.xwd"]),
      ("import", "import", ["-window", "root", scratch + "/import.png"]),
      (
        "ffmpeg", "ffmpeg",
        [
          "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "x11grab", "-framerate", "30", "-video_size",
          "640x480", "-i", display + ".0+0,0", "-frames:v", "3", "-f", "null", "-",
        ]
      ),
      ("scrot", "scrot", ["--overwrite", scratch + "/scrot.png"]),
      ("maim", "maim", [scratch + "/maim.png"]),
    ]
    var out: [CaptureTool] = []
    var missing: [String] = []
    for (name, exe, args) in wanted {
      if let path = findExecutable(exe, environment: ProcessInfo.processInfo.environment) {
        out.append(CaptureTool(name: name, kind: .external(path, args)))
      } else {
        missing.append(name)
      }
    }
    out.append(CaptureTool(name: "getimage-window", kind: .getImageWindow))
    out.append(CaptureTool(name: "composite-pixmap", kind: .compositePixmap))
    return (out, missing)
  }

  /// Learns shield windows from the records: CreateWindow with the secure window as parent.
  func updateShields() {
    let recs = recorder.slice(scannedUpTo)
    for r in recs where r.kind == .request && r.major == Recorder.coreCreateWindow && r.field8 == secure {
      shieldWindows.insert(r.field4)
      shieldBase = r.base
    }
    scannedUpTo += recs.count
  }

  /// The registry agrees: every (shield, target) pair for our window names a shield we saw
  /// created, by the connection we attributed it to.
  func registryAgrees() -> Bool? {
    let pairs = readShieldRegistry(probe).filter { $0.target == secure }
    guard !pairs.isEmpty else { return nil }
    return pairs.allSatisfy { shieldWindows.contains($0.shield) && probe.base(of: $0.shield) == shieldBase }
  }

  /// Waits until no shield is up and no capture is live (the daemon's `_CAPTURE_SHIELD_CAPTURING`
  /// is 0 and the last shield MapWindow since `since` was followed by an UnmapWindow).
  func waitForShieldDown(since: Int, exitAt: Double, timeout: Double = 10) throws {
    let capturing = probe.atom("_CAPTURE_SHIELD_CAPTURING")
    while true {
      let end = try recorder.mark()
      updateShields()
      var lastMap = -1
      var lastUnmap = -1
      for (k, r) in recorder.slice(since, end).enumerated()
      where r.kind == .request && shieldWindows.contains(r.field4) {
        if r.major == Recorder.coreMapWindow { lastMap = k }
        if r.major == Recorder.coreUnmapWindow { lastUnmap = k }
      }
      let live = (probe.cardinals(probe.root, capturing).first ?? 0) != 0
      let elapsed = monotonicNow() - exitAt
      if !live && (lastMap >= 0 ? lastUnmap > lastMap : elapsed > 1.0) { return }
      if elapsed > timeout { throw BenchError("the shield did not come down within \(timeout) s of the tool's exit") }
      sleepSeconds(0.01)
    }
  }

  func run(_ tool: CaptureTool) throws -> RunOutcome {
    var out = RunOutcome(tool: tool.name, toolOK: false)
    let i0 = try recorder.mark()
    let t0 = monotonicNow()
    var pid: Int32?
    switch tool.kind {
    case .external(let path, let args):
      var environment = ProcessInfo.processInfo.environment
      environment["DISPLAY"] = display
      let child = try ChildProcess(path, args, environment: environment)
      pid = child.pid
      // Polled every 0.2 ms, so the exit is reaped at once; killed after 30 s.
      let status =
        child.waitBlocking(timeout: .seconds(30), pollInterval: .microseconds(200))
        ?? child.terminateBlocking(grace: .seconds(2))
      out.toolOK = status == .exited(0)
    case .getImageWindow:
      let c = try XClient(display: display)
      let ck = xcb_get_image(
        c.conn, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), secure, 0, 0, secureSize.0, secureSize.1, ~0)
      if let r = xcb_get_image_reply(c.conn, ck, nil) {
        out.toolOK = true
        free(r)
      }
    case .compositePixmap:
      let c = try XClient(display: display)
      if let v = xcb_composite_query_version_reply(c.conn, xcb_composite_query_version(c.conn, 0, 4), nil) { free(v) }
      xcb_composite_redirect_window(c.conn, secure, UInt8(XCB_COMPOSITE_REDIRECT_AUTOMATIC.rawValue))
      let pm = c.id()
      xcb_composite_name_window_pixmap(c.conn, secure, pm)
      let ck = xcb_get_image(
        c.conn, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), pm, 0, 0, secureSize.0, secureSize.1, ~0)
      if let r = xcb_get_image_reply(c.conn, ck, nil) {
        out.toolOK = true
        free(r)
      }
      xcb_free_pixmap(c.conn, pm)
      c.sync()
    }
    let exitAt = monotonicNow()
    out.toolSeconds = exitAt - t0
    try waitForShieldDown(since: i0, exitAt: exitAt)
    let end = try recorder.mark()
    updateShields()

    // The server's order of events in the run.
    var toolBases: Set<UInt32> = []
    var firstCaptureTime: UInt32?
    var mapTime: UInt32?
    for r in recorder.slice(i0, end) {
      switch r.kind {
      case .started:
        if r.base != recorder.probeBase { toolBases.insert(r.base) }
      case .died:
        break
      case .request:
        if mapTime == nil, r.major == Recorder.coreMapWindow, shieldWindows.contains(r.field4), r.base == shieldBase {
          mapTime = r.time
        }
        guard toolBases.contains(r.base), let kind = r.capture else { continue }
        out.captures += 1
        if mapTime == nil { out.beforeShield += 1 }
        if firstCaptureTime == nil {
          firstCaptureTime = r.time
          out.firstCapture = kind
        }
      }
    }
    out.shielded = mapTime != nil
    if let m = mapTime, let f = firstCaptureTime { out.reactionMs = Double(Int64(m) - Int64(f)) }
    if let pid {
      out.peerEligible = true
      if let s = scanner.firstSeen(pid: pid, from: t0 - 0.001, to: exitAt + 0.001) { out.peerDelay = s.at - t0 }
    }
    return out
  }
}

/// `shieldbench getimage-first DISPLAY WINDOW WIDTH HEIGHT`: connects and sends GetImage of
/// the window as its very first request (the hardest case for the quarantine). Exit 0 when
/// the image came back.
func getImageFirst(_ args: [String]) -> Int32 {
  guard args.count == 4, let w = UInt32(args[1]), let width = UInt16(args[2]), let height = UInt16(args[3]) else {
    return 64
  }
  guard let c = xcb_connect(args[0], nil), xcb_connection_has_error(c) == 0 else { return 1 }
  defer { xcb_disconnect(c) }
  let ck = xcb_get_image(c, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), w, 0, 0, width, height, ~0)
  guard let r = xcb_get_image_reply(c, ck, nil) else { return 1 }
  free(r)
  return 0
}

/// Row 1 and row 3: one daemon per policy, `runs` rounds over every tool (round-robin).
func runReactionBenchmark(
  display: String, scratch: String, shieldctl: String, runs: Int, table: inout [TableRow]
) throws -> [String: Any] {
  let probe = try XClient(display: display)
  let app = try XClient(display: display)
  let size: (UInt16, UInt16) = (400, 300)
  let secure = app.appWindow(
    x: 200, y: 150, width: size.0, height: size.1, color: 0xFF0000, title: "Bench secret", wmClass: "BenchSecret",
    secure: true)
  app.sync()
  let recorder = try Recorder(display: display, probe: probe)
  defer { recorder.stop() }
  let scanner = PeerScanner(interval: 1)
  scanner.start()
  defer { scanner.stop() }
  let bench = ReactionBench(
    display: display, scratch: scratch, probe: probe, secure: secure, secureSize: size, recorder: recorder,
    scanner: scanner)
  let (found, missing) = ReactionBench.tools(display: display, scratch: scratch)

  var tools = found
  // A client whose first request is GetImage, as a process of its own (the in-process
  // getimage-window client connects without a launch the daemon could see).
  if let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
    tools.append(
      CaptureTool(
        name: "getimage-process",
        kind: .external(me, ["getimage-first", display, String(secure), String(size.0), String(size.1)])))
  }

  let modes: [(key: String, label: String, policy: String)] = [
    ("linger", "linger 300ms", "{ version: 1, capture: { linger: \"300ms\", learn: false } }\n"),
    (
      "quarantine", "quarantine 300ms",
      "{ version: 1, capture: { linger: \"300ms\", quarantine: \"300ms\", learn: false } }\n"
    ),
    (
      "connect", "quarantine 300ms from connection only",
      "{ version: 1, capture: { linger: \"300ms\", quarantine: \"300ms\", quarantineOnLaunch: false, learn: false } }\n"
    ),
  ]
  var result: [String: Any] = ["runs_per_tool": runs, "missing_tools": missing]
  var outcomes: [String: [String: [RunOutcome]]] = [:]
  var registryOK: [String: Bool] = [:]
  for mode in modes {
    let policyPath = scratch + "/policy-\(mode.key).json5"
    try writePolicy(mode.policy, to: policyPath)
    let startIndex = try recorder.mark()
    let daemon = try DaemonProcess(
      shieldctl: shieldctl, display: display, policy: policyPath, logPath: scratch + "/daemon-\(mode.key).log")
    defer { daemon.stop() }
    try daemon.waitUntil(probe) { s in
      s.windows.contains { $0.id == secure && $0.secure } && s.sessions.isEmpty && !s.shieldsActive
    }
    // And from the server's side: with quarantine on, the daemon quarantines the clients it
    // finds at start-up (ours), and a first run inside that window would find the shield
    // already up and count as "no shield came".
    try bench.waitForShieldDown(since: startIndex, exitAt: monotonicNow())
    sleepSeconds(0.2)
    var byTool: [String: [RunOutcome]] = [:]
    for _ in 0..<runs {
      for tool in tools { byTool[tool.name, default: []].append(try bench.run(tool)) }
    }
    outcomes[mode.key] = byTool
    registryOK[mode.key] = bench.registryAgrees() ?? false
    daemon.stop()
  }

  // Report.
  func fmt(_ v: Double?, _ digits: Int = 0) -> String { v.map { String(format: "%.\(digits)f", $0) } ?? "-" }
  print("\nreaction per tool (server ms from the tool's first capture request to the shield's MapWindow;")
  print("negative: the shield was up before it; requests = capture requests executed before the shield)")
  print(
    "  tool              | linger: median  worst  req.med req.worst shielded | quarantine: median  worst  0-before | at connect: 0-before | peer: noticed  delay"
  )
  for tool in tools {
    let l = outcomes["linger"]?[tool.name] ?? []
    let q = outcomes["quarantine"]?[tool.name] ?? []
    let qc = outcomes["connect"]?[tool.name] ?? []
    let zeroC = qc.filter { $0.beforeShield == 0 && $0.captures > 0 }.count
    let lr = l.compactMap(\.reactionMs)
    let qr = q.compactMap(\.reactionMs)
    let lb = l.map { Double($0.beforeShield) }
    let zeroQ = q.filter { $0.beforeShield == 0 && $0.captures > 0 }.count
    let all = l + q + qc
    let eligible = all.filter(\.peerEligible)
    let peerDelays = eligible.compactMap(\.peerDelay)
    var summary: [String: Any] = [
      "linger_reaction_median_ms": jsonValue(median(lr)), "linger_reaction_worst_ms": jsonValue(lr.max()),
      "linger_before_shield_median": jsonValue(median(lb)), "linger_before_shield_worst": jsonValue(lb.max()),
      "linger_shielded_runs": l.filter(\.shielded).count, "linger_runs": l.count,
      "linger_tool_failures": l.filter { !$0.toolOK }.count,
      "quarantine_reaction_median_ms": jsonValue(median(qr)), "quarantine_reaction_worst_ms": jsonValue(qr.max()),
      "quarantine_zero_before_runs": zeroQ, "quarantine_runs": q.count,
      "quarantine_before_shield_worst": jsonValue(q.map(\.beforeShield).max()),
      "quarantine_tool_failures": q.filter { !$0.toolOK }.count,
      "first_capture_request": jsonValue(l.compactMap(\.firstCapture).first),
      "linger_run_details": l.map(\.json), "quarantine_run_details": q.map(\.json),
      "connect_zero_before_runs": zeroC, "connect_runs": qc.count,
      "connect_tool_failures": qc.filter { !$0.toolOK }.count, "connect_run_details": qc.map(\.json),
    ]
    if !eligible.isEmpty {
      summary["peer_noticed_runs"] = peerDelays.count
      summary["peer_eligible_runs"] = eligible.count
      summary["peer_delay_median_s"] = jsonValue(median(peerDelays))
    } else {
      summary["peer_noticed_runs"] = 0
      summary["peer_note"] = "in-process client of shieldbench: no recorder process name to find"
    }
    result[tool.name] = summary
    let peerText =
      eligible.isEmpty
      ? "0/\(all.count) (no process)" : "\(peerDelays.count)/\(eligible.count)  \(fmt(median(peerDelays), 2)) s"
    print(
      "  "
        + tool.name.padding(toLength: 17, withPad: " ", startingAt: 0)
        + " | \(fmt(median(lr)).leftPad(13)) \(fmt(lr.max()).leftPad(6)) \(fmt(median(lb), 1).leftPad(7)) \(fmt(lb.max()).leftPad(9)) \("\(l.filter(\.shielded).count)/\(l.count)".leftPad(8))"
        + " | \(fmt(median(qr)).leftPad(18)) \(fmt(qr.max()).leftPad(6)) \("\(zeroQ)/\(q.count)".leftPad(9))"
        + " | \("\(zeroC)/\(qc.count)".leftPad(20))"
        + " | \(peerText)")

    let before = "median \(fmt(median(lb), 1)), worst \(fmt(lb.max()))"
    let isFF = tool.name == "ffmpeg"
    table.append(
      TableRow(
        row: "1 reaction", figure: "\(tool.name): first capture -> shield (median / worst)",
        value: "\(fmt(median(lr))) / \(fmt(lr.max())) ms", target: "-", met: nil))
    table.append(
      TableRow(
        row: "1 reaction", figure: "\(tool.name): capture requests before shield", value: before,
        target: isFF ? "0" : "-", met: isFF ? (lb.max() ?? 1) == 0 : nil))
    table.append(
      TableRow(
        row: "1 quarantine", figure: "\(tool.name): runs with 0 requests before shield",
        value:
          "\(zeroQ)/\(q.count) (reaction median \(fmt(median(qr))) ms); from connection only: \(zeroC)/\(qc.count)",
        target: "-", met: nil))
    table.append(
      TableRow(
        row: "3 peer", figure: "\(tool.name): scanner noticed (median delay)",
        value: eligible.isEmpty
          ? "0/\(all.count) (in-process, no name)"
          : "\(peerDelays.count)/\(eligible.count) (\(fmt(median(peerDelays), 2)) s)",
        target: "-", met: nil))
  }
  result["shield_connection_matches_registry"] = registryOK
  result["peer_scans"] = scanner.scans
  result["recorder_malformed"] = recorder.malformed
  if !missing.isEmpty { print("  (not installed, skipped: \(missing.joined(separator: ", ")))") }
  print("  shield connection from CreateWindow(parent = secure window) matches _CAPTURE_SHIELD_SHIELDS: \(registryOK)")
  return result
}

extension String {
  func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}

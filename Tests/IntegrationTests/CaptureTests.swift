// Capture detection on a real Xvfb: real tools are detected through RECORD, identified
// through X-Resource, and the tagged secret window is shielded while they capture.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Capture detection", .timeLimit(.minutes(6)))
struct CaptureTests {
  static let red = RGB.red
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  static let capturingPolicy = "{version: 1, capture: {linger: \"3s\"}}"

  /// The executable each method runs as (in-process methods run as the test binary).
  static func exeName(_ m: CaptureMethod) -> String? {
    switch m {
    case .xwdRoot, .xwdWindow: "xwd"
    case .importRoot: "import"
    case .ffmpeg: "ffmpeg"
    case .scrot: "scrot"
    case .maim: "maim"
    case .getImageRoot, .getImageWindow, .compositePixmap: nil
    }
  }

  @Test("with no capture running, a tagged window is not shielded")
  func idleMeansUnshielded() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: Self.capturingPolicy)
    try await daemon.waitUntilCaughtUp(retitling: window)
    let state = try #require(try daemon.state())
    #expect(!state.capturing)
    #expect(state.windows.first { $0.id == window.id }?.secure == true)
    #expect(!daemon.isShielded(window.id))
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test(
    "each capture tool is detected, identified and held off the secret after its first frame",
    arguments: [
      CaptureMethod.xwdRoot, .importRoot, .ffmpeg, .maim, .scrot, .getImageWindow, .compositePixmap,
    ])
  func toolIsDetected(_ method: CaptureMethod) async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: Self.capturingPolicy)

    // First run: a one-shot tool may get its first frame (detection, not prevention);
    // ffmpeg is a known capturer and is shielded from before its first frame.
    let first = try await method.capture(window: window.id, on: server, ffmpegFrames: 20)
    let firstCounts = first.counts(of: Self.red)
    if method == .ffmpeg {
      #expect(firstCounts.allSatisfy { $0 == 0 }, "ffmpeg frames with secret pixels: \(firstCounts)")
    } else {
      #expect(firstCounts.dropFirst().allSatisfy { $0 == 0 })
    }
    // Detected and identified.
    try await waitUntil("a capture-request audit record", timeout: .seconds(5)) {
      !daemon.auditEvents("capture-request").isEmpty
    }
    let request = try #require(daemon.auditEvents("capture-request").first)
    if let exe = Self.exeName(method) {
      let recorded = try #require(request["exe"] as? String, "\(request)")
      #expect(recorded.hasSuffix("/" + exe) || recorded.contains(exe), "\(request)")
    } else {
      // An in-process client can connect, capture and disconnect within a millisecond or
      // two; when it is gone before the daemon's X-Resource lookup, the record says why
      // the identity is unknown (and unknown identity still counts as capturing).
      let identified = request["pid"] as? Int == Int(getpid())
      #expect(identified || request["identity"] != nil, "\(request)")
    }
    // Shielded while the session lingers (the state is published within ~50 ms).
    try await daemon.waitShielded(window.id, true, timeout: .seconds(5))
    // Within the session, every frame of the same tool is clean.
    let second = try await method.capture(window: window.id, on: server, ffmpegFrames: 10)
    let secondCounts = second.counts(of: Self.red)
    #expect(secondCounts.allSatisfy { $0 == 0 }, "\(method) second run: \(secondCounts)")
    // Shields drop `linger` (3 s) after the last request / exit.
    try await daemon.waitShielded(window.id, false, timeout: .seconds(10))
    #expect(!daemon.auditEvents("session-end").isEmpty)
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("status and clients show a recording client with its executable")
  func statusShowsRecorder() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: Self.capturingPolicy)
    let ffmpeg = try server.startBackground(
      "ffmpeg",
      ["-loglevel", "error", "-f", "x11grab", "-framerate", "10", "-i", server.display, "-t", "4", "-f", "null", "-"])
    try await waitUntil("capturing", timeout: .seconds(5)) { (try? daemon.state())??.capturing == true }
    let clients = try await Shieldctl.run(["clients", "--json"], on: server)
    #expect(clients.stdoutText.contains("/usr/bin/ffmpeg"), "\(clients.stdoutText)")
    let status = try await Shieldctl.run(["status"], on: server)
    #expect(status.stdoutText.contains("ffmpeg"), "\(status.stdoutText)")
    _ = try await ffmpeg.waitForExit(timeout: .seconds(15))
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("a capture tool listed in capture.allow triggers nothing")
  func allowedToolTriggersNothing() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {allow: [{exe: \"*/xwd\"}], linger: \"3s\"}}")
    for _ in 0..<3 {
      let counts = try await CaptureMethod.xwdRoot.capture(window: window.id, on: server).counts(of: Self.red)
      #expect(counts == [200 * 150])
    }
    // The daemon has seen each run's capture request (and decided on it in the same step).
    try await waitUntil("the daemon audits the 3 runs' capture requests", timeout: .seconds(10)) {
      daemon.auditEvents("capture-request").count >= 3
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(daemon.auditEvents("session-start").isEmpty)
    #expect(!daemon.isShielded(window.id))
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test(
    "with capture.quarantine on, one-shot tools' first frames leak at most 3 runs in 10 (a measured race)",
    arguments: [CaptureMethod.xwdRoot, .importRoot, .maim, .scrot])
  func quarantineStopsOneShotTools(_ method: CaptureMethod) async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {linger: \"200ms\", quarantine: \"300ms\"}}")
    var leaks: [String] = []
    for run in 0..<10 {
      // Start from an unshielded window each time.
      try await daemon.waitShielded(window.id, false, timeout: .seconds(10))
      let before = daemon.audit.count
      let counts = try await method.capture(window: window.id, on: server).counts(of: Self.red)
      if counts.contains(where: { $0 > 0 }) {
        // What the daemon did around it (times, launches, sessions), for the diagnosis.
        let records = daemon.audit.dropFirst(before).prefix(12).map { r in
          ["time", "event", "why", "program", "kind", "window", "seconds", "exe"].compactMap { k in
            r[k].map { "\(k)=\($0)" }
          }.joined(separator: " ")
        }
        leaks.append("run \(run): \(counts) — daemon: \(records)")
      }
    }
    // The quarantine starts when the tool's process starts (`quarantineOnLaunch`, on by
    // default): the exec of an X client program from the program directories, else its
    // loading libxcb, both before it can connect; the RECORD thread maps the armed shields
    // then, and again at ClientStarted. It stays a race (the machine must run that thread
    // within the few milliseconds the tool needs to load and connect: docs/security.md, Known
    // limitations), measured at 1 first frame in 2,000 idle and 1 in 320 with both vCPUs
    // busy (1 % with the libxcb watch alone); `BENCH_ONLY=quarantine-rate shieldbench`
    // measures it. On a machine loaded by parallel compiles (load ~5 on 2 vCPUs) xwd leaked
    // 1 of 10 here and 2 of 25 in the bench (~8 %). So this test bounds it instead of
    // asserting 0: at most 3 leaking first frames of 10 per tool. 4 or more happen at 8 %
    // once in ~170 runs of this test per tool, at 1 % once in ~500,000; without quarantine
    // all 10 leak. Every leaking run is printed with the daemon's records around it.
    // Our own unshield seen after the next quarantine had mapped the shield again once
    // looked like tampering and made the shield flap: nobody tampers here.
    #expect(daemon.auditEvents("shield-tampered").isEmpty, "\(daemon.auditEvents("shield-tampered").prefix(3))")
    let dark = daemon.auditEvents("session-end").filter { $0["kind"] as? String == "quarantine" }
      .compactMap { $0["seconds"] as? Double }.sorted()
    let median = dark.isEmpty ? 0 : dark[dark.count / 2]
    // Launches (processes loading libxcb) hold the shields from the open until their
    // client is identified: that comes on top of the client's own quarantine.
    let launches = daemon.auditEvents("launch-end")
    let matched = launches.filter { $0["why"] as? String == "client identified" }
    let held = matched.compactMap { $0["seconds"] as? Double }.sorted()
    // Matched launches seen as the start of the tool's own program (not only its libxcb open).
    let programStarts = matched.filter { l in
      guard let program = l["program"] as? String, let exe = l["exe"] as? String else { return false }
      return exe.hasSuffix("/" + program)
    }.count
    let heldMedian = held.isEmpty ? 0 : held[held.count / 2]
    print(
      "quarantine \(method): \(leaks.count) of 10 first frames leaked (at most 3 allowed) \(leaks);"
        + " \(programStarts) of \(held.count) matched launches seen as the program's start (at least 5"
        + " required); secure windows dark per client launch:"
        + " median \(Int(median * 1000)) ms over \(dark.count) quarantines, plus from the launch: median"
        + " \(Int(heldMedian * 1000)) ms over \(held.count) matched launches, \(programStarts) of them seen as"
        + " the program's start (\(launches.count - held.count) launches without a client of ours, held for"
        + " the full quarantine)")
    #expect(leaks.count <= 3, "\(method) leaked in \(leaks.count) of 10 runs (at most 3 allowed): \(leaks)")
    // The launch watch saw the tool start: the runs' processes were matched to launches
    // seen as their program's start (10 of 10 with the release binary; one the pump reads
    // only after the tool's ClientStarted is not matched and simply holds the shields for
    // the whole quarantine, and runs before the daemon's background scan of the program
    // directories is done are seen at their libxcb open).
    #expect(programStarts >= 5, "\(programStarts) of \(held.count) matched launches seen as the program's start")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  /// `capture.quarantineOnLaunch`: the daemon watches libxcb with inotify, so a process
  /// that loads it shields the secure windows before it can even connect. Here ffmpeg, of
  /// this display, encodes a generated picture to nothing: it loads libxcb (through
  /// libavdevice) and never connects, so only the launch watch can have put the shield up
  /// (and, no client coming, the launch ends with the quarantine duration). Off, the same
  /// launch does nothing. Launches that cannot be clients of this display end at once
  /// (`launchOfAnotherDisplayOrOurCLI`).
  @Test(
    "with capture.quarantineOnLaunch, a process loading libxcb shields secure windows before it connects",
    arguments: [true, false])
  func quarantineStartsAtLaunch(_ onLaunch: Bool) async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server,
      policy: "{version: 1, capture: {quarantine: \"1500ms\", quarantineOnLaunch: \(onLaunch)}}")
    // One connection for every look at the state (a new connection per look is a client
    // and would start a quarantine of its own).
    let observer = try XControl(display: server.display)
    func shielded() throws -> Bool {
      (try observer.readState())?.windows.first { $0.id == window.id }?.shielded ?? false
    }
    try await waitUntil("the observer's own quarantine is over", timeout: .seconds(10)) { try !shielded() }
    if onLaunch {
      // The daemon scans the program directories for X client programs in the background.
      try await waitUntil("the program scan found xwd's directory's X clients", timeout: .seconds(20)) {
        let line =
          try await Shieldctl.run(["status"], on: server).stdoutText.split(separator: "\n")
          .first { $0.contains("launches") } ?? ""
        return line.contains("X client program") && !line.contains("starts of 0 ")
      }
      try await waitUntil("the status runs' own quarantines are over", timeout: .seconds(10)) { try !shielded() }
    }
    let t0 = ContinuousClock.now
    let ffmpeg = try server.startBackground(
      "/usr/bin/ffmpeg",
      ["-nostdin", "-loglevel", "quiet", "-re", "-f", "lavfi", "-i", "nullsrc=s=16x16:d=3", "-f", "null", "-"])
    var sawShield = false
    while ContinuousClock.now - t0 < .milliseconds(1000) {
      if try shielded() {
        sawShield = true
        break
      }
      try await Task.sleep(for: .milliseconds(5))
    }
    #expect(sawShield == onLaunch)
    if onLaunch {
      try await waitUntil("the launch ends with the quarantine duration", timeout: .seconds(5)) { try !shielded() }
      let held = ContinuousClock.now - t0
      #expect(held >= .milliseconds(1400), "shield held \(held)")
      let ended = daemon.auditEvents("launch-end").filter { $0["why"] as? String == "no client connected" }
      #expect(!ended.isEmpty, "\(daemon.auditEvents("launch-end"))")
      print("quarantineOnLaunch: shield up \(held) for a launch that never connected (quarantine 1500 ms)")
    }
    _ = try await ffmpeg.waitForExit()
    // `status` says whether launches are watched, and which library.
    let status = try await Shieldctl.run(["status"], on: server)
    let line = status.stdoutText.split(separator: "\n").first { $0.contains("launches") }.map(String.init) ?? ""
    #expect(
      onLaunch
        ? line.contains("watched (opens of") && line.contains("libxcb.so") && line.contains("X client programs in ")
          && line.contains("/usr/bin")
        : line.contains("not watched"),
      "\(status.stdoutText)")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  /// With `capture.quarantineOnLaunch`, the launch of a program pointed
  /// at another display (xwd, `DISPLAY=:999`) ends as soon as the daemon has looked at the
  /// process (it names another display, or it has exited), not after the quarantine
  /// duration; and `shieldctl status`, the daemon's own program, starts no quarantine with
  /// its connection (the one the pump puts up before the client is known ends when it is).
  @Test("with capture.quarantineOnLaunch, launches for another display and shieldctl's connections end at once")
  func launchOfAnotherDisplayOrOurCLI() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {quarantine: \"1500ms\", quarantineOnLaunch: true}}")
    // Wait for the program scan to know xwd (then its start is a launch named "xwd").
    try await waitUntil("the program scan found xwd's directory's X clients", timeout: .seconds(20)) {
      let line =
        try await Shieldctl.run(["status"], on: server).stdoutText.split(separator: "\n")
        .first { $0.contains("launches") } ?? ""
      return line.contains("X client program") && !line.contains("starts of 0 ")
    }
    let xwd = try await runCommand(
      "/usr/bin/xwd", ["-root", "-silent", "-out", "/dev/null"], environment: ["DISPLAY": ":999"])
    #expect(String(decoding: xwd.stderr, as: UTF8.self).contains("unable to open display"), "\(xwd.stderr)")
    // Positive marker: the launch's end is audited (at once here; after 1.5 s on a daemon
    // that waits for a client).
    try await waitUntil("xwd's launch ends", timeout: .seconds(10)) {
      daemon.auditEvents("launch-end").contains { $0["program"] as? String == "xwd" }
    }
    let xwdEnds = daemon.auditEvents("launch-end").filter { $0["program"] as? String == "xwd" }
    #expect(
      xwdEnds.allSatisfy { ["another display", "process exited"].contains($0["why"] as? String ?? "") }, "\(xwdEnds)")
    // shieldctl's own connections (the status runs above): each quarantine ends when the
    // client is identified as the daemon's own program, none lasts until its exit.
    let shieldctl = URL(fileURLWithPath: Shieldctl.path).resolvingSymlinksInPath().path
    let ours = daemon.auditEvents("session-end").filter {
      $0["kind"] as? String == "quarantine" && ($0["exe"] as? String) == shieldctl
    }
    #expect(!ours.isEmpty, "\(daemon.auditEvents("session-end"))")
    #expect(ours.allSatisfy { $0["why"] as? String == "the daemon's own program" }, "\(ours)")
    print(
      "launches: xwd for :999 ended by \(xwdEnds.map { $0["why"] ?? "?" }) after \(xwdEnds.map { $0["seconds"] ?? "?" }) s; shieldctl quarantines ended: \(ours.map { $0["why"] ?? "?" })"
    )
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("a compositor is named in status; allowed, it triggers nothing, and tools are still detected")
  func compositorAllowed() async throws {
    let server = try await XvfbServer.start()
    let picom = try await server.startCompositor()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {allow: [{exe: \"*/picom\"}], linger: \"3s\"}}")
    try await waitUntil("the daemon names the compositor", timeout: .seconds(10)) {
      try daemon.state()?.compositor != nil
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    let state = try #require(try daemon.state())
    #expect(state.compositor?.exe?.hasSuffix("picom") == true, "\(String(describing: state.compositor))")
    #expect(!state.capturing)
    #expect(!daemon.isShielded(window.id))
    let status = try await Shieldctl.run(["status"], on: server)
    #expect(status.stdoutText.contains("picom"), "\(status.stdoutText)")
    // A real tool is still detected and held off after its first frame.
    _ = try await CaptureMethod.xwdRoot.capture(window: window.id, on: server)
    try await daemon.waitShielded(window.id, true, timeout: .seconds(5))
    try await waitUntil("picom repaints the shield", timeout: .seconds(5)) {
      try await CaptureMethod.xwdRoot.capture(window: window.id, on: server).counts(of: Self.red) == [0]
    }
    #expect(
      try await CaptureMethod.ffmpeg.capture(window: window.id, on: server).counts(of: Self.red).allSatisfy { $0 == 0 })
    await daemon.stop()
    window.close()
    _ = await picom.stop()
    await server.stop()
  }

  @Test("a compositor that is not allowed (nor in capture.compositors) keeps a capture session")
  func compositorNotAllowed() async throws {
    let server = try await XvfbServer.start()
    let picom = try await server.startCompositor()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: Self.red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {linger: \"3s\", replaceDefaultCompositors: true}}")
    try await daemon.waitShielded(window.id, true, timeout: .seconds(5))
    #expect(try daemon.state()?.sessions.contains { $0.kind == .compositor } == true)
    await daemon.stop()
    window.close()
    _ = await picom.stop()
    await server.stop()
  }

  @Test("secure windows opened while ffmpeg records appear in none of its frames (on a desktop with a window manager)")
  func windowOpenedDuringRecording() async throws {
    // With a window manager, as on a real desktop, a new window is mapped through
    // MapRequest and reparenting, and its shield (put up at CreateNotify) is there first.
    // Without one, an app that maps in the same batch can win by ~1 ms: see docs/security.md,
    // Known limitations.
    let server = try await XvfbServer.start()
    let wm = try await server.startWindowManager()
    let daemon = try await DaemonProcess.start(on: server, policy: Self.capturingPolicy)
    let recording = Task { try await Capture.ffmpegFrames(on: server, count: 40, frameRate: 20) }
    try await waitUntil("capturing", timeout: .seconds(5)) { (try? daemon.state())??.capturing == true }
    var windows: [TestWindow] = []
    for i in 0..<5 {
      windows.append(
        try await TestWindow.open(
          on: server, rect: PixelRect(x: 60 + i * 150, y: 80 + i * 90, width: 140, height: 100), color: Self.red,
          secure: true))
      try await Task.sleep(for: .milliseconds(150))
    }
    let frames = try await recording.value
    let counts = frames.map { $0.count(of: (255, 0, 0)) }
    #expect(frames.count >= 20)
    #expect(counts.allSatisfy { $0 == 0 }, "red pixels per frame: \(counts)")
    for w in windows { w.close() }
    await daemon.stop()
    _ = await wm.stop()
    await server.stop()
  }
}

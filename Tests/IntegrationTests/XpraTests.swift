// xpra shadow with the client-side daemon: xpra is a python script, so
// its X connection is `python3 /usr/bin/xpra shadow :N`, and the daemon used to name it
// `python3.11` and not know it: its first screenshot leaked every time. The default known
// list now has `*/xpra`, matched against the script an interpreter runs, so the daemon holds
// the shield up from xpra's connection, before any capture request.
//
// Each run starts a fresh `xpra shadow` (no daemon mode, its own socket in a temporary
// directory, the optional subsystems off), waits until it is ready, takes `xpra screenshot`
// over its socket and counts the secret (red) pixels of the PNG; then stops it and waits
// until its sessions have ended and the shield is down. The positive control is the same
// with `capture.replaceDefaultKnown` (xpra is not known): the first screenshot gets the secret.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

/// A running `xpra shadow DISPLAY` bound to a unix socket in a temporary directory.
final class XpraShadow: Sendable {
  let process: BackgroundProcess
  let directory: String
  let environment: [String: String]
  var socket: String { directory + "/xpra.socket" }

  /// Starts `xpra shadow` on `server`'s display and waits until it logs "xpra is ready."
  ///
  /// Debian's /etc/xpra/conf.d/60_server.conf has `start = /etc/X11/Xsession true`: every
  /// server, shadow included, runs the X session script, which here maps an xmessage
  /// window (over the middle of the screen) and outlives xpra. A system configuration
  /// directory of the test's own (`XDG_CONFIG_DIRS`, read after /etc/xpra) sets `start`
  /// to nothing. The command line turns off what a screenshot does not need.
  static func start(on server: XvfbServer, timeout: Duration = .seconds(60)) async throws -> XpraShadow {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-xpra")
    try FileManager.default.createDirectory(atPath: directory + "/conf/xpra", withIntermediateDirectories: true)
    try "start =\n".write(toFile: directory + "/conf/xpra/xpra.conf", atomically: true, encoding: .utf8)
    var environment = server.environment
    environment["XDG_CONFIG_DIRS"] = directory + "/conf"
    let arguments = [
      "shadow", server.display, "--daemon=no", "--socket-dirs=" + directory, "--bind=" + directory + "/xpra.socket",
      "--log-dir=" + directory, "--mdns=no", "--html=off", "--notifications=no", "--pulseaudio=no",
      "--speaker=disabled", "--microphone=disabled", "--av-sync=no", "--webcam=no", "--printing=no",
      "--file-transfer=no", "--clipboard=no", "--bell=no", "--system-tray=no", "--tray=no", "--cursors=no",
      "--xsettings=no", "--dbus-proxy=no", "--dbus-control=no", "--dbus-launch=", "--systemd-run=no",
      "--start-via-proxy=no", "--opengl=no", "--ssh-upgrade=no",
    ]
    let process = try BackgroundProcess("xpra", arguments, environment: environment)
    let xpra = XpraShadow(process: process, directory: directory, environment: environment)
    try await waitUntil("xpra shadow is ready", timeout: timeout, interval: .milliseconds(50)) {
      guard process.isRunning else {
        let result = await process.stop()
        throw ProcessError.io("xpra shadow exited: \(result)")
      }
      return xpra.log.contains("xpra is ready.")
    }
    return xpra
  }

  private init(process: BackgroundProcess, directory: String, environment: [String: String]) {
    self.process = process
    self.directory = directory
    self.environment = environment
  }

  deinit { removeTree(directory) }

  /// What it logged so far (stdout and stderr).
  var log: String {
    String(decoding: process.stdout, as: UTF8.self) + String(decoding: process.stderr, as: UTF8.self)
  }

  /// `xpra screenshot FILE socket://SOCKET`, decoded.
  func screenshot(_ name: String) async throws -> RGBImage {
    let file = directory + "/" + name + ".png"
    let result = try await runCommand(
      "xpra", ["screenshot", file, "socket://" + socket], environment: environment, timeout: .seconds(60))
    guard result.succeeded, FileManager.default.fileExists(atPath: file) else {
      throw ProcessError.io("xpra screenshot failed: \(result)\nxpra shadow's log:\n\(log)")
    }
    return try await Capture.convertToPPM(file, format: "png", environment: environment)
  }

  /// SIGTERM (xpra exits cleanly and removes its socket), then SIGKILL after `grace`.
  @discardableResult
  func stop() async -> CommandResult { await process.stop(grace: .seconds(10)) }
}

@Suite("xpra shadow with the client-side daemon", .serialized, .timeLimit(.minutes(8)))
struct XpraTests {
  static let rect = PixelRect(x: 120, y: 100, width: 400, height: 260)
  static let runs = 5

  /// What the runs of one policy saw.
  struct Runs {
    /// Secret pixels in each run's first screenshot.
    var secret: [Int] = []
    /// Each run's xpra shadow pid.
    var pids: [Int] = []
    /// The audit records of the daemon.
    var audit: [[String: Any]] = []
  }

  /// On a new Xvfb with the red secure window and the daemon running `policy`, `runs` times:
  /// a fresh xpra shadow, its first screenshot, xpra stopped, its sessions ended, the shield
  /// down. Prints each run's timings and secret pixels.
  static func screenshots(policy: String, runs: Int, name: String) async throws -> Runs {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: policy)
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    var result = Runs()
    for run in 1...runs {
      // Each run starts with the shield down and no session: the screenshot is xpra's first.
      try await waitUntil("\(name) run \(run): no session, the shield down", timeout: .seconds(20)) {
        try daemon.state()?.sessions.isEmpty ?? false
      }
      try await daemon.waitShielded(window.id, false, timeout: .seconds(20))
      let clock = ContinuousClock()
      let t0 = clock.now
      let xpra = try await XpraShadow.start(on: server)
      let ready = clock.now - t0
      let image = try await xpra.screenshot("run\(run)")
      let shot = clock.now - t0 - ready
      let secret = image.count(of: .red)
      result.secret.append(secret)
      result.pids.append(Int(xpra.process.pid))
      await xpra.stop()
      let stopped = clock.now - t0 - ready - shot
      print(
        "\(name) run \(run): \(secret) secret pixels (of \(Self.rect.width * Self.rect.height)); "
          + "xpra ready after \(Self.ms(ready)), screenshot \(Self.ms(shot)), stopped in \(Self.ms(stopped))")
    }
    try await waitUntil("\(name): every session ended", timeout: .seconds(20)) {
      try daemon.state()?.sessions.isEmpty ?? false
    }
    result.audit = daemon.audit
    await daemon.stop()
    window.close()
    await server.stop()
    return result
  }

  static func ms(_ d: Duration) -> String {
    String(format: "%.0f ms", Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
  }

  static func records(_ audit: [[String: Any]], _ event: String, pid: Int) -> [[String: Any]] {
    audit.filter { $0["event"] as? String == event && $0["pid"] as? Int == pid }
  }

  static func brief(_ r: [String: Any]) -> String {
    ["event", "kind", "client", "pid", "exe", "script", "request", "program"].compactMap { key in
      r[key].map { "\(key)=\($0)" }
    }.joined(separator: " ")
  }

  @Test(
    "xpra shadow's first screenshot gets no secret pixel with the default policy, and the audit names xpra; not known, it gets the secret"
  )
  func shadowScreenshot() async throws {
    let known = try await Self.screenshots(policy: "{version: 1}", runs: Self.runs, name: "default policy")
    print("default policy: secret pixels per run \(known.secret)")
    #expect(known.secret == Array(repeating: 0, count: Self.runs), "secret pixels per run: \(known.secret)")
    for pid in known.pids {
      let starts = Self.records(known.audit, "session-start", pid: pid)
      let requests = Self.records(known.audit, "capture-request", pid: pid)
      let notices = Self.records(known.audit, "capture-notice", pid: pid)
      for r in starts + requests + notices { print("xpra pid \(pid): \(Self.brief(r))") }
      // The shield is up from xpra's connection: a session of kind "known", named by the script.
      #expect(
        starts.contains { $0["kind"] as? String == "known" && ($0["script"] as? String)?.hasSuffix("/xpra") == true },
        "session-start records of xpra (pid \(pid)): \(starts.map(Self.brief))")
      #expect(
        (starts + requests).allSatisfy { ($0["script"] as? String)?.hasSuffix("/xpra") == true },
        "xpra's records: \((starts + requests).map(Self.brief))")
      #expect(notices.allSatisfy { $0["program"] as? String == "xpra" }, "\(notices.map(Self.brief))")
    }

    // The positive control: xpra not known (the built-in list replaced by an empty one, and
    // not learned from the run before: `capture.learn: false`).
    // xpra's capture (a CopyArea of the root) is seen after the server ran it: the first
    // screenshot gets the secret. Its capture is still audited by xpra's script.
    let control = try await Self.screenshots(
      policy: "{version: 1, capture: {known: [], replaceDefaultKnown: true, learn: false}}", runs: Self.runs,
      name: "xpra not known")
    print("xpra not known: secret pixels per run \(control.secret)")
    #expect(
      control.secret.count == Self.runs && control.secret.allSatisfy { $0 > 0 }, "secret pixels: \(control.secret)")
    for pid in control.pids {
      let starts = Self.records(control.audit, "session-start", pid: pid)
      let requests = Self.records(control.audit, "capture-request", pid: pid)
      #expect(!starts.contains { $0["kind"] as? String == "known" }, "\(starts.map(Self.brief))")
      #expect(
        !requests.isEmpty && requests.allSatisfy { ($0["script"] as? String)?.hasSuffix("/xpra") == true },
        "capture-request records of xpra (pid \(pid)): \(requests.map(Self.brief))")
    }
  }
}

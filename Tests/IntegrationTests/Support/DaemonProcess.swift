// Runs the real `shieldctl` binary against a test's Xvfb: the daemon, tag/untag, status.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

/// The `shieldctl` built next to this test bundle (also with `--scratch-path`), or
/// `$SHIELDCTL_PATH`.
enum Shieldctl {
  static let path: String = locate()

  static func locate() -> String {
    let fm = FileManager.default
    if let p = ProcessInfo.processInfo.environment["SHIELDCTL_PATH"], !p.isEmpty { return p }
    var starts: [URL] = []
    if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      starts.append(URL(fileURLWithPath: exe))
    }
    if let first = CommandLine.arguments.first { starts.append(URL(fileURLWithPath: first)) }
    for start in starts {
      var directory = start.standardizedFileURL.deletingLastPathComponent()
      for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("shieldctl").path
        if fm.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
      }
    }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/shieldctl").path
  }

  /// Runs `shieldctl args` against the server's display.
  static func run(_ args: [String], on server: XvfbServer, timeout: Duration = .seconds(30)) async throws
    -> CommandResult
  {
    try await server.run(path, args, timeout: timeout)
  }
}

/// A running `shieldctl watch` with its own policy file and JSON audit log.
final class DaemonProcess: @unchecked Sendable {
  let server: XvfbServer
  let process: BackgroundProcess
  let policyPath: String
  let directory: String
  /// How many `waitUntilCaughtUp` markers were set (each title is new).
  private var markers = 0

  /// Starts the daemon with `policy` (JSON5 text) and waits until it publishes its state.
  static func start(
    on server: XvfbServer, policy: String = "{version: 1, shield: {when: \"always\"}}",
    extraArguments: [String] = [], waitUntilReady: Bool = true, productDefaults: Bool = false
  ) async throws -> DaemonProcess {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-daemon")
    let policyPath = directory + "/policy.json5"
    try policy.write(toFile: policyPath, atomically: true, encoding: .utf8)
    chmod(policyPath, 0o644)
    // Unless `productDefaults`, two defaults differ for tests (the test's policy, a later
    // file, wins): `capture.learn` off, since the test process itself is a program that
    // captures (in-process GetImage) and connects again, and most tests count sessions of
    // tools they run several times (LearnTests tests learning); `shield.failMode` open,
    // since tests stop daemons and look at the window afterwards (ShieldTests tests both
    // modes and the default, closed).
    var files = [policyPath]
    if !productDefaults {
      let testDefaults = directory + "/test-defaults.json5"
      try "{version: 1, capture: {learn: false}, shield: {failMode: \"open\"}}".write(
        toFile: testDefaults, atomically: true, encoding: .utf8)
      chmod(testDefaults, 0o644)
      files.insert(testDefaults, at: 0)
    }
    let process = try server.startBackground(
      Shieldctl.path, ["watch"] + files.flatMap { ["--policy", $0] } + ["--log-format", "json"] + extraArguments)
    let d = DaemonProcess(server: server, process: process, policyPath: policyPath, directory: directory)
    if waitUntilReady {
      try await waitUntil("the daemon publishes its state", timeout: .seconds(10)) {
        guard process.isRunning else { throw DaemonError.exited(String(decoding: process.stderr, as: UTF8.self)) }
        return (try? d.state()) != nil
      }
    }
    return d
  }

  private init(server: XvfbServer, process: BackgroundProcess, policyPath: String, directory: String) {
    self.server = server
    self.process = process
    self.policyPath = policyPath
    self.directory = directory
  }

  /// The published state (nil when no daemon owns the display), with the secure windows'
  /// titles as the daemon's own user gets them over its command socket (the published
  /// state has none; a stopped daemon's answer is not waited for long).
  func state() throws -> DaemonState? {
    let control = try XControl(display: server.display, environment: server.environment)
    guard var state = try control.readState() else { return nil }
    if let titles = control.secureWindowTitles(timeout: .milliseconds(200)) {
      for i in state.windows.indices { state.windows[i].title = titles[state.windows[i].id] }
    }
    return state
  }

  /// The state exactly as published on the root window (no titles).
  func publishedState() throws -> DaemonState? { try XControl(display: server.display).readState() }

  func isShielded(_ window: UInt32) -> Bool {
    (try? state())??.windows.first { $0.id == window }?.shielded ?? false
  }

  /// Waits until the daemon reports `window` shielded (or not).
  func waitShielded(_ window: UInt32, _ shielded: Bool = true, timeout: Duration = .seconds(10)) async throws {
    try await waitUntil("window 0x\(String(window, radix: 16)) shielded=\(shielded)", timeout: timeout) {
      self.isShielded(window) == shielded
    }
    // The state is published after the shield request was flushed; one X round trip
    // (the XControl read above) orders our captures after it.
  }

  /// The positive marker before a check that nothing happened. With `window` (a secure
  /// window the daemon tracks) it retitles the window and waits until the published state
  /// shows the new title; without, it opens a small secure window from a new client, waits
  /// until the state lists it, and closes it (not for policies with a quarantine: a new
  /// client would start one). The daemon handles its connection's X events in order, so by
  /// then it has processed every event the server sent it before, and a negative check that
  /// follows is not merely early.
  func waitUntilCaughtUp(retitling window: TestWindow? = nil, timeout: Duration = .seconds(10)) async throws {
    markers += 1
    let title = "caught-up marker \(markers)"
    if let window {
      try window.setString("WM_NAME", type: "STRING", title)
      try window.setString("_NET_WM_NAME", type: "UTF8_STRING", title)
      try await waitUntil("the daemon shows \(hex(window.id)) titled \(title.debugDescription)", timeout: timeout) {
        try self.state()?.windows.contains { $0.id == window.id && $0.title == title } ?? false
      }
      return
    }
    let marker = try await TestWindow.open(
      on: server, rect: PixelRect(x: 0, y: 0, width: 4, height: 4), color: .black, title: title, secure: true)
    defer { marker.close() }
    try await waitUntil("the daemon lists the marker window \(hex(marker.id))", timeout: timeout) {
      try self.state()?.windows.contains { $0.id == marker.id && $0.secure } ?? false
    }
  }

  /// Audit records written so far (JSON lines on stderr).
  var audit: [[String: Any]] {
    String(decoding: process.stderr, as: UTF8.self).split(separator: "\n").compactMap {
      (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
    }
  }

  func auditEvents(_ name: String) -> [[String: Any]] { audit.filter { $0["event"] as? String == name } }

  func signal(_ sig: Int32) { kill(process.pid, sig) }

  /// Stops with SIGTERM and returns how it ended.
  @discardableResult
  func stop() async -> CommandResult { await process.stop(grace: .seconds(5)) }

  deinit { removeTree(directory) }
}

enum DaemonError: Error, CustomStringConvertible {
  case exited(String)
  var description: String {
    switch self {
    case .exited(let log): "the daemon exited early; its log:\n\(log)"
    }
  }
}

/// Field 3 of /proc/PID/stat (R, S, D, T, ...): whether a daemon is stopped or frozen.
func processState(_ pid: pid_t) -> String? {
  guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
  return stat.split(separator: ")").last?.split(separator: " ").first.map(String.init)
}

/// Hex form used by the CLI.
func hex(_ w: UInt32) -> String { "0x" + String(w, radix: 16) }

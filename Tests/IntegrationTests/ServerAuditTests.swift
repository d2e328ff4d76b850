// The audit under the Xorg module: shieldctl's own commands are not `trust-refused`; a recorder that is
// recording is not `session-idle` and its session counts its reads; no request is named by
// bare numbers; and censored captures teach the history (scrot is a capturer, not "quiet").
// A headless Xorg with the module as the installed snippet sets it (`ServerEnforcementTests`).

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("The audit under the Xorg module", .serialized, .timeLimit(.minutes(6)))
struct ServerAuditTests {
  static let rect = PixelRect(x: 60, y: 60, width: 200, height: 150)

  static func setUp(policy: String) async throws -> (XvfbServer, TestWindow, DaemonProcess) {
    #expect(XorgModule.isBuilt, "build the module first: make xorg-module")
    let server = try await XvfbServer.startXorg(
      moduleDirectory: XorgModule.directory, moduleOptions: XorgModule.snippetOptions())
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, title: "secret", secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: policy)
    #expect(try daemon.state()?.enforcement?.kind == "server", "\(server.xorgLog.suffix(2000))")
    try await waitUntil("the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    return (server, window, daemon)
  }

  /// `status`, `list` and `history` are the user's own commands (untrusted clients by
  /// design): no `trust-refused`. Control: the same program under `LD_PRELOAD` is refused
  /// and audited.
  @Test("shieldctl status, list and history are not audited as trust-refused; under LD_PRELOAD it is")
  func ownCommandsAreNotRefusals() async throws {
    let (server, window, daemon) = try await Self.setUp(policy: "{version: 1}")
    for args in [["status"], ["list"], ["history"]] {
      let r = try await Shieldctl.run(args, on: server)
      #expect(r.succeeded, "\(args): \(r)")
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    let own = daemon.auditEvents("trust-refused")
    print("trust-refused after status, list, history: \(own)")
    #expect(own.isEmpty, "\(own)")
    // Control: injected code in the daemon's program is refused, and audited.
    var env = server.environment
    env["LD_PRELOAD"] = "libm.so.6"
    _ = try await runCommand(Shieldctl.path, ["status"], environment: env, timeout: .seconds(30))
    try await daemon.waitUntilCaughtUp(retitling: window)
    let injected = daemon.auditEvents("trust-refused")
    print("trust-refused under LD_PRELOAD: \(injected)")
    #expect(!injected.isEmpty)
    await daemon.stop()
    window.close()
    await server.stop()
  }

  /// ffmpeg (a known recorder) recording for about 4 s with `capture.idle: "2s"`: its
  /// session counts its censored reads and never goes idle (before: `session-idle` after
  /// 2 s, `session-end` with "requests 0"); and no audited request is bare numbers.
  @Test("a recording recorder is not idle, its session counts its reads, every request is named")
  func recordingRecorder() async throws {
    let (server, window, daemon) = try await Self.setUp(policy: "{version: 1, capture: {idle: \"2s\"}}")
    let frames = try await Capture.ffmpegFrames(on: server, count: 40, frameRate: 10)
    #expect(frames.allSatisfy { $0.count(of: .red, tolerance: 8, in: Self.rect) == 0 })
    for tool in ["xwd", "import", "scrot", "maim"] {
      switch tool {
      case "xwd": _ = try await Capture.xwdRoot(on: server)
      case "import": _ = try await Capture.importRoot(on: server)
      case "scrot": _ = try await Capture.scrot(on: server)
      default: _ = try await Capture.maim(on: server)
      }
    }
    try await waitUntil("every session ended", timeout: .seconds(20)) {
      try daemon.state()?.sessions.isEmpty ?? false
    }
    let ffmpeg = { (r: [String: Any]) in (r["exe"] as? String)?.hasSuffix("/ffmpeg") == true }
    let idle = daemon.auditEvents("session-idle").filter(ffmpeg)
    let ends = daemon.auditEvents("session-end").filter(ffmpeg)
    print("ffmpeg: \(frames.count) frames; session-idle \(idle); session-end \(ends)")
    #expect(idle.isEmpty, "\(idle)")
    #expect(!ends.isEmpty && ends.allSatisfy { ($0["requests"] as? Int ?? 0) > 0 }, "\(ends)")
    let requests = daemon.audit.compactMap { $0["request"] as? String }
    print("requests audited: \(Set(requests).sorted())")
    #expect(!requests.isEmpty)
    #expect(!requests.contains { $0.hasPrefix("request ") }, "\(Set(requests).sorted())")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  /// scrot four times under the module, with learning: the history marks it as a capturer
  /// (before: four starts and no capture, "quiet").
  @Test("censored captures teach the history: scrot is a capturer, not quiet")
  func censoredCapturesAreLearned() async throws {
    let (server, window, daemon) = try await Self.setUp(policy: "{version: 1, capture: {learn: true}}")
    for _ in 0..<4 {
      let shot = try await Capture.scrot(on: server)
      #expect(shot.count(of: .red, tolerance: 8, in: Self.rect) == 0)
    }
    try await waitUntil("every session ended", timeout: .seconds(20)) {
      try daemon.state()?.sessions.isEmpty ?? false
    }
    await daemon.stop()  // saves the history
    let history = try await Shieldctl.run(["history"], on: server)
    let scrot = history.stdoutText.split(separator: "\n").filter { $0.contains("/scrot ") }
    print("history: \(history.stdoutText)")
    #expect(scrot.count == 1 && scrot[0].hasPrefix("captured"), "\(history)")
    window.close()
    await server.stop()
  }
}

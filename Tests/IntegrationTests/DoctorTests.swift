// `shieldctl doctor` on real X servers: a healthy desktop, an untrusted
// compositor, a server without RECORD, an invalid policy, no daemon.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("shieldctl doctor", .serialized, .timeLimit(.minutes(4)))
struct DoctorTests {
  /// Runs `shieldctl doctor --json` and decodes its findings.
  static func doctor(_ server: XvfbServer, _ extra: [String] = []) async throws -> (status: Int32, findings: [Finding])
  {
    let r = try await Shieldctl.run(["doctor", "--json"] + extra, on: server)
    let findings = try JSONDecoder().decode([Finding].self, from: Data(r.stdoutText.utf8))
    guard case .exited(let code) = r.status else { throw ProcessError.failed(r) }
    return (code, findings)
  }

  static func finding(_ f: [Finding], _ check: String) -> Finding? { f.first { $0.check == check } }

  @Test("a healthy desktop: every check ok, a secure window visible while nobody captures, exit 0")
  func healthy() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    let (status, f) = try await Self.doctor(server)
    #expect(status == 0, "\(f)")
    #expect(!f.contains { $0.level == .problem }, "\(f)")
    #expect(Self.finding(f, "daemon")?.level == .ok)
    #expect(Self.finding(f, "RECORD")?.level == .ok)
    #expect(Self.finding(f, "compositor")?.text.hasPrefix("none") == true, "\(f)")
    #expect(Self.finding(f, "secure windows")?.text.hasPrefix("visible to you right now") == true, "\(f)")
    // The plain form says the same in words.
    let plain = try await Shieldctl.run(["doctor"], on: server)
    #expect(plain.status == .exited(0))
    #expect(plain.stdoutText.contains("Protection works as the policy says."), "\(plain.stdoutText)")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("no daemon: a problem with the fix, exit 1")
  func noDaemon() async throws {
    let server = try await XvfbServer.start()
    let (status, f) = try await Self.doctor(server)
    #expect(status == 1)
    let d = try #require(Self.finding(f, "daemon"))
    #expect(d.level == .problem && d.fix?.contains("shieldctl watch") == true, "\(d)")
    await server.stop()
  }

  @Test("an untrusted compositor is a problem naming it and the policy that trusts it; allowed, it is ok")
  func untrustedCompositor() async throws {
    let server = try await XvfbServer.start()
    let picom = try await server.startCompositor()
    // The built-in compositor list trusts picom: dropped here, so it is not trusted.
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {replaceDefaultCompositors: true}}")
    let (status, f) = try await Self.doctor(server)
    #expect(status == 1)
    let c = try #require(Self.finding(f, "compositor"))
    #expect(c.level == .problem && c.text.contains("/usr/bin/picom") && c.text.contains("not trusted"), "\(c)")
    #expect(c.fix?.contains(#"capture: { allow: [{ exe: "/usr/bin/picom" }] }"#) == true, "\(c)")
    #expect(Self.finding(f, "secure windows")?.text.contains("/usr/bin/picom") == true, "\(f)")

    // The daemon's own policy is what doctor checks; with picom allowed, all is well.
    try "{version: 1, capture: {replaceDefaultCompositors: true, allow: [{exe: \"/usr/bin/picom\"}]}}".write(
      toFile: daemon.policyPath, atomically: true, encoding: .utf8)
    daemon.signal(SIGHUP)
    try await waitUntil("the daemon reloads", timeout: .seconds(10)) {
      !daemon.auditEvents("policy-loaded").isEmpty
    }
    try await waitUntil("doctor finds nothing wrong", timeout: .seconds(10)) {
      try await Self.doctor(server).status == 0
    }
    let (_, g) = try await Self.doctor(server)
    #expect(
      Self.finding(g, "compositor")?.level == .ok && Self.finding(g, "compositor")?.text.contains("trusted") == true)
    await daemon.stop()
    _ = await picom.stop()
    await server.stop()
  }

  @Test("an X server without RECORD: a problem (secure windows always hidden), exit 1")
  func withoutRecord() async throws {
    let server = try await XvfbServer.start(extraArguments: ["-extension", "RECORD"])
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    let (status, f) = try await Self.doctor(server)
    #expect(status == 1)
    let r = try #require(Self.finding(f, "RECORD"))
    #expect(r.level == .problem && r.text.contains("missing") && r.fix?.contains("-extension RECORD") == true, "\(r)")
    await daemon.stop()
    await server.stop()
  }

  @Test("an invalid policy file: a problem with file:line:col, exit 1")
  func invalidPolicy() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    let directory = try makeTemporaryDirectory(prefix: "captureshield-doctor")
    defer { removeTree(directory) }
    let bad = directory + "/bad.json5"
    try "{version: 1,\n  capture: { alow: [] } }".write(toFile: bad, atomically: true, encoding: .utf8)
    let (status, f) = try await Self.doctor(server, ["--policy", bad])
    #expect(status == 1)
    let p = try #require(Self.finding(f, "policy"))
    #expect(p.level == .problem && p.text.contains("\(bad):2:14: error: unknown key 'alow'"), "\(p)")
    // Usage errors are 64, with the usual shape.
    let usage = try await Shieldctl.run(["doctor", "--policy", ""], on: server)
    #expect(usage.status == .exited(64))
    #expect(String(decoding: usage.stderr, as: UTF8.self).contains("See 'shieldctl doctor --help'"))
    await daemon.stop()
    await server.stop()
  }
}

extension DoctorTests {
  @Test(
    "Xwayland (a Wayland session: headless weston): a problem saying the Wayland compositor decides captures, exit 1")
  func xwayland() async throws {
    let runtime = try makeTemporaryDirectory(prefix: "captureshield-wayland")
    defer { removeTree(runtime) }
    chmod(runtime, 0o700)
    var env = ProcessInfo.processInfo.environment
    env["XDG_RUNTIME_DIR"] = runtime
    env["WAYLAND_DISPLAY"] = nil
    let weston = try BackgroundProcess(
      "weston", ["--backend=headless-backend.so", "--socket=wayland-cs", "--idle-time=0"], environment: env)
    try await waitUntil("weston listens on its socket", timeout: .seconds(15)) {
      guard weston.isRunning else { throw ProcessError.failed(await weston.stop()) }
      return FileManager.default.fileExists(atPath: runtime + "/wayland-cs")
    }
    let server = try await XvfbServer.startXwayland(waylandDisplay: "wayland-cs", runtimeDirectory: runtime)
    let (status, f) = try await Self.doctor(server)
    #expect(status == 1)
    let x = try #require(Self.finding(f, "X server"))
    #expect(x.level == .problem && x.text.hasPrefix("Xwayland") && x.fix?.contains("Xorg session") == true, "\(x)")
    await server.stop()
    _ = await weston.stop()
  }
}

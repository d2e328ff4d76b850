// `shieldctl tag --remember` / `untag --forget` (issue 36, point 4) with the real daemon
// on its default policy files ($XDG_CONFIG_HOME of the test: the user's policy.json5 and
// the remembered.json5 shieldctl writes) and a real app (xmessage):
// - without --remember (the positive control), a new window of the tagged app is not secure;
// - with --remember, the app's next window is secure with no tag, by the remembered rule;
// - untag --forget takes that window out at once, and the app's next window is not secure.
// A marker window (a rule on its instance), opened after the app's, tells that the daemon
// has seen the app's window before the test looks at it.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Remembered rules: tag --remember, untag --forget", .serialized, .timeLimit(.minutes(3)))
struct RememberTests {
  /// The test's $XDG_CONFIG_HOME, a daemon started on the default files, and the server.
  final class Setup: @unchecked Sendable {
    let server: XvfbServer
    let directory: String
    let environment: [String: String]
    var daemon: BackgroundProcess?
    var apps: [BackgroundProcess] = []
    var markers = 0

    init() async throws {
      server = try await XvfbServer.start()
      directory = try makeTemporaryDirectory(prefix: "captureshield-remember")
      var env = server.environment
      env["XDG_CONFIG_HOME"] = directory + "/config"
      environment = env
      try FileManager.default.createDirectory(
        atPath: directory + "/config/captureshield", withIntermediateDirectories: true)
      let policy = directory + "/config/captureshield/policy.json5"
      // As DaemonProcess's test defaults: no learning, shields that do not outlive the daemon.
      try """
      // the user's own file: never edited by shieldctl
      {version: 1, secure: [{name: "marker", instance: "marker*"}], capture: {learn: false},
       shield: {when: "always", failMode: "open"}}
      """.write(toFile: policy, atomically: true, encoding: .utf8)
      chmod(policy, 0o644)
    }

    var rememberedPath: String { directory + "/config/captureshield/remembered.json5" }
    var userPolicy: String { directory + "/config/captureshield/policy.json5" }

    func startDaemon() async throws {
      let d = try BackgroundProcess(Shieldctl.path, ["watch", "--log-format", "json"], environment: environment)
      daemon = d
      try await waitUntil("the daemon publishes its state", timeout: .seconds(10)) {
        guard d.isRunning else {
          throw ProcessError.io("the daemon exited: \(String(decoding: d.stderr, as: UTF8.self))")
        }
        return (try? self.state()) != nil
      }
    }

    func state() throws -> DaemonState? {
      try XControl(display: server.display, environment: server.environment).readState()
    }

    func shieldctl(_ args: [String]) async throws -> CommandResult {
      try await runCommand(Shieldctl.path, args, environment: environment)
    }

    /// Starts `xmessage -name NAME` and returns its window once mapped.
    func openApp(name: String) async throws -> UInt32 {
      let app = try server.startBackground("xmessage", ["-name", name, "remember me"])
      apps.append(app)
      var found: UInt32?
      try await waitUntil("xmessage \(name) maps its window", timeout: .seconds(10)) {
        let r = try await self.server.run("xdotool", ["search", "--onlyvisible", "--classname", "^\(name)$"])
        found = r.stdoutText.split(separator: "\n").compactMap { UInt32($0) }.first
        return found != nil
      }
      return found!
    }

    /// Opens a marker window and waits until the daemon says it is secure: the daemon has
    /// then seen every window opened before it.
    func caughtUp() async throws {
      markers += 1
      let marker = try await openApp(name: "marker\(markers)")
      try await waitUntil("the daemon has seen the marker", timeout: .seconds(10)) {
        try self.state()?.windows.contains { $0.id == marker && $0.secure } == true
      }
    }

    func row(_ window: UInt32) throws -> DaemonState.WindowRow? {
      try state()?.windows.first { $0.id == window }
    }

    func closeApps() async {
      for app in apps { _ = await app.stop() }
      apps = []
    }

    func stop() async {
      await closeApps()
      if let daemon { _ = await daemon.stop() }
      removeTree(directory)
    }
  }

  @Test func tagWithoutRememberLastsAsLongAsTheWindow() async throws {
    let s = try await Setup()
    try await s.startDaemon()
    let first = try await s.openApp(name: "app")
    let tag = try await s.shieldctl(["tag", hex(first)])
    #expect(tag.status == .exited(0), "\(tag)")
    try await waitUntil("the tagged window is secure", timeout: .seconds(10)) { try s.row(first)?.reason == "tag" }
    await s.closeApps()
    let second = try await s.openApp(name: "app")
    try await s.caughtUp()
    #expect(try s.row(second)?.secure != true, "without --remember the app's new window is not secure")
    #expect(!FileManager.default.fileExists(atPath: s.rememberedPath))
    await s.stop()
  }

  @Test func rememberThenForget() async throws {
    let s = try await Setup()
    try await s.startDaemon()
    let userBefore = try String(contentsOfFile: s.userPolicy, encoding: .utf8)
    let first = try await s.openApp(name: "app")
    let tag = try await s.shieldctl(["tag", "--remember", hex(first)])
    #expect(tag.status == .exited(0), "\(tag)")
    #expect(tag.stdoutText.contains("remembered \"Xmessage\""), "\(tag.stdoutText)")
    #expect(tag.stdoutText.contains("asked the daemon to reload"), "\(tag.stdoutText)")
    // the file: ours, valid, 0600; the user's file untouched
    var st = stat()
    #expect(stat(s.rememberedPath, &st) == 0 && st.st_mode & 0o777 == 0o600)
    let check = try await s.shieldctl(["policy", "check", s.rememberedPath])
    #expect(check.status == .exited(0), "\(check)")
    #expect(try String(contentsOfFile: s.userPolicy, encoding: .utf8) == userBefore)
    // remembering again changes nothing
    let again = try await s.shieldctl(["tag", "--remember", hex(first)])
    #expect(again.stdoutText.contains("already remembered"), "\(again.stdoutText)")

    try await waitUntil("the daemon loads the remembered rules", timeout: .seconds(10)) {
      try s.state()?.policy.sources.contains(s.rememberedPath) == true
    }
    await s.closeApps()
    let second = try await s.openApp(name: "app")
    try await waitUntil("the app's new window is secure by the remembered rule", timeout: .seconds(10)) {
      try s.row(second)?.reason.contains("\"remembered: Xmessage\"") == true
    }
    #expect(try s.row(second)?.reason.hasPrefix("rule #") == true)
    // status says so
    let status = try await s.shieldctl(["status"])
    #expect(status.stdoutText.contains("remembered"), "\(status.stdoutText)")

    let forget = try await s.shieldctl(["untag", "--forget", hex(second)])
    #expect(forget.status == .exited(0), "\(forget)")
    #expect(forget.stdoutText.contains("forgot \"Xmessage\""), "\(forget.stdoutText)")
    try await waitUntil("the window is no longer secure", timeout: .seconds(10)) {
      try s.row(second)?.secure != true
    }
    await s.closeApps()
    let third = try await s.openApp(name: "app")
    try await s.caughtUp()
    #expect(try s.row(third)?.secure != true, "after --forget the app's new window is not secure")
    #expect(try RememberedRules.parse(String(contentsOfFile: s.rememberedPath, encoding: .utf8), path: "r").isEmpty)
    await s.stop()
  }

  @Test func brokenRememberedFileKeepsTheRestAndIsReported() async throws {
    let s = try await Setup()
    try "{version: 1, secure: [{name: \"remembered: X\", klass: \"X\"}".write(
      toFile: s.rememberedPath, atomically: true, encoding: .utf8)
    chmod(s.rememberedPath, 0o600)
    try await s.startDaemon()  // it starts: the rest of the policy protects
    #expect(try s.state()?.policy.sources == [s.userPolicy])
    try await s.caughtUp()  // the user's own rule works
    let doctor = try await s.shieldctl(["doctor"])
    #expect(doctor.stdoutText.contains("PROBLEM  remembered rules: NOT in force"), "\(doctor.stdoutText)")
    let status = try await s.shieldctl(["status"])
    #expect(status.stdoutText.contains("remembered:  NOT in force"), "\(status.stdoutText)")
    // tag --remember does not overwrite a file it cannot read back
    let app = try await s.openApp(name: "app")
    let tag = try await s.shieldctl(["tag", "--remember", hex(app)])
    #expect(tag.status == .exited(1), "\(tag)")
    #expect(tag.stderrText.contains("left alone"), "\(tag.stderrText)")
    #expect(try String(contentsOfFile: s.rememberedPath, encoding: .utf8).contains("klass"))
    await s.stop()
  }
}

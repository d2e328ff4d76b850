// Trust that cannot be borrowed (rules identity, handover, daemonrole), the daemon's side, on a headless Xorg with the
// module as the installed snippet sets it (the daemon by its role, no compositor list):
// the daemon grants a compositor the session started and refuses one an untrusted client
// started; the published state holds no title; shieldctl's commands other than the daemon
// lift no protection.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Trust model (daemon side, Xorg module)", .serialized, .timeLimit(.minutes(6)))
struct TrustModelTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  static let picomArguments = ["--backend", "xrender", "--no-fading-openclose", "--config", "/dev/null"]

  static func secret(_ image: RGBImage) -> Int { ServerEnforcementTests.secret(image, rect) }

  /// picom started as a session starts it: by a process that is no client of the display
  /// and exits at once (i3's `exec`, a service manager), so it is re-parented. Its PID.
  /// picom is exec'd 0.3 s after the launching shell returned: a compositor whose parent
  /// (the shell, itself the child of this test process, an X client) is still alive when
  /// the daemon looks is refused, rightly (the grant is decided once, at its connection).
  static func sessionPicom(on server: XvfbServer) async throws -> pid_t {
    let args = picomArguments.joined(separator: " ")
    let r = try await server.run(
      "/bin/sh", ["-c", "(sleep 0.3; exec /usr/bin/picom \(args)) >/dev/null 2>&1 </dev/null & echo $!"])
    return try #require(pid_t(r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)), "\(r)")
  }

  @Test(
    "picom started as the session would is granted: the user's view shows the secure window through it, xwd gets none"
  )
  func sessionCompositorIsGranted() async throws {
    #expect(XorgModule.knowsDaemonOption, "the module has no Option \"Daemon\"")
    let server = try await ServerEnforcementTests.startServer()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    let picom = try await Self.sessionPicom(on: server)
    defer { kill(picom, SIGTERM) }
    try await waitUntil("the daemon grants picom", timeout: .seconds(10)) {
      daemon.auditEvents("grant").contains { $0["exe"] as? String == "/usr/bin/picom" }
    }
    #expect(daemon.auditEvents("compositor-refused").isEmpty, "\(daemon.auditEvents("compositor-refused"))")
    let c = try server.connect()
    try await waitUntil("picom redirects the screen", timeout: .seconds(10)) {
      let owner = try c.selectionOwner("_NET_WM_CM_S0")
      return try owner != 0 && c.resourceTypes(ofClientOwning: owner)["CompositeClientSubwindows", default: 0] > 0
    }
    // What the user sees is picom's output: the whole window, repainted after the grant.
    var seen = 0
    try await waitUntil("the user's view shows the secure window through picom", timeout: .seconds(10)) {
      seen = Self.secret(try Capture.getImageRoot(on: server))
      return seen == Self.rect.width * Self.rect.height
    }
    let shot = try await Capture.xwdRoot(on: server)
    #expect(Self.secret(shot) == 0, "xwd read \(Self.secret(shot)) secret pixels")
    let state = try #require(try daemon.state())
    #expect(state.compositorTrust?.hasPrefix("trusted") == true, "\(String(describing: state.compositorTrust))")
    #expect(state.enforcement?.compositorRefused == nil)
    print("trust model, session picom: granted, user's view \(seen) secret px, xwd \(Self.secret(shot))")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test(
    "picom started by an untrusted client (xdotool exec) is not granted: audited, its output is black there, doctor says why"
  )
  func compositorStartedByAnUntrustedClientIsRefused() async throws {
    #expect(XorgModule.knowsDaemonOption, "the module has no Option \"Daemon\"")
    let server = try await ServerEnforcementTests.startServer()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    // xdotool connects to the display, then runs picom as its child and waits for it.
    let launcher = try server.startBackground(
      "/usr/bin/xdotool", ["exec", "--sync", "/usr/bin/picom"] + Self.picomArguments)
    defer {
      print(
        "trust model, picom under xdotool: audit \(daemon.audit.filter { ["grant", "compositor", "compositor-refused", "grant-refused"].contains($0["event"] as? String ?? "") })"
      )
    }
    try await waitUntil("the daemon refuses picom", timeout: .seconds(10)) {
      daemon.auditEvents("compositor-refused").contains { $0["exe"] as? String == "/usr/bin/picom" }
    }
    let record = try #require(daemon.auditEvents("compositor-refused").first)
    let reason = record["reason"] as? String ?? ""
    #expect(reason.contains("xdotool") && reason.contains("untrusted client"), "\(record)")
    let picom = pid_t(record["pid"] as? Int ?? 0)
    defer { if picom > 0 { kill(picom, SIGTERM) } }
    #expect(!daemon.auditEvents("grant").contains { $0["exe"] as? String == "/usr/bin/picom" })
    // The module censors picom's reads: the user sees black where the window is.
    var seen = -1
    try await waitUntil("picom's output is black over the secure window", timeout: .seconds(10)) {
      seen = Self.secret(try Capture.getImageRoot(on: server))
      return seen == 0
    }
    let state = try #require(try daemon.state())
    #expect(
      state.enforcement?.compositorRefused?.contains("xdotool") == true, "\(String(describing: state.enforcement))")
    let doctor = try await Shieldctl.run(["doctor"], on: server)
    #expect(doctor.stdoutText.contains("is not granted by the daemon"), "\(doctor.stdoutText)")
    #expect(doctor.stdoutText.contains("ptrace"), "\(doctor.stdoutText)")
    print("trust model, picom under xdotool: refused (\(reason)); user's view \(seen) secret px")
    await daemon.stop()
    _ = await launcher.stop()
    window.close()
    await server.stop()
  }

  @Test("_CAPTURE_SHIELD_STATE holds no title; shieldctl list shows the titles to the daemon's user")
  func publishedStateHasNoTitles() async throws {
    let server = try await ServerEnforcementTests.startServer()
    let title = "Account 4711 - secret-title"
    let tagged = try await TestWindow.open(on: server, rect: Self.rect, color: .red, title: title, secure: true)
    let byRule = try await TestWindow.open(
      on: server, rect: ServerEnforcementTests.ruleRect, color: .red, title: "bank secret-title 2", className: "BankApp"
    )
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, secure: [{class: \"BankApp\"}]}")
    try await waitUntil("both windows listed as secure", timeout: .seconds(10)) {
      try daemon.publishedState()?.windows.filter { [tagged.id, byRule.id].contains($0.id) && $0.secure }.count == 2
    }
    let x = try server.connect()
    let atom = try x.internAtom("_CAPTURE_SHIELD_STATE")
    let reply = try #require(
      xcb_get_property_reply(x.raw, xcb_get_property(x.raw, 0, x.root, atom, 0, 0, 1 << 20), nil))
    let bytes = Data(
      bytes: xcb_get_property_value(reply), count: Int(xcb_get_property_value_length(reply)))
    free(reply)
    let published = String(decoding: bytes, as: UTF8.self)
    #expect(!bytes.isEmpty)
    #expect(!published.contains("secret-title"), "\(published)")
    #expect(!published.contains("\"title\""), "\(published)")
    #expect(bytes.range(of: Data("4711".utf8)) == nil)
    // The daemon's own user gets them over the command socket.
    let list = try await Shieldctl.run(["list"], on: server)
    #expect(list.status == .exited(0))
    #expect(list.stdoutText.contains(title), "\(list.stdoutText)")
    #expect(list.stdoutText.contains("bank secret-title 2"), "\(list.stdoutText)")
    let json = try await Shieldctl.run(["list", "--json"], on: server)
    #expect(json.stdoutText.contains("secret-title"), "\(json.stdoutText)")
    print("trust model, published state: \(bytes.count) bytes, no title; list shows both titles")
    await daemon.stop()
    tagged.close()
    byRule.close()
    await server.stop()
  }

  @Test(
    "no daemon: shieldctl untag (and tag) of another client's window gets BadAccess, exit 1; with the daemon both work")
  func untagWithoutDaemonLiftsNothing() async throws {
    #expect(XorgModule.knowsDaemonOption, "the module has no Option \"Daemon\"")
    let server = try await ServerEnforcementTests.startServer()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let plain = try await TestWindow.open(on: server, rect: ServerEnforcementTests.ruleRect, color: .black)
    let x = try server.connect()
    let untag = try await Shieldctl.run(["untag", hex(window.id)], on: server)
    #expect(untag.status == .exited(1), "\(untag)")
    #expect(untag.stderrText.contains("BadAccess") && untag.stderrText.contains("no daemon runs"), "\(untag)")
    #expect(try x.cardinalProperty(secureWindowProperty, of: window.id) == 1, "the tag went")
    let shot = try await Capture.xwdRoot(on: server)
    #expect(Self.secret(shot) == 0, "xwd read \(Self.secret(shot)) secret pixels after the untag attempt")
    let tag = try await Shieldctl.run(["tag", hex(plain.id)], on: server)
    #expect(tag.status == .exited(1), "\(tag)")
    #expect(try x.cardinalProperty(secureWindowProperty, of: plain.id) == nil)

    // With the daemon, both go through its command socket.
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    let tag2 = try await Shieldctl.run(["tag", hex(plain.id)], on: server)
    #expect(tag2.status == .exited(0), "\(tag2)")
    let untag2 = try await Shieldctl.run(["untag", hex(window.id)], on: server)
    #expect(untag2.status == .exited(0), "\(untag2)")
    try await waitUntil("the tags changed by the daemon", timeout: .seconds(10)) {
      try x.cardinalProperty(secureWindowProperty, of: plain.id) == 1
        && x.cardinalProperty(secureWindowProperty, of: window.id) == nil
    }
    print("trust model, untag without daemon: \(untag.stderrText.trimmingCharacters(in: .whitespacesAndNewlines))")
    await daemon.stop()
    window.close()
    plain.close()
    await server.stop()
  }
}

// Forged commands, untagging and relabelling by other clients. Each
// test is an attack by a client of our own on a real Xvfb, then the frames a capture tool
// gets afterwards and the audit record that names the attacker.

import CXCB
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@testable import CaptureShield

@Suite("Commands, tags and labels against other clients", .serialized, .timeLimit(.minutes(4)))
struct CommandAuthTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  static let frames = 10

  /// How many of `frames` xwd screenshots show any of the secret (red) pixels.
  static func leakedFrames(on server: XvfbServer, frames: Int = frames) async throws -> Int {
    var leaked = 0
    for _ in 0..<frames where try await Capture.xwdRoot(on: server).count(of: .red, in: rect) > 0 { leaked += 1 }
    return leaked
  }

  /// A `_CAPTURE_SHIELD_COMMAND` ClientMessage to the daemon's manager window, as
  /// `shieldctl` sent commands before the command socket: `words` as `CommandCode.encode`.
  static func forgeCommand(_ x: ShieldTestSupport.TestXConnection, _ words: [UInt32]) throws {
    let manager = try x.selectionOwner("_CAPTURE_SHIELD_S0")
    var ev = xcb_client_message_event_t()
    ev.response_type = UInt8(XCB_CLIENT_MESSAGE)
    ev.format = 32
    ev.window = manager
    ev.type = try x.internAtom("_CAPTURE_SHIELD_COMMAND")
    ev.data.data32 = (words[0], words[1], words[2], words[3], words[4])
    var bytes = [UInt8](repeating: 0, count: 32)
    withUnsafeBytes(of: &ev) { raw in for i in 0..<min(32, raw.count) { bytes[i] = raw[i] } }
    try bytes.withUnsafeMutableBytes { b in
      try x.check(
        xcb_send_event_checked(x.raw, 0, manager, 0, b.baseAddress!.assumingMemoryBound(to: CChar.self)), "SendEvent")
    }
  }

  @Test("a forged pause or unshield ClientMessage is ignored and audited; 0 frames leak; shieldctl still commands")
  func forgedCommands() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, shield: {when: \"always\"}}")
    try await daemon.waitShielded(window.id)

    // The attacker: pause (until resume) and unshield the secure window, claiming pid 1.
    let attacker = try server.connect()
    try Self.forgeCommand(attacker, CommandCode.encode(.pause(nil), senderPID: 1))
    try Self.forgeCommand(attacker, CommandCode.encode(.unshield(window.id), senderPID: 1))
    try await daemon.waitUntilCaughtUp(retitling: window)
    let leaked = try await Self.leakedFrames(on: server)
    #expect(leaked == 0, "\(leaked) of \(Self.frames) frames leaked after the forged commands")
    #expect(daemon.isShielded(window.id))
    let forged = daemon.auditEvents("forged-command")
    #expect(forged.first?["command"] as? String == "pause", "\(forged)")
    #expect(forged.first?["claimed-pid"] as? Int == 1, "\(forged)")
    #expect(daemon.auditEvents("pause").isEmpty && daemon.auditEvents("unshield").isEmpty)

    // The real shieldctl still commands the daemon, and is audited by its real pid.
    let unshield = try await Shieldctl.run(["unshield", hex(window.id)], on: server)
    #expect(unshield.status == .exited(0), "\(unshield)")
    try await daemon.waitShielded(window.id, false)
    let by = daemon.auditEvents("manual-unshield").first?["by"] as? String ?? ""
    #expect(
      by.hasPrefix("shieldctl (pid ") && by.hasSuffix("uid \(geteuid()))"), "\(daemon.auditEvents("manual-unshield"))")
    let reshield = try await Shieldctl.run(["shield", hex(window.id)], on: server)
    #expect(reshield.status == .exited(0), "\(reshield)")
    try await daemon.waitShielded(window.id)
    let status = try await Shieldctl.run(["status"], on: server)
    #expect(status.status == .exited(0), "\(status)")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("the command socket refuses a program that is not the daemon's: refused, audited with its executable")
  func socketRefusesOtherPrograms() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, shield: {when: \"always\"}}")
    try await daemon.waitShielded(window.id)

    // The attacker: this test process (not shieldctl) speaks the socket's protocol itself.
    let path = try XControl(display: server.display).commandSocketPath
    let result = CommandClient.request(.pause(nil), path: path, timeout: .seconds(10))
    guard case .reply(.refused(let why)) = result else {
      Issue.record("the daemon did not refuse: \(result)")
      return
    }
    #expect(why.contains("not the daemon's program"), "\(why)")
    try await daemon.waitUntilCaughtUp(retitling: window)
    let leaked = try await Self.leakedFrames(on: server)
    #expect(leaked == 0, "\(leaked) of \(Self.frames) frames leaked")
    let refused = try #require(daemon.auditEvents("command-refused").first)
    #expect(refused["pid"] as? Int == Int(getpid()), "\(refused)")
    let ownExe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    #expect(refused["exe"] as? String == ownExe, "\(refused)")
    #expect(daemon.auditEvents("pause").isEmpty)
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("no command socket (another XDG_RUNTIME_DIR): the CLI says so, 'Error:', exit 1; status NOT RESPONDING")
  func noCommandSocket() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server)
    let elsewhere = try makeTemporaryDirectory(prefix: "captureshield-runtime")
    defer { removeTree(elsewhere) }
    var environment = server.environment
    environment["XDG_RUNTIME_DIR"] = elsewhere
    let pause = try await runCommand(Shieldctl.path, ["pause"], environment: environment)
    #expect(pause.status == .exited(1), "\(pause)")
    #expect(
      pause.stderrText.hasPrefix("Error: ") && pause.stderrText.contains("no command socket at \(elsewhere)/"),
      "\(pause.stderrText)")
    let status = try await runCommand(Shieldctl.path, ["status"], environment: environment)
    #expect(status.status == .exited(1), "\(status)")
    #expect(status.stdoutText.contains("no command socket"), "\(status.stdoutText)")
    #expect(daemon.auditEvents("pause").isEmpty)
    await daemon.stop()
    await server.stop()
  }

  // MARK: Untagging

  /// How another client takes the tag off: DeleteProperty, or ChangeProperty to 0.
  enum Untag: String, CaseIterable, Sendable, CustomStringConvertible {
    case delete, zero
    var description: String { rawValue }
  }

  @Test(
    "another client's removal of a secure tag is undone: the tag comes back, 0 frames leak, audited; the owner still untags",
    arguments: Untag.allCases)
  func untagByAnotherClient(_ how: Untag) async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, shield: {when: \"always\"}}")
    try await daemon.waitShielded(window.id)

    // The attacker: another client takes the app's tag off.
    let attacker = try server.connect()
    let tag = try attacker.internAtom("_CAPTURE_SHIELD_SECURE")
    switch how {
    case .delete:
      try attacker.check(xcb_delete_property_checked(attacker.raw, window.id, tag), "DeleteProperty")
    case .zero:
      var zero: UInt32 = 0
      try attacker.check(
        xcb_change_property_checked(
          attacker.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window.id, tag, 6, 32, 1, &zero),
        "ChangeProperty")
    }
    try await daemon.waitUntilCaughtUp()
    let leaked = try await Self.leakedFrames(on: server)
    #expect(leaked == 0, "\(how): \(leaked) of \(Self.frames) frames leaked after another client's untag")
    #expect(daemon.isShielded(window.id))
    func tagValue() -> [UInt32]? {
      guard
        let r = xcb_get_property_reply(
          attacker.raw, xcb_get_property(attacker.raw, 0, window.id, tag, 6, 0, 1), nil)
      else { return nil }
      defer { free(r) }
      let n = Int(xcb_get_property_value_length(r)) / 4
      return n == 0
        ? []
        : Array(UnsafeBufferPointer(start: xcb_get_property_value(r)!.assumingMemoryBound(to: UInt32.self), count: n))
    }
    try await waitUntil("the tag is back", timeout: .seconds(10)) { tagValue() == [1] }
    try await waitUntil("tag-tampered audited", timeout: .seconds(10)) { !daemon.auditEvents("tag-tampered").isEmpty }
    let record = try #require(daemon.auditEvents("tag-tampered").first)
    #expect(record["window"] as? String == hex(window.id), "\(record)")
    switch how {
    case .delete:
      // RECORD names the client that sent the DeleteProperty: the attacker, not the owner.
      let attackerBase = xcb_get_setup(attacker.raw).pointee.resource_id_base
      #expect(record["client"] as? String == "0x" + String(attackerBase, radix: 16), "\(record)")
      #expect(record["pid"] as? Int == Int(getpid()), "\(record)")
      #expect((record["client"] as? String) != (record["owner"] as? String), "\(record)")
      let ownExe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
      #expect(record["exe"] as? String == ownExe, "\(record)")
    case .zero:
      // X does not say who sent a ChangeProperty: the record says so.
      #expect((record["client"] as? String)?.hasPrefix("unknown") == true, "\(record)")
    }

    // The window's own client still lifts its tag.
    try window.setSecure(false)
    try await daemon.waitShielded(window.id, false)
    #expect(daemon.auditEvents("tag-tampered").count == 1, "\(daemon.auditEvents("tag-tampered"))")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("shieldctl untag still untags while a daemon guards the tag (the daemon removes it)")
  func shieldctlUntag() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, shield: {when: \"always\"}}")
    try await daemon.waitShielded(window.id)
    let untag = try await Shieldctl.run(["untag", hex(window.id)], on: server)
    #expect(untag.status == .exited(0), "\(untag)")
    try await daemon.waitShielded(window.id, false)
    try await daemon.waitUntilCaughtUp()
    #expect(daemon.auditEvents("tag-tampered").isEmpty, "\(daemon.auditEvents("tag-tampered"))")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  // MARK: Relabelling

  @Test("policy explain says that a class rule can be dodged by any client; a tagged window survives a rewritten class")
  func relabel() async throws {
    let server = try await XvfbServer.start()
    let directory = try makeTemporaryDirectory(prefix: "captureshield-relabel")
    defer { removeTree(directory) }
    let policy = "{version: 1, shield: {when: \"always\"}, secure: [{name: \"vault\", class: \"Vault\"}]}"
    let policyPath = directory + "/policy.json5"
    try policy.write(toFile: policyPath, atomically: true, encoding: .utf8)
    chmod(policyPath, 0o644)
    let byRule = try await TestWindow.open(on: server, rect: Self.rect, color: .red, className: "Vault")
    let explain = try await Shieldctl.run(
      ["policy", "explain", "--policy", policyPath, "--window", hex(byRule.id)], on: server)
    #expect(explain.status == .exited(0), "\(explain)")
    #expect(
      explain.stdoutText.contains("note: rule #1 \"vault\"")
        && explain.stdoutText.contains("looks at class, which any X client can rewrite"),
      "\(explain.stdoutText)")

    // The protection that holds: the app's own tag. Another client rewrites WM_CLASS.
    byRule.close()
    let tagged = try await TestWindow.open(on: server, rect: Self.rect, color: .red, className: "Vault", secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: policy)
    try await daemon.waitShielded(tagged.id)
    let attacker = try server.connect()
    var cls = Array("other\0Other\0".utf8)
    try attacker.check(
      xcb_change_property_checked(
        attacker.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), tagged.id, 67, 31, 8, UInt32(cls.count), &cls),
      "ChangeProperty(WM_CLASS)")
    try await daemon.waitUntilCaughtUp()
    let leaked = try await Self.leakedFrames(on: server)
    #expect(
      leaked == 0, "\(leaked) of \(Self.frames) frames leaked from the tagged window after its class was rewritten")
    await daemon.stop()
    tagged.close()
    await server.stop()
  }
}

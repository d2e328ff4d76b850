// Compositors trusted by default, safely: with the default policy a
// standard compositor (picom from /usr/bin) that owns _NET_WM_CM_S0 no longer keeps every
// secure window hidden, while captures are still detected; the same program copied to a
// temporary directory is not trusted.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Compositors trusted by default", .serialized, .timeLimit(.minutes(4)))
struct CompositorTrustTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  /// picom run from `path`, once it owns the compositor selection.
  static func picom(at path: String, on server: XvfbServer) async throws -> BackgroundProcess {
    let p = try BackgroundProcess(
      path, ["--backend", "xrender", "--no-fading-openclose", "--config", "/dev/null"], environment: server.environment)
    let c = try server.connect()
    try await waitUntil("picom owns _NET_WM_CM_S0", timeout: .seconds(10)) {
      try c.selectionOwner("_NET_WM_CM_S0") != 0
    }
    return p
  }

  @Test("picom from /usr/bin with the default policy: trusted, the window stays visible; xwd still shields it")
  func standardCompositorIsTrusted() async throws {
    let server = try await XvfbServer.start()
    let picom = try await Self.picom(at: "/usr/bin/picom", on: server)
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, capture: {linger: \"300ms\"}}")
    try await waitUntil("the daemon names picom as the trusted compositor", timeout: .seconds(10)) {
      try daemon.state()?.compositorTrust?.hasPrefix("trusted (default compositor: picom") == true
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(!daemon.isShielded(window.id))
    #expect(try daemon.state()?.sessions.isEmpty == true)
    let status = try await Shieldctl.run(["status"], on: server)
    #expect(status.stdoutText.contains("trusted (default compositor: picom"), "\(status.stdoutText)")
    let audit = daemon.auditEvents("compositor").last
    #expect((audit?["trust"] as? String)?.hasPrefix("trusted") == true, "\(String(describing: audit))")
    // A capture is still one.
    _ = try await CaptureMethod.xwdRoot.capture(window: window.id, on: server)
    try await daemon.waitShielded(window.id)
    await daemon.stop()
    window.close()
    _ = await picom.stop()
    await server.stop()
  }

  @Test("the same program copied to a temporary directory is not trusted: a compositor session, shields up")
  func copiedCompositorIsNotTrusted() async throws {
    let server = try await XvfbServer.start()
    let directory = try makeTemporaryDirectory(prefix: "captureshield-fakepicom")
    defer { removeTree(directory) }
    let copy = directory + "/picom"
    try FileManager.default.copyItem(atPath: "/usr/bin/picom", toPath: copy)
    let picom = try await Self.picom(at: copy, on: server)
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    try await daemon.waitShielded(window.id)
    let state = try #require(try daemon.state())
    #expect(state.sessions.contains { $0.kind == .compositor }, "\(state.sessions)")
    #expect(
      state.compositorTrust == "not trusted: \(copy) is not a root-owned program in a system directory",
      "\(String(describing: state.compositorTrust))")
    await daemon.stop()
    window.close()
    _ = await picom.stop()
    await server.stop()
  }
}

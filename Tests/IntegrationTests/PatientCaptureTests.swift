// A patient capturer (`capture.hold`): a client that captures one frame at a time,
// waiting longer than `capture.linger` between frames, made each frame a new first capture
// request that the shields had to race (and lost). With `capture.hold: "connected"` (the
// default) a client that captured once keeps its capture session, and the shields, until
// it disconnects.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("A patient capturer against the client-side daemon", .serialized, .timeLimit(.minutes(4)))
struct PatientCaptureTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  /// The default policy but a short linger, to keep the test fast; `capture.hold` is left
  /// at its default.
  static let policy = "{version: 1, capture: {linger: \"300ms\"}}"
  /// Longer than the linger: on a daemon without the hold, every frame finds the shields down.
  static let patience: Duration = .milliseconds(500)

  /// The red secure window, and a daemon that has decided it is secure.
  static func setUp() async throws -> (XvfbServer, TestWindow, DaemonProcess) {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: Self.policy)
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    #expect(!daemon.isShielded(window.id))
    return (server, window, daemon)
  }

  /// The request sessions the daemon audited for this process's clients.
  static func sessionStarts(_ daemon: DaemonProcess) -> [[String: Any]] {
    daemon.auditEvents("session-start").filter { $0["kind"] as? String == "request" }
  }

  @Test("one frame every linger + 0.5 s: at most the first frame leaks; one session, audited with the attacker")
  func patientCapturer() async throws {
    let (server, window, daemon) = try await Self.setUp()

    // The attacker: one connection of its own, kept open, one GetImage of the root per frame.
    let attacker = try server.connect()
    var leaked: [Int] = []
    for frame in 0..<8 {
      if frame > 0 { try await Task.sleep(for: Self.patience) }
      leaked.append(try attacker.getImage(of: attacker.root).count(of: .red, in: Self.rect))
      if frame == 0 {
        // Not part of the attack: the first frame's shields are up before the wait starts,
        // so the waits that follow are all longer than the linger after them.
        try await daemon.waitShielded(window.id)
      }
    }
    let leakedFrames = leaked.filter { $0 > 0 }.count
    print("patient capturer: \(leakedFrames) of \(leaked.count) frames leaked (secret pixels per frame: \(leaked))")
    // The first request races the shields (no quarantine): that frame may leak. No later one.
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")

    // The daemon reads the last request through RECORD and publishes its state at most
    // every 50 ms: wait until it has counted all 8 (a positive wait, not a sleep).
    try await waitUntil("the daemon counted the 8 requests", timeout: .seconds(10)) {
      try daemon.state()?.sessions.first { $0.kind == .request }?.requests == 8
    }
    // One session, from the first request, still live (held: no end) while it is connected.
    let starts = Self.sessionStarts(daemon)
    #expect(starts.count == 1, "\(starts)")
    let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    #expect(starts.first?["exe"] as? String == exe, "\(starts)")
    #expect(starts.first?["pid"] as? Int == Int(getpid()), "\(starts)")
    #expect(starts.first?["request"] as? String == "GetImage", "\(starts)")
    let state = try #require(try daemon.state())
    #expect(state.policy.hold == "connected")
    let sessions = state.sessions.filter { $0.kind == .request }
    #expect(sessions.count == 1 && sessions.first?.endsIn == nil, "\(sessions)")
    #expect(daemon.auditEvents("session-end").isEmpty)

    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("the hold lasts while the client is connected; its disconnection ends it after the linger")
  func holdEndsWithTheConnection() async throws {
    let (server, window, daemon) = try await Self.setUp()
    let attacker = try server.connect()
    _ = try attacker.getImage(of: attacker.root)
    try await daemon.waitShielded(window.id)

    // Longer than the linger, then a positive marker: the daemon has handled everything
    // (its deadlines included) up to now, and the shields are still up.
    try await Task.sleep(for: Self.patience)
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(daemon.isShielded(window.id))
    #expect(try daemon.state()?.sessions.contains { $0.kind == .request && $0.endsIn == nil } == true)
    #expect(try attacker.getImage(of: attacker.root).count(of: .red, in: Self.rect) == 0)

    // The client disconnects: the session ends `linger` later, and the shields go down.
    attacker.disconnect()
    try await daemon.waitShielded(window.id, false)
    // The audit log is the daemon's stderr, read by another thread: wait for the record.
    try await waitUntil("the session's end audited", timeout: .seconds(10)) {
      !daemon.auditEvents("session-end").filter { $0["kind"] as? String == "request" }.isEmpty
    }
    let ends = daemon.auditEvents("session-end").filter { $0["kind"] as? String == "request" }
    #expect(ends.count == 1, "\(ends)")
    #expect(ends.first?["why"] as? String == "linger elapsed", "\(ends)")
    #expect(ends.first?["requests"] as? Int == 2, "\(ends)")
    #expect(try daemon.state()?.sessions.isEmpty == true)
    #expect(Self.sessionStarts(daemon).count == 1)

    await daemon.stop()
    window.close()
    await server.stop()
  }
}

// A known recorder that sits open (`capture.idle`): OBS open with no source hid the secure
// window for its whole life (12.2 of 12.2 s), x11vnc too. With `capture.idle` (default 5 s)
// the window is visible again once the recorder has been idle that long, and the recorder's
// next capture made the way real recorders make it finds the shield up. The recorder is a
// real X client process (`IdleRecorder`, C over libxcb) named in a `capture.known` rule.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("A known recorder that sits open (capture.idle)", .serialized, .timeLimit(.minutes(5)))
struct IdleRecorderTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  /// One frame of a 30 fps recorder: the wait between preparing a capture and making it.
  static let tickMs = 33

  struct Setup {
    let server: XvfbServer
    let window: TestWindow
    let daemon: DaemonProcess
    let recorder: BackgroundProcess
    let directory: String
    let viewer: TestXConnection
  }

  /// The default policy with the recorder as a known capturer (and `extra` capture keys).
  static func setUp(extra: String = "") async throws -> Setup {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-idle")
    let path = try await IdleRecorder.build(in: directory)
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {known: [{exe: \"\(path)\"}]\(extra)}}")
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    let r = Self.rect
    let recorder = try server.startBackground(
      path, [directory, "\(r.x)", "\(r.y)", "\(r.width)", "\(r.height)", "\(Self.tickMs)"])
    try await waitUntil("the recorder is ready", timeout: .seconds(10)) {
      String(decoding: recorder.stdout, as: UTF8.self).contains("ready")
    }
    return Setup(
      server: server, window: window, daemon: daemon, recorder: recorder, directory: directory,
      viewer: try server.connect())
  }

  /// Secret pixels a view from this test process sees (a GetImage of the root: allowed only
  /// in `trustedView`, elsewhere it would be a capture of its own).
  static func visible(_ s: Setup) throws -> Int {
    try s.viewer.getImage(of: s.viewer.root).count(of: .red, in: Self.rect)
  }

  /// Sends `command` to the recorder and returns the red pixels its capture read.
  static func capture(_ s: Setup, _ command: String) async throws -> Int {
    let before = String(decoding: s.recorder.stdout, as: UTF8.self).split(separator: "\n").count
    let tmp = s.directory + "/cmd.tmp"
    try (command + "\n").write(toFile: tmp, atomically: false, encoding: .utf8)
    rename(tmp, s.directory + "/cmd")
    var line = ""
    try await waitUntil("the recorder's \(command) capture", timeout: .seconds(10)) {
      let lines = String(decoding: s.recorder.stdout, as: UTF8.self).split(separator: "\n")
      guard lines.count > before else { return false }
      line = String(lines[before])
      return true
    }
    let parts = line.split(separator: " ")
    #expect(parts.first.map(String.init) == command.split(separator: " ").first.map(String.init), "\(line)")
    return Int(parts.last ?? "") ?? -1
  }

  /// Waits until the daemon has the shield up (the recorder's connection, its last capture),
  /// then until it has taken it down (the recorder went idle); returns the seconds between.
  static func waitIdle(_ s: Setup) async throws -> Double {
    try await s.daemon.waitShielded(s.window.id, true, timeout: .seconds(10))
    let start = ContinuousClock.now
    try await s.daemon.waitShielded(s.window.id, false, timeout: .seconds(20))
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
  }

  static func tearDown(_ s: Setup) async {
    await s.recorder.stop()
    s.viewer.disconnect()
    await s.daemon.stop()
    s.window.close()
    await s.server.stop()
    removeTree(s.directory)
  }

  @Test("shielded at connect, visible again after the idle time; a new connection's first frame: 0 secret pixels")
  func newConnection() async throws {
    let s = try await Self.setUp()
    try await s.daemon.waitShielded(s.window.id)
    var frames: [Int] = []
    var idleAfter: [Double] = []
    for _ in 0..<3 {
      idleAfter.append(try await Self.waitIdle(s))
      frames.append(try await Self.capture(s, "new"))
    }
    print("idle recorder, new connection: first frames \(frames) secret px; shield down \(idleAfter) s after up")
    #expect(frames.allSatisfy { $0 == 0 }, "\(frames)")
    // The first connection went idle once (and stays so: the new connections are other
    // clients); each new connection started a known session of its own at its connection.
    let idles = s.daemon.auditEvents("session-idle")
    #expect(!idles.isEmpty && idles.allSatisfy { ($0["exe"] as? String)?.hasSuffix("/idle-recorder") == true })
    let known = s.daemon.auditEvents("session-start").filter { $0["kind"] as? String == "known" }
    #expect(known.count == 4, "\(known)")
    await Self.tearDown(s)
  }

  /// On the connection it keeps, a prelude races the capture that follows it: the bench
  /// (row 10) measures 0, 16 and 33 ms (10/10, 1/10, 0/10 first frames leaked). The test
  /// checks the path with a margin no loaded machine eats: three frames of 30 fps.
  @Test("on the connection it keeps: a prelude (MIT-SHM Attach) three frames before the capture")
  func prelude() async throws {
    let s = try await Self.setUp()
    var frames: [Int] = []
    for _ in 0..<3 {
      _ = try await Self.waitIdle(s)
      frames.append(try await Self.capture(s, "prelude 100"))
    }
    print("idle recorder, prelude 100 ms before the capture: first frames \(frames) secret px")
    #expect(frames.allSatisfy { $0 == 0 }, "\(frames)")
    #expect(s.daemon.auditEvents("session-idle").filter { $0["kind"] as? String == "known" }.count == 3)
    let resumes = s.daemon.auditEvents("session-resume")
    #expect(resumes.contains { $0["why"] as? String == "MIT-SHM Attach" }, "\(resumes)")
    await Self.tearDown(s)
  }

  @Test("controls: no prelude leaks the first frame (the bound), then the shield is up; idle off: hidden throughout")
  func controls() async throws {
    let s = try await Self.setUp()
    _ = try await Self.waitIdle(s)
    let first = try await Self.capture(s, "bare")
    try await s.daemon.waitShielded(s.window.id)
    let second = try await Self.capture(s, "bare")
    print("idle recorder, capture with no prelude: first frame \(first) secret px (the bound), next \(second)")
    #expect(first == Self.rect.area, "the window was visible: the capture with no prelude reads it")
    #expect(second == 0)
    await Self.tearDown(s)

    // capture.idle off (today's behaviour before this change): the shield stays up while the
    // recorder sits open, 8 s (longer than the default idle time) sampled every 250 ms.
    let off = try await Self.setUp(extra: ", idle: \"off\"")
    try await off.daemon.waitShielded(off.window.id)
    var down = 0
    for _ in 0..<32 {
      try await Task.sleep(for: .milliseconds(250))
      if !off.daemon.isShielded(off.window.id) { down += 1 }
    }
    let frame = try await Self.capture(off, "bare")
    print("capture.idle off: shield down in \(down) of 32 samples over 8 s; a capture then: \(frame) secret px")
    #expect(down == 0)
    #expect(frame == 0)
    #expect(off.daemon.auditEvents("session-idle").isEmpty)
    await Self.tearDown(off)
  }

  @Test("the window a trusted view sees: hidden while the recorder is fresh, visible once it is idle")
  func trustedView() async throws {
    // The viewer is allowed (the test process), so its reads start no session.
    let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let s = try await Self.setUp(extra: ", allow: [{exe: \"\(exe)\"}]")
    try await s.daemon.waitShielded(s.window.id)
    let hidden = try Self.visible(s)
    let after = try await Self.waitIdle(s)
    let shown = try Self.visible(s)
    print("trusted view: \(hidden) secret px while the recorder is fresh, \(shown) once idle (\(after) s later)")
    #expect(hidden == 0)
    #expect(shown == Self.rect.area)
    await Self.tearDown(s)
  }
}

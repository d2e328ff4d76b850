// Learning per program (`capture.learn`): a one-shot screenshot tool
// unknown to the daemon gets its first shot (its capture request is seen after the server
// ran it: the documented limit of the client-side mode); the daemon learns its program
// file, and from its next use the tool's connection starts a `known` session before its
// first request: 0 secret pixels, `known=learned` in the audit. The positive control is
// the same tool with `capture.learn: false`: its later shots get the secret too.
//
// Each use waits until no session is live and the shield is down, so every shot is a
// fresh start of the tool. Runtime: about 30 s (2 tools × 3 uses, 2 tools × 2 uses).
//
// Not scrot: it asks for its picture about 4 ms after it connects, and the shield that a
// known session puts up at the connection loses that race in some uses (5 of 10 later
// shots in 5 runs here): pre-emption at the connection, learned or by `capture.known`, is
// not enough for it; row 10 of the bench counts its leaks.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("learning per program with the client-side daemon", .serialized, .timeLimit(.minutes(6)))
struct LearnTests {
  static let rect = PixelRect(x: 120, y: 100, width: 400, height: 260)

  struct Tool: Sendable, CustomTestStringConvertible {
    var name: String
    var shot: @Sendable (XvfbServer) async throws -> RGBImage
    var testDescription: String { name }
  }

  static let tools: [Tool] = [
    Tool(name: "import") { try await Capture.importRoot(on: $0) },
    Tool(name: "maim") { try await Capture.maim(on: $0, hideCursor: true) },
    Tool(name: "gnome-screenshot") { try await Capture.gnomeScreenshot(on: $0) },
    Tool(name: "flameshot") { try await Capture.flameshot(on: $0) },
  ]

  /// The tool's `uses` shots in a row on a new Xvfb with the red secure window and the
  /// daemon on `policy`: secret pixels per shot, and the daemon's audit.
  static func uses(_ tool: Tool, policy: String, uses: Int) async throws -> (
    secret: [Int], audit: [[String: Any]], history: CommandResult
  ) {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: policy)
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    var secret: [Int] = []
    for use in 1...uses {
      try await waitUntil("\(tool.name) use \(use): no session", timeout: .seconds(20)) {
        try daemon.state()?.sessions.isEmpty ?? false
      }
      try await daemon.waitShielded(window.id, false, timeout: .seconds(20))
      let image = try await tool.shot(server)
      secret.append(image.count(of: .red))
    }
    try await waitUntil("\(tool.name): every session ended", timeout: .seconds(20)) {
      try daemon.state()?.sessions.isEmpty ?? false
    }
    let audit = daemon.audit
    await daemon.stop()  // saves the history
    let history = try await Shieldctl.run(["history"], on: server)
    window.close()
    await server.stop()
    print("\(tool.name) \(policy): secret pixels per use \(secret) (of \(Self.rect.width * Self.rect.height))")
    return (secret, audit, history)
  }

  @Test("a screenshot tool's later uses get no secret pixel, known=learned", arguments: LearnTests.tools)
  func learned(_ tool: Tool) async throws {
    let r = try await Self.uses(tool, policy: "{version: 1, capture: {learn: true}}", uses: 3)
    // The first shot: the documented limit (printed, not asserted); every later one: none.
    #expect(
      r.secret.dropFirst().allSatisfy { $0 == 0 },
      "secret pixels per use: \(r.secret); \(r.audit.filter { ["capture-request", "session-start", "learned"].contains($0["event"] as? String ?? "") })"
    )
    let learned = r.audit.filter {
      $0["event"] as? String == "session-start" && $0["kind"] as? String == "known"
        && $0["known"] as? String == "learned"
    }
    #expect(learned.count >= 2, "known=learned session starts: \(learned)")
    // Named by its program (import runs as /usr/bin/import-im6.q16).
    #expect(learned.allSatisfy { ($0["exe"] as? String)?.contains(tool.name) == true }, "\(learned)")
    #expect(r.audit.contains { $0["event"] as? String == "learned" }, "no 'learned' record")
    // The history on disk names the tool as one that captured (the built shieldctl).
    #expect(r.history.succeeded, "\(r.history)")
    #expect(
      r.history.stdoutText.split(separator: "\n").contains { $0.hasPrefix("captured") },
      "\(r.history)")
  }

  @Test(
    "positive control: with capture.learn false the later shots get the secret", arguments: LearnTests.tools)
  func notLearned(_ tool: Tool) async throws {
    let r = try await Self.uses(tool, policy: "{version: 1, capture: {learn: false}}", uses: 2)
    #expect(r.secret.count == 2 && r.secret.allSatisfy { $0 > 0 }, "secret pixels per use: \(r.secret)")
    #expect(!r.audit.contains { $0["known"] as? String == "learned" })
    #expect(r.history.stdoutText.hasPrefix("no programs learned"), "\(r.history)")
  }

  /// `shieldctl history` on the built binary: list, forget (0), forget an unknown path (1),
  /// usage errors (64), and a broken file kept aside.
  @Test("shieldctl history lists, forgets and keeps a broken file aside")
  func historyCommand() async throws {
    let server = try await XvfbServer.start()
    defer { Task { await server.stop() } }
    let dir = server.environment["XDG_STATE_HOME"]! + "/captureshield"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    var h = CaptureHistory()
    h.noteCapture(.init(dev: 1, ino: 2, size: 3, mtime: 4), path: "/usr/bin/shot", at: 1)
    for t in 0..<3 { h.noteStart(.init(dev: 1, ino: 5, size: 3, mtime: 4), path: "/usr/bin/xclock", at: Double(t)) }
    try HistoryFile.write(h, to: dir + "/history.json")
    let list = try await Shieldctl.run(["history"], on: server)
    #expect(list.status == .exited(0) && list.stdoutText.contains("captured /usr/bin/shot"), "\(list)")
    #expect(list.stdoutText.contains("quiet    /usr/bin/xclock"), "\(list)")
    let forget = try await Shieldctl.run(["history", "--forget", "/usr/bin/shot"], on: server)
    #expect(forget.status == .exited(0), "\(forget)")
    let again = try await Shieldctl.run(["history", "--forget", "/usr/bin/shot"], on: server)
    #expect(again.status == .exited(1), "\(again)")
    let both = try await Shieldctl.run(["history", "--forget", "/x", "--clear"], on: server)
    #expect(both.status == .exited(64), "\(both)")
    let clear = try await Shieldctl.run(["history", "--clear"], on: server)
    #expect(clear.status == .exited(0) && clear.stdoutText.contains("forgot 1 program"), "\(clear)")
    try "{broken".write(toFile: dir + "/history.json", atomically: true, encoding: .utf8)
    let broken = try await Shieldctl.run(["history"], on: server)
    #expect(broken.status == .exited(1) && broken.stderrText.contains("broken"), "\(broken)")
    // The daemon keeps it aside and starts empty, with an error record naming it.
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, capture: {learn: true}}")
    #expect(FileManager.default.fileExists(atPath: dir + "/history.json.broken"))
    #expect(
      daemon.audit.contains {
        $0["event"] as? String == "error" && ($0["message"] as? String)?.contains("history.json.broken") == true
      }, "\(daemon.audit)")
    await daemon.stop()
  }
}

// An allowed program with code injected into it: an allow rule on
// `exe` trusts whatever runs inside that program. A library preloaded into an allowed
// capture tool (or found first in a directory others can write, LD_LIBRARY_PATH), or a
// tracer that can write code into it, captured with the program's trust
// and started no capture session. By default (`capture.allowInjected: false`) the allow
// rule no longer counts for such a process: the capture starts a session as any other
// client's would, and an `allow-refused` record names the reason.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("An allowed program with injected code", .serialized, .timeLimit(.minutes(4)))
struct InjectedAllowTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  static let policy = "{version: 1, capture: {allow: [{exe: \"*/xwd\"}], linger: \"300ms\"}}"

  /// A harmless library to preload: the libxcb xwd loads anyway (preloading it changes
  /// nothing but the environment), as `ldd` finds it.
  static func harmlessLibrary() async throws -> String {
    let ldd = try await runCommand("sh", ["-c", "ldd \"$(command -v xwd)\""])
    let path = ldd.stdoutText.split(separator: "\n").compactMap { line -> String? in
      guard line.contains("libxcb.so.1 =>"), let slash = line.firstIndex(of: "/") else { return nil }
      return line[slash...].split(separator: " ").first.map(String.init)
    }.first
    return try #require(path, "ldd found no libxcb.so.1 for xwd: \(ldd.stdoutText)")
  }

  /// Runs `xwd -root` with `prefix` before it (an `env` assignment, a tracer) and returns
  /// the secret (red) pixels it read.
  static func xwdRoot(_ prefix: [String], on server: XvfbServer) async throws -> Int {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-injected")
    defer { removeTree(directory) }
    let file = directory + "/root.xwd"
    let result = try await runCommand(
      prefix[0], Array(prefix.dropFirst()) + ["xwd", "-root", "-silent", "-out", file],
      environment: server.environment, timeout: Capture.toolTimeout)
    #expect(result.succeeded, "\(prefix) xwd: \(result)")
    return try await Capture.convertToPPM(file, format: "xwd", environment: server.environment)
      .count(of: .red, in: Self.rect)
  }

  /// Like `xwdRoot`, but xwd stays connected until `whileConnected` returns: it writes its
  /// image into a pipe that a holder opens at once and reads only then (xwd blocks once the
  /// pipe is full, after its GetImage). So the daemon finds xwd's process by its connection
  /// whatever the machine's load: a client gone before the daemon's lookup starts a session
  /// without a name (fail safe, named in the README), which is not what this test is about.
  static func xwdRootHeld(
    _ prefix: [String], on server: XvfbServer, whileConnected: () async throws -> Void
  ) async throws -> Int {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-injected")
    defer { removeTree(directory) }
    let fifo = directory + "/root.fifo"
    let go = directory + "/go"
    let file = directory + "/root.xwd"
    try #require(mkfifo(fifo, 0o600) == 0, "mkfifo: errno \(errno)")
    let holder = try server.startBackground(
      "/bin/sh", ["-c", "exec 3<\"$0\"; while [ ! -e \"$1\" ]; do sleep 0.05; done; cat <&3 >\"$2\"", fifo, go, file])
    let xwd = try server.startBackground(
      prefix[0], Array(prefix.dropFirst()) + ["xwd", "-root", "-silent", "-out", fifo])
    do {
      try await whileConnected()
    } catch {
      await xwd.stop()
      await holder.stop()
      throw error
    }
    #expect(xwd.isRunning, "xwd ended before its image was read")
    #expect(FileManager.default.createFile(atPath: go, contents: nil))
    let held = try await holder.waitForExit(timeout: Capture.toolTimeout)
    #expect(held.succeeded, "\(held)")
    let result = try await xwd.waitForExit(timeout: Capture.toolTimeout)
    #expect(result.succeeded, "\(prefix) xwd: \(result)")
    return try await Capture.convertToPPM(file, format: "xwd", environment: server.environment)
      .count(of: .red, in: Self.rect)
  }

  @Test(
    "an allowed xwd started with LD_PRELOAD, traced, or with LD_LIBRARY_PATH naming a directory others can write, is not allowed: its capture starts a session, audited",
    arguments: ["LD_PRELOAD", "ptrace", "LD_LIBRARY_PATH"])
  func injectedAllowedToolIsNotAllowed(_ how: String) async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: Self.policy)

    // The same program without injection is allowed: it reads the window, no session.
    #expect(try await Self.xwdRoot(["env"], on: server) == 200 * 150)
    try await waitUntil("the daemon audits the allowed run's capture request", timeout: .seconds(10)) {
      daemon.auditEvents("capture-request").count >= 1
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(daemon.auditEvents("session-start").isEmpty)
    #expect(daemon.auditEvents("allow-refused").isEmpty)
    // A library path of root's own directories is no injection.
    let systemLibraries = "/usr/lib:/lib"
    if how == "LD_LIBRARY_PATH" {
      #expect(try await Self.xwdRoot(["env", "LD_LIBRARY_PATH=" + systemLibraries], on: server) == 200 * 150)
      try await waitUntil("the daemon audits that run's capture request", timeout: .seconds(10)) {
        daemon.auditEvents("capture-request").count >= 2
      }
      try await daemon.waitUntilCaughtUp(retitling: window)
      #expect(daemon.auditEvents("session-start").isEmpty)
      #expect(daemon.auditEvents("allow-refused").isEmpty)
    }

    // With injection: a capture session starts at its request (the first frame races the
    // shields, as for any client without quarantine: not asserted), audited.
    let library = try await Self.harmlessLibrary()
    // A directory anyone may write a libxcb into (left empty here: xwd loads its own).
    let writable = try makeTemporaryDirectory(prefix: "captureshield-libs")
    defer { removeTree(writable) }
    chmod(writable, 0o777)
    let prefix =
      switch how {
      case "LD_PRELOAD": ["env", "LD_PRELOAD=" + library]
      case "LD_LIBRARY_PATH": ["env", "LD_LIBRARY_PATH=" + writable + ":/usr/lib"]
      default: ["strace", "-f", "-qq", "-o", "/dev/null"]
      }
    let leaked = try await Self.xwdRootHeld(prefix, on: server) {
      try await waitUntil("the daemon starts a session for the injected xwd", timeout: .seconds(10)) {
        !daemon.auditEvents("session-start").isEmpty
      }
    }
    print("injected allowed xwd (\(how)): read \(leaked) of \(200 * 150) secret pixels (its first frame)")
    let starts = daemon.auditEvents("session-start")
    #expect(starts.count == 1 && (starts.first?["exe"] as? String)?.hasSuffix("/xwd") == true, "\(starts)")
    let refused = daemon.auditEvents("allow-refused")
    #expect(refused.count == 1, "\(refused)")
    let why = refused.first?["why"] as? String ?? ""
    if how == "LD_PRELOAD" {
      #expect(why == "LD_PRELOAD=" + library, "\(refused)")
    } else if how == "LD_LIBRARY_PATH" {
      #expect(why == "LD_LIBRARY_PATH names \(writable) (not root's, or writable by others)", "\(refused)")
    } else {
      #expect(why.hasPrefix("traced by PID "), "\(refused)")
    }
    #expect((refused.first?["exe"] as? String)?.hasSuffix("/xwd") == true, "\(refused)")

    // And the shields went up for it.
    try await daemon.waitShielded(window.id)
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("capture.allowInjected: true keeps trusting an allowed program started with LD_PRELOAD")
  func allowInjectedTurnsTheCheckOff() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {allow: [{exe: \"*/xwd\"}], allowInjected: true}}")
    let library = try await Self.harmlessLibrary()
    #expect(try await Self.xwdRoot(["env", "LD_PRELOAD=" + library], on: server) == 200 * 150)
    try await waitUntil("the daemon audits the run's capture request", timeout: .seconds(10)) {
      daemon.auditEvents("capture-request").count >= 1
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(daemon.auditEvents("session-start").isEmpty)
    #expect(daemon.auditEvents("allow-refused").isEmpty)
    await daemon.stop()
    window.close()
    await server.stop()
  }
}

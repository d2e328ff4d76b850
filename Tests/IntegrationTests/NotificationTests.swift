// The desktop notification of a capture, against a real notification
// server: the test's own dbus-daemon (a private session bus, never the machine's) and
// dunst on the test's Xvfb.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

/// A private session bus: `dbus-daemon` with a configuration of its own that listens in a
/// temporary directory and starts no services (the `--session` configuration would
/// activate dunst from /usr/share/dbus-1/services by itself, and then "no notification
/// server" could not be tested). Stopped with the test.
final class PrivateSessionBus: @unchecked Sendable {
  let process: BackgroundProcess
  let directory: String
  let address: String

  static func start() async throws -> PrivateSessionBus {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-bus")
    let config = """
      <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
      <busconfig>
        <type>session</type>
        <listen>unix:path=\(directory)/bus</listen>
        <auth>EXTERNAL</auth>
        <policy context="default">
          <allow send_destination="*" eavesdrop="true"/>
          <allow eavesdrop="true"/>
          <allow own="*"/>
        </policy>
      </busconfig>
      """
    try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
    let process = try BackgroundProcess(
      "dbus-daemon", ["--config-file=\(directory)/bus.conf", "--nofork", "--print-address=1"])
    var address = ""
    try await waitUntil("dbus-daemon prints its address", timeout: .seconds(10)) {
      guard process.isRunning else {
        throw TestWindowError.timedOut("dbus-daemon exited: \(String(decoding: process.stderr, as: UTF8.self))")
      }
      address = String(decoding: process.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
      return address.hasPrefix("unix:")
    }
    return PrivateSessionBus(process: process, directory: directory, address: address)
  }

  private init(process: BackgroundProcess, directory: String, address: String) {
    self.process = process
    self.directory = directory
    self.address = address
  }

  func stop() async { await process.stop() }
  deinit { removeTree(directory) }
}

@Suite("Desktop notification of a capture", .serialized, .timeLimit(.minutes(4)))
struct NotificationTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  /// This process's environment for the test's X server, with the session bus given (or,
  /// `address` nil, no bus at all: no variable and an empty runtime directory).
  static func environment(bus address: String?, runtimeDirectory: String) -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    env["DBUS_SESSION_BUS_ADDRESS"] = address
    env["XDG_RUNTIME_DIR"] = runtimeDirectory
    return env
  }

  /// The notifications dunst has shown (moved to its history first), as `dunstctl history`
  /// prints them (JSON).
  /// Starts dunst on `server` (with the server's environment: the test's bus) and waits
  /// until it answers `dunstctl`.
  static func startDunst(on server: XvfbServer) async throws -> BackgroundProcess {
    let dunst = try server.startBackground("dunst")
    try await waitUntil("dunst answers on the test's bus", timeout: .seconds(15)) {
      guard dunst.isRunning else {
        throw TestWindowError.timedOut("dunst exited: \(String(decoding: dunst.stderr, as: UTF8.self))")
      }
      return try await server.run("dunstctl", ["count", "displayed"], timeout: .seconds(10)).succeeded
    }
    return dunst
  }

  static func dunstHistory(_ server: XvfbServer) async throws -> String {
    _ = try await server.run("dunstctl", ["close-all"], timeout: .seconds(10))
    let r = try await server.run("dunstctl", ["history"], timeout: .seconds(10))
    return r.stdoutText
  }

  @Test("a capture: dunst shows who captures and how many windows are hidden")
  func notificationArrives() async throws {
    let runtime = try makeTemporaryDirectory(prefix: "captureshield-runtime")
    defer { removeTree(runtime) }
    chmod(runtime, 0o700)
    let bus = try await PrivateSessionBus.start()
    let server = try await XvfbServer.start(environment: Self.environment(bus: bus.address, runtimeDirectory: runtime))
    let dunst = try await Self.startDunst(on: server)
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, capture: {linger: \"3s\"}}")
    // The daemon's start-up probe found the server.
    try await waitUntil("the daemon says notifications are on", timeout: .seconds(10)) {
      daemon.auditEvents("notifications").contains { $0["enabled"] as? Bool == true }
    }
    try await daemon.waitUntilCaughtUp(retitling: window)

    _ = try await CaptureMethod.xwdRoot.capture(window: window.id, on: server)
    try await waitUntil("a capture-request audit record naming xwd", timeout: .seconds(10)) {
      daemon.auditEvents("capture-request").contains { ($0["exe"] as? String)?.hasSuffix("/xwd") == true }
    }
    let request = try #require(
      daemon.auditEvents("capture-request").first { ($0["exe"] as? String)?.hasSuffix("/xwd") == true })
    let pid = try #require(request["pid"] as? Int)
    var history = ""
    try await waitUntil("dunst shows the capture notice", timeout: .seconds(15), interval: .milliseconds(200)) {
      history = try await Self.dunstHistory(server)
      return history.contains("xwd (pid \(pid))")
    }
    #expect(history.contains("Screen capture: 1 secure window hidden"), "\(history)")
    #expect(history.contains("xwd (pid \(pid)) is capturing the screen"), "\(history)")
    #expect(history.contains("hides 1 secure window from it"), "\(history)")
    #expect(history.contains("CaptureShield"), "\(history)")  // app_name
    // Audited as well, with the same facts.
    let notice = try #require(daemon.auditEvents("capture-notice").first)
    #expect(notice["pid"] as? Int == pid)
    #expect(notice["windows"] as? Int == 1)
    #expect(notice["program"] as? String == "xwd")

    await daemon.stop()
    window.close()
    await dunst.stop()
    await server.stop()
    await bus.stop()
  }

  /// The Notify calls and their replies a `dbus-monitor` saw: each call's `replaces_id`,
  /// and the id its reply returned (nil: no reply yet).
  static func notifyCalls(_ monitor: String) -> [(replaces: UInt32, id: UInt32?)] {
    var calls: [(sender: String, serial: String, replaces: UInt32, id: UInt32?)] = []
    let lines = monitor.split(separator: "\n").map(String.init)
    func field(_ line: String, _ name: String) -> String? {
      guard let r = line.range(of: " \(name)=") else { return nil }
      return String(line[r.upperBound...].prefix { $0 != " " && $0 != ";" })
    }
    for (i, line) in lines.enumerated() {
      if line.hasPrefix("method call"), line.contains("member=Notify"), i + 2 < lines.count,
        let sender = field(line, "sender"), let serial = field(line, "serial"),
        let replaces = UInt32(
          lines[i + 2].trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "uint32 ", with: ""))
      {
        calls.append((sender, serial, replaces, nil))
      } else if line.hasPrefix("method return"), let reply = field(line, "reply_serial"),
        let to = field(line, "destination"),
        let k = calls.firstIndex(where: { $0.serial == reply && $0.sender == to }), i + 1 < lines.count,
        let id = UInt32(lines[i + 1].trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "uint32 ", with: ""))
      {
        calls[k].id = id
      }
    }
    return calls.map { ($0.replaces, $0.id) }
  }

  @Test("a second program's capture replaces the notice (replaces_id) instead of stacking a second one")
  func secondNoticeReplacesTheFirst() async throws {
    let runtime = try makeTemporaryDirectory(prefix: "captureshield-runtime")
    defer { removeTree(runtime) }
    chmod(runtime, 0o700)
    let bus = try await PrivateSessionBus.start()
    let server = try await XvfbServer.start(environment: Self.environment(bus: bus.address, runtimeDirectory: runtime))
    let dunst = try await Self.startDunst(on: server)
    // Everything said to the notification server (the test's own bus lets it eavesdrop).
    let monitor = try server.startBackground(
      "dbus-monitor",
      ["--address", bus.address, "interface='org.freedesktop.Notifications',member='Notify'", "type='method_return'"])
    // It has become a monitor (it loses its own name then).
    try await waitUntil("dbus-monitor is monitoring", timeout: .seconds(10)) {
      String(decoding: monitor.stdout, as: UTF8.self).contains("member=NameLost")
    }
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, capture: {linger: \"3s\"}}")
    try await waitUntil("the daemon says notifications are on", timeout: .seconds(10)) {
      daemon.auditEvents("notifications").contains { $0["enabled"] as? Bool == true }
    }
    try await daemon.waitUntilCaughtUp(retitling: window)

    _ = try await CaptureMethod.xwdRoot.capture(window: window.id, on: server)
    _ = try await CaptureMethod.importRoot.capture(window: window.id, on: server)
    // The second notice waits for the rate limit (5 s after the first), then replaces it.
    var calls: [(replaces: UInt32, id: UInt32?)] = []
    try await waitUntil("two Notify calls answered", timeout: .seconds(20), interval: .milliseconds(100)) {
      calls = Self.notifyCalls(String(decoding: monitor.stdout, as: UTF8.self))
      return calls.count >= 2 && calls.allSatisfy { $0.id != nil }
    }
    #expect(calls.count == 2, "\(calls)")
    #expect(calls[0].replaces == 0)
    #expect(calls[1].replaces == calls[0].id, "the second notice replaces the first: \(calls)")
    #expect(calls[1].id == calls[0].id)
    let programs = daemon.auditEvents("capture-notice").compactMap { $0["program"] as? String }
    // `import` is ImageMagick's, e.g. /usr/bin/import-im6.q16 behind the alternatives link.
    #expect(programs.count == 2 && programs.first == "xwd" && programs.last?.hasPrefix("import") == true, "\(programs)")
    // dunst answered both calls: one notification on screen, not two.
    let displayed = try await server.run("dunstctl", ["count", "displayed"], timeout: .seconds(10))
    #expect(displayed.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "\(displayed)")
    let history = try await Self.dunstHistory(server)
    #expect(history.contains("\(programs.last ?? "import") (pid "), "\(history)")
    #expect(!history.contains("xwd (pid "), "the first notice was replaced, not kept: \(history)")

    await daemon.stop()
    window.close()
    await monitor.stop()
    await dunst.stop()
    await server.stop()
    await bus.stop()
  }

  @Test("under the Xorg module: a censored xwd reaches dunst as censored, with its pid and the window count")
  func censoredNotificationArrives() async throws {
    #expect(
      XorgModule.isBuilt,
      "build the module first: make xorg-module")
    let runtime = try makeTemporaryDirectory(prefix: "captureshield-runtime")
    defer { removeTree(runtime) }
    chmod(runtime, 0o700)
    let bus = try await PrivateSessionBus.start()
    let server = try await XvfbServer.startXorg(
      moduleDirectory: XorgModule.directory, moduleOptions: XorgModule.snippetOptions(alsoTrusting: []),
      environment: Self.environment(bus: bus.address, runtimeDirectory: runtime))
    let dunst = try await Self.startDunst(on: server)
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    #expect(try daemon.state()?.enforcement?.kind == "server")
    try await waitUntil("the daemon says notifications are on", timeout: .seconds(10)) {
      daemon.auditEvents("notifications").contains { $0["enabled"] as? Bool == true }
    }
    try await waitUntil("the daemon protects the tagged window", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.protected == true } ?? false
    }

    let frames = try await CaptureMethod.xwdRoot.capture(window: window.id, on: server)
    #expect(frames.counts(of: .red) == [0], "secret pixels in xwd's frame")
    try await waitUntil("a capture-censored audit record naming xwd", timeout: .seconds(10)) {
      daemon.auditEvents("capture-censored").contains { ($0["exe"] as? String)?.hasSuffix("/xwd") == true }
    }
    let censored = try #require(
      daemon.auditEvents("capture-censored").first { ($0["exe"] as? String)?.hasSuffix("/xwd") == true })
    let pid = try #require(censored["pid"] as? Int)
    var history = ""
    try await waitUntil("dunst shows the capture notice", timeout: .seconds(15), interval: .milliseconds(200)) {
      history = try await Self.dunstHistory(server)
      return history.contains("xwd (pid \(pid))")
    }
    #expect(history.contains("Screen capture: 1 secure window censored"), "\(history)")
    #expect(history.contains("xwd (pid \(pid)) tried to read the screen"), "\(history)")
    #expect(history.contains("censors 1 secure window from it"), "\(history)")

    await daemon.stop()
    window.close()
    await dunst.stop()
    await server.stop()
    await bus.stop()
  }

  enum Missing: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// A session bus, but no notification server on it.
    case server
    /// No session bus at all.
    case bus
    var testDescription: String { "no \(rawValue)" }
  }

  @Test(
    "without a notification server (or a bus) the capture is still blanked, and the daemon says notifications are off",
    arguments: Missing.allCases)
  func withoutServer(_ missing: Missing) async throws {
    let runtime = try makeTemporaryDirectory(prefix: "captureshield-runtime")
    defer { removeTree(runtime) }
    chmod(runtime, 0o700)
    let bus = missing == .server ? try await PrivateSessionBus.start() : nil
    let server = try await XvfbServer.start(
      environment: Self.environment(bus: bus?.address, runtimeDirectory: runtime))
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server)  // shield.when: always
    let why = missing == .server ? "no notification server on the session bus" : "no session bus"
    try await waitUntil("the daemon says notifications are off (\(why))", timeout: .seconds(10)) {
      daemon.auditEvents("notifications").contains {
        $0["enabled"] as? Bool == false && ($0["why"] as? String)?.hasPrefix(why) == true
      }
    }
    try await daemon.waitShielded(window.id)

    let frames = try await CaptureMethod.xwdRoot.capture(window: window.id, on: server)
    #expect(frames.counts(of: .red) == [0], "secret pixels in xwd's frame")
    // The notice was decided (and handed to the sender, which drops it)...
    try await waitUntil("a capture-notice audit record", timeout: .seconds(10)) {
      !daemon.auditEvents("capture-notice").isEmpty
    }
    // ... and nothing hangs: the loop handles events and answers the status ping.
    try await daemon.waitUntilCaughtUp(retitling: window)
    let status = try await Shieldctl.run(["status"], on: server)
    #expect(status.succeeded, "\(status)")
    #expect(daemon.auditEvents("notifications").allSatisfy { $0["enabled"] as? Bool == false })
    #expect(daemon.process.isRunning)

    await daemon.stop()
    window.close()
    await server.stop()
    await bus?.stop()
  }
}

// Client-side mode of secure input: without the Xorg module the
// daemon cannot keep keyboard listeners from the keys, so it notices them (RECORD), audits
// each by name (`keylogger-suspected`) and tells the user when a secure window has the
// focus. Real listeners on Xvfb: `xinput test-xi2 --root`, `xev -id <secure window>`, and
// the C programs of `Keyloggers` (a keyboard grab, an AnyKey grab, a keymap poller, a
// RECORD client). Detection latency is printed, never asserted.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Keyboard listeners without the Xorg module", .serialized, .timeLimit(.minutes(5)))
struct KeyloggerTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  /// The `keylogger-suspected` records of `kind` whose executable is `exe`.
  static func suspected(_ d: DaemonProcess, kind: String? = nil, exe: String) -> [[String: Any]] {
    d.auditEvents("keylogger-suspected").filter {
      ($0["exe"] as? String) == exe && (kind == nil || $0["kind"] as? String == kind)
    }
  }

  /// The audit record's time (ISO 8601 with milliseconds).
  static func time(_ record: [String: Any]) -> Date? {
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return (record["time"] as? String).flatMap { f.date(from: $0) }
  }

  /// Starts `program` and waits until the daemon audits it as `kind`; prints the time from
  /// its start to the audit record. Returns the running listener.
  static func expectAudited(
    _ daemon: DaemonProcess, on server: XvfbServer, _ program: String, _ args: [String] = [], exe: String, kind: String
  ) async throws -> BackgroundProcess {
    let started = Date()
    let p = try server.startBackground(program, args)
    var record: [String: Any]?
    try await waitUntil("a keylogger-suspected (\(kind)) record for \(exe), pid \(p.pid)", timeout: .seconds(10)) {
      guard p.isRunning else {
        throw TestWindowError.timedOut("\(program) exited: \(String(decoding: p.stderr, as: UTF8.self))")
      }
      record = suspected(daemon, kind: kind, exe: exe).first { $0["pid"] as? Int == Int(p.pid) }
      return record != nil
    }
    let r = try #require(record)
    #expect((r["what"] as? String)?.isEmpty == false, "\(r)")
    if let t = time(r) {
      print("keylogger detection: \(kind) by \(exe): \(Int(t.timeIntervalSince(started) * 1000)) ms from its start")
    }
    return p
  }

  static func executable(_ name: String, _ server: XvfbServer) throws -> String {
    try #require(findExecutable(name, environment: server.environment))
  }

  @Test("each listener kind is audited by name, and the focused secure window's notice names them all")
  func everyKindAudited() async throws {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-keyloggers")
    defer { removeTree(directory) }
    let programs = try await Keyloggers.build(in: directory)
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(daemon.auditEvents("keylogger-watch").first?["enabled"] as? Bool == true)

    var listeners: [BackgroundProcess] = []
    let xinput = try Self.executable("xinput", server)
    let xev = try Self.executable("xev", server)
    listeners.append(
      try await Self.expectAudited(
        daemon, on: server, xinput, ["test-xi2", "--root"], exe: xinput, kind: "xi2-raw-keys"))
    listeners.append(
      try await Self.expectAudited(
        daemon, on: server, xev, ["-id", hex(window.id)], exe: xev, kind: "keypress-selected"))
    for (name, kind) in [
      ("kl-grab-anykey", "anykey-grab"), ("kl-poll-keymap", "keymap-polling"), ("kl-record", "record-key-events"),
      ("kl-grab-keyboard", "keyboard-grab"),
    ] {
      let path = try #require(programs[name])
      listeners.append(try await Self.expectAudited(daemon, on: server, path, exe: path, kind: kind))
    }
    // Once per client and kind: xinput's second selection (device 1) added no record.
    #expect(Self.suspected(daemon, kind: "xi2-raw-keys", exe: xinput).count == 1)

    // The secure window gets the focus: one notice names every listener.
    let focus = try await server.run("xdotool", ["windowfocus", String(window.id)])
    #expect(focus.succeeded, "\(focus)")
    try await waitUntil("a keylogger-notice for the secure window", timeout: .seconds(10)) {
      !daemon.auditEvents("keylogger-notice").isEmpty
    }
    let notice = try #require(daemon.auditEvents("keylogger-notice").first)
    #expect(notice["window"] as? String == hex(window.id))
    let named = notice["programs"] as? String ?? ""
    for (p, l) in zip(
      ["xinput", "xev"] + ["kl-grab-anykey", "kl-poll-keymap", "kl-record", "kl-grab-keyboard"], listeners)
    {
      #expect(named.contains("\(p) (pid \(l.pid))"), "\(named)")
    }
    #expect(notice["new"] as? Int == 6)
    // The same focus period: focusing it again says nothing more.
    _ = try await server.run("xdotool", ["windowfocus", String(window.id)])
    let marker = try await Self.expectAudited(
      daemon, on: server, xev, ["-root"], exe: xev, kind: "keypress-selected")
    try await waitUntil("a second notice, for the new listener only", timeout: .seconds(10)) {
      daemon.auditEvents("keylogger-notice").count >= 2
    }
    let second = daemon.auditEvents("keylogger-notice")
    #expect(second.count == 2, "\(second)")
    #expect(second.last?["new"] as? Int == 1, "\(second)")

    for l in listeners + [marker] { await l.stop() }
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("the notice reaches dunst when the secure window gets the focus, not another window")
  func noticeReachesDunst() async throws {
    let runtime = try makeTemporaryDirectory(prefix: "captureshield-runtime")
    defer { removeTree(runtime) }
    chmod(runtime, 0o700)
    let bus = try await PrivateSessionBus.start()
    let server = try await XvfbServer.start(
      environment: NotificationTests.environment(bus: bus.address, runtimeDirectory: runtime))
    let dunst = try await NotificationTests.startDunst(on: server)
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let plain = try await TestWindow.open(
      on: server, rect: PixelRect(x: 400, y: 100, width: 200, height: 150), color: .blue, secure: false)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    try await daemon.waitUntilCaughtUp(retitling: window)
    let xinput = try Self.executable("xinput", server)
    let xev = try Self.executable("xev", server)
    let listener = try await Self.expectAudited(
      daemon, on: server, xinput, ["test-xi2", "--root"], exe: xinput, kind: "xi2-raw-keys")

    // Negative control: a window that is not secure gets the focus; a new listener's
    // finding makes the daemon look at the focus (after the focus moved): no notice.
    #expect(try await server.run("xdotool", ["windowfocus", String(plain.id)]).succeeded)
    let marker = try await Self.expectAudited(
      daemon, on: server, xev, ["-id", hex(plain.id)], exe: xev, kind: "keypress-selected")
    #expect(daemon.auditEvents("keylogger-notice").isEmpty)

    // The secure window gets the focus: dunst shows who listens.
    let focused = Date()
    #expect(try await server.run("xdotool", ["windowfocus", String(window.id)]).succeeded)
    var history = ""
    try await waitUntil("dunst shows the keyboard notice", timeout: .seconds(15), interval: .milliseconds(200)) {
      history = try await NotificationTests.dunstHistory(server)
      return history.contains("xinput (pid \(listener.pid))")
    }
    if let t = daemon.auditEvents("keylogger-notice").first.flatMap(Self.time) {
      print("keylogger notice: \(Int(t.timeIntervalSince(focused) * 1000)) ms after the secure window got the focus")
    }
    #expect(history.contains("may read what you type"), "\(history)")
    #expect(history.contains("xev (pid \(marker.pid))"), "\(history)")
    #expect(history.contains("selected raw key events of every keyboard"), "\(history)")
    let notices = daemon.auditEvents("keylogger-notice")
    #expect(notices.count == 1, "\(notices)")
    #expect(notices.first?["window"] as? String == hex(window.id))

    await marker.stop()
    await listener.stop()
    await daemon.stop()
    window.close()
    plain.close()
    await dunst.stop()
    await server.stop()
    await bus.stop()
  }

  @Test("the keyboard watch's connection killed by another client: audited, a new watch takes over")
  func watchKilled() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    try await daemon.waitUntilCaughtUp(retitling: window)
    let started = try #require(daemon.auditEvents("keylogger-watch").first)
    let clients = (started["clients"] as? String ?? "").split(separator: ",").map {
      UInt32($0.trimmingCharacters(in: .whitespaces).dropFirst(2), radix: 16)
    }
    let control = try #require(clients.first ?? nil)
    // Its control connection's one resource is the RECORD context, its first id (the base).
    let attacker = try server.connect()
    try attacker.check(xcb_kill_client_checked(attacker.raw, control), "KillClient(keyboard watch)")
    try await waitUntil("the daemon audits the killed keyboard watch", timeout: .seconds(10)) {
      daemon.auditEvents("connection-killed").contains { $0["connection"] as? String == "keyboard watch" }
    }
    try await waitUntil("a new keyboard watch", timeout: .seconds(10)) {
      daemon.auditEvents("keylogger-watch").count >= 2
    }
    let xinput = try Self.executable("xinput", server)
    let listener = try await Self.expectAudited(
      daemon, on: server, xinput, ["test-xi2", "--root"], exe: xinput, kind: "xi2-raw-keys")
    await listener.stop()
    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("a program keyloggers.allow names is neither audited nor named; without the rule it is")
  func allowedProgram() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, keyloggers: {allow: [{exe: \"*/xinput\"}]}}")
    try await daemon.waitUntilCaughtUp(retitling: window)
    let xinput = try Self.executable("xinput", server)
    let xev = try Self.executable("xev", server)
    let stdbuf = try Self.executable("stdbuf", server)
    // xinput's selection is in place once it prints a key typed after it started.
    let allowed = try server.startBackground(stdbuf, ["-oL", xinput, "test-xi2", "--root"])
    try await waitUntil("xinput prints a typed key", timeout: .seconds(10), interval: .milliseconds(100)) {
      _ = try await server.run("xdotool", ["key", "x"])
      return String(decoding: allowed.stdout, as: UTF8.self).contains("RawKeyPress")
    }
    // The window manager (the owner of WM_S0) grabs the keyboard on the root: not named.
    let directory = try makeTemporaryDirectory(prefix: "captureshield-keyloggers")
    defer { removeTree(directory) }
    let wmGrab = try #require(try await Keyloggers.build(in: directory)["kl-wm-grab"])
    let wm = try server.startBackground(wmGrab)
    try await waitUntil("the window manager grabbed the keyboard", timeout: .seconds(10)) {
      guard wm.isRunning else {
        throw TestWindowError.timedOut("kl-wm-grab exited: \(String(decoding: wm.stderr, as: UTF8.self))")
      }
      return String(decoding: wm.stdout, as: UTF8.self).contains("ready")
    }
    // The watch runs: another listener, after xinput's selection and the grab, is audited.
    let marker = try await Self.expectAudited(daemon, on: server, xev, ["-root"], exe: xev, kind: "keypress-selected")
    #expect(Self.suspected(daemon, exe: xinput).isEmpty, "\(daemon.auditEvents("keylogger-suspected"))")
    #expect(Self.suspected(daemon, exe: wmGrab).isEmpty, "\(daemon.auditEvents("keylogger-suspected"))")
    await wm.stop()
    // Nor named in the notice.
    #expect(try await server.run("xdotool", ["windowfocus", String(window.id)]).succeeded)
    try await waitUntil("a keylogger-notice", timeout: .seconds(10)) {
      !daemon.auditEvents("keylogger-notice").isEmpty
    }
    let named = daemon.auditEvents("keylogger-notice").first?["programs"] as? String ?? ""
    #expect(named == "xev (pid \(marker.pid))", "\(named)")
    await marker.stop()
    await allowed.stop()
    await daemon.stop()

    // Positive control: the same listener, without the rule, is audited.
    let control = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    try await control.waitUntilCaughtUp(retitling: window)
    let listener = try await Self.expectAudited(
      control, on: server, xinput, ["test-xi2", "--root"], exe: xinput, kind: "xi2-raw-keys")
    await listener.stop()
    await control.stop()
    window.close()
    await server.stop()
  }
}

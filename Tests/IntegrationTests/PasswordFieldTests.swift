// Password fields anywhere (`accessibility.passwordFields`): real applications
// on the test's own session bus and accessibility bus (at-spi-bus-launcher), the daemon
// following that bus. A GTK 3 password field (`zenity --password`): its window is secure
// and carries the field as a secure view; captures during a capture session show none of
// the field, and with `accessibility.passwordFields: false` (the positive control) they do.
// A keyboard listener is named when the field has the focus.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

/// The test's desktop session: a private session bus, Xvfb on it, a window manager and the
/// accessibility bus (at-spi-bus-launcher, which also starts the registry).
final class AccessibleSession: @unchecked Sendable {
  let bus: PrivateSessionBus
  let runtime: String
  let server: XvfbServer
  let wm: BackgroundProcess
  let launcher: BackgroundProcess

  /// `module`: a headless Xorg with the CaptureShield module instead of Xvfb.
  static func start(module: Bool = false) async throws -> AccessibleSession {
    let runtime = try makeTemporaryDirectory(prefix: "captureshield-runtime")
    chmod(runtime, 0o700)
    let bus = try await PrivateSessionBus.start()
    var env = ProcessInfo.processInfo.environment
    env["DBUS_SESSION_BUS_ADDRESS"] = bus.address
    env["XDG_RUNTIME_DIR"] = runtime
    env["NO_AT_BRIDGE"] = nil
    env["GDK_BACKEND"] = "x11"
    env["CAPTURESHIELD_DEBUG"] = "1"
    let server =
      module
      ? try await XvfbServer.startXorg(
        moduleDirectory: XorgModule.directory, moduleOptions: XorgModule.snippetOptions(alsoTrusting: []),
        environment: env)
      : try await XvfbServer.start(environment: env)
    let wm = try await server.startWindowManager()
    let launcher = try server.startBackground("/usr/libexec/at-spi-bus-launcher", ["--launch-immediately"])
    try await waitUntil("the accessibility bus answers on the test's session bus", timeout: .seconds(15)) {
      guard launcher.isRunning else {
        throw TestWindowError.timedOut(
          "at-spi-bus-launcher exited: \(String(decoding: launcher.stderr, as: UTF8.self))")
      }
      let r = try await server.run(
        "dbus-send", ["--session", "--print-reply", "--dest=org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus.GetAddress"],
        timeout: .seconds(5))
      return r.succeeded && r.stdoutText.contains("unix:")
    }
    // The registry (at-spi2-registryd, started by the accessibility bus on first use) up
    // before the apps: a GTK app that finds no registry at its start stays off the bus.
    try await waitUntil("the accessibility registry answers", timeout: .seconds(15)) {
      let address = try await server.run(
        "dbus-send",
        ["--session", "--print-reply=literal", "--dest=org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus.GetAddress"],
        timeout: .seconds(5)
      ).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
      let r = try await server.run(
        "dbus-send",
        [
          "--bus=\(address)", "--print-reply", "--dest=org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root",
          "org.a11y.atspi.Accessible.GetChildren",
        ], timeout: .seconds(5))
      return r.succeeded
    }
    return AccessibleSession(bus: bus, runtime: runtime, server: server, wm: wm, launcher: launcher)
  }

  private init(
    bus: PrivateSessionBus, runtime: String, server: XvfbServer, wm: BackgroundProcess, launcher: BackgroundProcess
  ) {
    self.bus = bus
    self.runtime = runtime
    self.server = server
    self.wm = wm
    self.launcher = launcher
  }

  func stop() async {
    _ = await launcher.stop()
    _ = await wm.stop()
    await server.stop()
    await bus.stop()
    removeTree(runtime)
  }
}

@Suite("Password fields anywhere (accessibility bus)", .serialized, .timeLimit(.minutes(5)))
struct PasswordFieldTests {
  static let secret = "hunter2-Secret"

  static func policy(passwordFields: Bool) -> String {
    """
    {version: 1, capture: {linger: "2s", allow: [{name: "the test", pid: \(getpid())}]},
     replaceDefaultSecure: true, accessibility: {passwordFields: \(passwordFields)}}
    """
  }

  /// `_CAPTURE_SHIELD_POLICY_VIEWS` of `window` (xprop), nil when absent.
  static func views(_ server: XvfbServer, _ window: UInt32) async throws -> [Int]? {
    let r = try await server.run("xprop", ["-id", String(window), "_CAPTURE_SHIELD_POLICY_VIEWS"])
    guard r.succeeded, let eq = r.stdoutText.firstIndex(of: "=") else { return nil }
    return r.stdoutText[r.stdoutText.index(after: eq)...].split(separator: ",").compactMap {
      Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
    }
  }

  /// The field's area on the screen, as the accessibility bus says (the test's own look,
  /// through the daemon's audit record: window coordinates plus the window's origin).
  static func fieldOnScreen(_ server: XvfbServer, _ window: UInt32, _ v: [Int]) throws -> PixelRect {
    let g = try server.geometry(of: window)
    return PixelRect(x: g.x + v[0], y: g.y + v[1], width: v[2], height: v[3])
  }

  /// Pixels of `rect` in `image` equal to the trusted view's, not counting the trusted view's
  /// black ones (a shield's black would match them by chance).
  static func leaked(_ image: RGBImage, trusted: RGBImage, _ rect: PixelRect) -> Int {
    var n = 0
    for y in rect.y..<(rect.y + rect.height) {
      for x in rect.x..<(rect.x + rect.width) {
        let t = trusted[x, y]
        if t != RGB(0, 0, 0), image[x, y] == t { n += 1 }
      }
    }
    return n
  }

  /// The shield's colours (`ShieldDriver`: two dark greys in stripes, the label's grey).
  static let shieldColours: Set<RGB> = [RGB(0x1c, 0x1c, 0x1c), RGB(0x2e, 0x2e, 0x2e), RGB(0xd0, 0xd0, 0xd0)]

  /// Pixels of `rect` in `image` the shield does not cover (not one of its colours).
  static func uncovered(_ image: RGBImage, _ rect: PixelRect) -> Int {
    var n = 0
    for y in rect.y..<(rect.y + rect.height) {
      for x in rect.x..<(rect.x + rect.width) where !shieldColours.contains(image[x, y]) { n += 1 }
    }
    return n
  }

  /// An application that asks for a password, on the accessibility bus.
  struct App: Sendable, CustomStringConvertible {
    let name: String
    let className: String
    /// The command (`sh -c`, `$D` the test's directory, with `pin` in it for a pinentry).
    let script: String
    var description: String { name }
  }

  static let apps = [
    App(
      name: "zenity --password (GTK 3)", className: "Zenity", script: "exec zenity --password --title 'Zenity password'"
    ),
    // Qt waits for an assistive client; the daemon's IsEnabled does not reach pinentry-qt
    // here (measured: it stays off the bus), KeePassXC's does. The variable is Qt's own.
    App(
      name: "pinentry-qt (Qt 5)", className: "pinentry-qt",
      script: "QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 exec pinentry-qt < \"$D/pin\""),
  ]

  /// `app` asking for a password with the secret typed in; its process and window.
  static func start(_ app: App, _ s: AccessibleSession, type: Bool = true) async throws -> (BackgroundProcess, UInt32) {
    let dir = try makeTemporaryDirectory(prefix: "captureshield-a11y-app")
    try "SETDESC Enter the passphrase\nSETPROMPT Passphrase:\nGETPIN\n".write(
      toFile: dir + "/pin", atomically: true, encoding: .utf8)
    let process = try s.server.startBackground(
      "/usr/bin/env", ["D=\(dir)", "HOME=\(dir)", "QT_QPA_PLATFORM=xcb", "sh", "-c", app.script])
    var window: UInt32 = 0
    try await waitUntil("\(app.name) shows its dialog", timeout: .seconds(30)) {
      guard process.isRunning else {
        throw ProcessError.io("\(app.name) exited: \(String(decoding: process.stderr, as: UTF8.self))")
      }
      window = try await RealAppTests.visibleWindows(s.server, className: app.className).first ?? 0
      // Activated (a window found may be gone already: search again).
      guard window != 0 else { return false }
      return try await s.server.run("xdotool", ["windowactivate", "--sync", String(window)], timeout: .seconds(5))
        .succeeded
    }
    if type { try await s.server.run("xdotool", ["type", "--delay", "20", secret]).checked() }
    return (process, window)
  }

  /// A capture session (a first xwd), then xwd and import while it lasts: the secret pixels
  /// of the field in each, against the trusted view taken first.
  static func captureField(
    _ s: AccessibleSession, _ daemon: DaemonProcess, _ window: UInt32, field: PixelRect, shielded: Bool
  ) async throws -> (trusted: Int, xwd: Int, imp: Int, uncovered: [Int]) {
    let trusted = try Capture.getImageRoot(on: s.server)
    let content = leaked(trusted, trusted: trusted, field)
    _ = try await Capture.xwdRoot(on: s.server)  // starts the session (the first frame races it)
    try await waitUntil("the daemon sees the capture", timeout: .seconds(10)) { try daemon.state()?.capturing == true }
    if shielded { try await daemon.waitShielded(window) }
    let xwd = try await Capture.xwdRoot(on: s.server)
    let imp = try await Capture.importRoot(on: s.server)
    return (
      content, leaked(xwd, trusted: trusted, field), leaked(imp, trusted: trusted, field),
      [uncovered(xwd, field), uncovered(imp, field)]
    )
  }

  @Test(
    "a password field's window is secure with the field as a view; captures show none of the field",
    arguments: apps)
  func passwordField(_ a: App) async throws {
    let s = try await AccessibleSession.start()
    let daemon = try await DaemonProcess.start(on: s.server, policy: Self.policy(passwordFields: true))
    try await waitUntil("the daemon follows the accessibility bus", timeout: .seconds(15)) {
      daemon.auditEvents("accessibility").contains { $0["enabled"] as? Bool == true }
    }
    let (app, window) = try await Self.start(a, s)
    do {
      try await waitUntil("the daemon lists \(a.name)'s window as secure for its password field", timeout: .seconds(15))
      {
        try daemon.state()?.windows.contains { $0.id == window && $0.secure && $0.reason.contains("password field") }
          ?? false
      }
    } catch {
      print(
        "daemon said:", daemon.audit.filter { ["accessibility", "password-field"].contains($0["event"] as? String) })
      print("windows:", (try? daemon.state()?.windows.map { "\(hex($0.id)) \($0.class ?? "") \($0.reason)" }) ?? [])
      throw error
    }
    let v = try #require(try await Self.views(s.server, window))
    #expect(v.count == 4 && v[2] > 0 && v[3] > 0, "views: \(v)")
    let record = try #require(daemon.auditEvents("password-field").first)
    #expect(record["window"] as? String == hex(window))
    let field = try Self.fieldOnScreen(s.server, window, v)
    let counts = try await Self.captureField(s, daemon, window, field: field, shielded: true)
    print(
      "\(a.name): field \(field) (views \(v)); secret pixels: trusted view \(counts.trusted), "
        + "xwd \(counts.xwd), import \(counts.imp); pixels not under the shield \(counts.uncovered) (feature on)")
    #expect(counts.trusted > 1_000)
    // Every pixel of the field is the shield's (a few of its greys may equal the field's own).
    #expect(counts.uncovered == [0, 0])

    // Positive control: the same field with the feature off (a reload) is captured.
    try await waitUntil("the capture session ends", timeout: .seconds(15)) { try daemon.state()?.capturing == false }
    try Self.policy(passwordFields: false).write(toFile: daemon.policyPath, atomically: true, encoding: .utf8)
    chmod(daemon.policyPath, 0o644)
    daemon.signal(SIGHUP)
    try await waitUntil("the reload drops the views and the decision", timeout: .seconds(10)) {
      !(try daemon.state()?.windows.contains { $0.id == window && $0.secure } ?? true)
    }
    #expect(try await Self.views(s.server, window) == nil)
    let off = try await Self.captureField(s, daemon, window, field: field, shielded: false)
    print(
      "\(a.name): secret pixels with accessibility.passwordFields false: trusted view \(off.trusted), "
        + "xwd \(off.xwd), import \(off.imp); pixels not under a shield \(off.uncovered) (positive control)")
    // The field as the user sees it, but for the blinking caret.
    #expect(off.xwd * 100 >= off.trusted * 95)
    #expect(off.imp * 100 >= off.trusted * 95)
    _ = await app.stop()
    await daemon.stop()
    await s.stop()
  }

  @Test("under the Xorg module: the password field's window is protected; xwd and import get none of the field")
  func underTheModule() async throws {
    #expect(XorgModule.isBuilt, "build the module first: make xorg-module")
    let s = try await AccessibleSession.start(module: true)
    let daemon = try await DaemonProcess.start(on: s.server, policy: Self.policy(passwordFields: true))
    #expect(try daemon.state()?.enforcement?.kind == "server")
    // Typing comes after: the module refuses XTEST keys into a focused secure window.
    let started: (BackgroundProcess, UInt32)
    do {
      started = try await Self.start(Self.apps[0], s, type: false)
    } catch {
      // An app ended by an X error: the module's refusals say which window and rule.
      print("input refused:", daemon.auditEvents("input-refused"))
      throw error
    }
    let (app, window) = started
    do {
      try await waitUntil("the module protects zenity's window for its password field", timeout: .seconds(15)) {
        try daemon.state()?.windows.contains {
          $0.id == window && $0.reason.contains("password field") && $0.protected == true
        } ?? false
      }
    } catch {
      print(
        "daemon said:", daemon.audit.filter { ["accessibility", "password-field"].contains($0["event"] as? String) })
      print("debug:", daemon.audit.filter { ($0["message"] as? String)?.hasPrefix("accessibility") == true }.suffix(4))
      print(
        "windows:",
        (try? daemon.state()?.windows.map { "\(hex($0.id)) \($0.reason) \(String(describing: $0.protected))" }) ?? [])
      throw error
    }
    // The views as the daemon set them (its record: the module keeps the property from xprop).
    let rect = try #require(
      daemon.auditEvents("password-field").last { $0["window"] as? String == hex(window) }?["views"] as? String)
    let n = rect.split(whereSeparator: { "x+".contains($0) }).compactMap { Int($0) }
    let v = [n[2], n[3], n[0], n[1]]
    let field = try Self.fieldOnScreen(s.server, window, v)
    // The module censors in black: the field's pixels that are not black, in each tool's shot.
    func nonBlack(_ image: RGBImage) -> Int {
      var n = 0
      for y in field.y..<(field.y + field.height) {
        for x in field.x..<(field.x + field.width) where image[x, y] != RGB(0, 0, 0) { n += 1 }
      }
      return n
    }
    func shots() async throws -> (xwd: Int, imp: Int) {
      (nonBlack(try await Capture.xwdRoot(on: s.server)), nonBlack(try await Capture.importRoot(on: s.server)))
    }
    // The field's window has the focus (again: the window manager may have moved it), then keys.
    _ = try await s.server.run("xdotool", ["windowactivate", "--sync", String(window)], timeout: .seconds(5))
    let refused = try await s.server.run("xdotool", ["type", "--delay", "20", Self.secret])
    #expect(!refused.succeeded && refused.stderrText.contains("BadAccess"), "\(refused)")
    let on = try await shots()
    print("under the module, zenity's field \(field): pixels not black: xwd \(on.xwd), import \(on.imp) (feature on)")
    #expect(on.xwd == 0)
    #expect(on.imp == 0)

    // Positive control: the feature off (a reload), the same field reaches both tools.
    try Self.policy(passwordFields: false).write(toFile: daemon.policyPath, atomically: true, encoding: .utf8)
    chmod(daemon.policyPath, 0o644)
    daemon.signal(SIGHUP)
    try await waitUntil("the reload drops the window's protection", timeout: .seconds(10)) {
      !(try daemon.state()?.windows.contains { $0.id == window && $0.secure } ?? true)
    }
    let typed = try await s.server.run("xdotool", ["type", "--delay", "20", Self.secret])
    #expect(typed.succeeded, "\(typed)")
    print("under the module, xdotool type into the focused field: refused (\(!refused.succeeded)) -> off: typed")
    let off = try await shots()
    print(
      "under the module, feature off: pixels not black: xwd \(off.xwd), import \(off.imp) of \(field.width * field.height)"
    )
    #expect(off.xwd * 100 >= field.width * field.height * 70)
    #expect(off.imp * 100 >= field.width * field.height * 70)
    _ = await app.stop()
    await daemon.stop()
    await s.stop()
  }

  @Test(
    "a keyboard listener is named when the password field has the focus (feature off: not named)",
    arguments: [true, false])
  func keyloggerNamedOnFocus(_ on: Bool) async throws {
    let s = try await AccessibleSession.start()
    let daemon = try await DaemonProcess.start(on: s.server, policy: Self.policy(passwordFields: on))
    let xinput = try #require(findExecutable("xinput", environment: s.server.environment))
    let listener = try s.server.startBackground(xinput, ["test-xi2", "--root"])
    try await waitUntil("xinput is audited as a keyboard listener", timeout: .seconds(10)) {
      daemon.auditEvents("keylogger-suspected").contains { $0["exe"] as? String == xinput }
    }
    let (app, window) = try await Self.start(Self.apps[0], s)
    func named() -> [String: Any]? {
      daemon.auditEvents("keylogger-notice").first { $0["window"] as? String == hex(window) }
    }
    if on {
      do {
        try await waitUntil("a keylogger-notice for zenity's window", timeout: .seconds(15)) { named() != nil }
      } catch {
        print(
          "daemon said:",
          daemon.audit.filter {
            ["password-field", "secure-decision", "keylogger-notice", "keylogger-watch"].contains(
              $0["event"] as? String)
          })
        throw error
      }
      let notice = try #require(named())
      #expect((notice["programs"] as? String ?? "").contains("xinput"), "\(notice)")
      print("keylogger notice with the password field focused: \(notice["programs"] ?? "")")
    } else {
      // Positive control: the same focused field, the feature off: zenity's window is not
      // secure and nobody is named (checked once the daemon has caught up).
      try await daemon.waitUntilCaughtUp()
      #expect(named() == nil)
      #expect(!(try daemon.state()?.windows.contains { $0.id == window && $0.secure } ?? true))
      print("keylogger notices for zenity's focused password field with the feature off: 0")
    }
    _ = await listener.stop()
    _ = await app.stop()
    await daemon.stop()
    await s.stop()
  }
}

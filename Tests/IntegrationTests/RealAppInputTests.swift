// A real app's master password under the CaptureShield Xorg module (rule
// input): KeePassXC 2.7 opened on a locked test database (made by keepassxc-cli) on a
// headless Xorg with the module and openbox, secured by a `class` rule of the daemon. The
// user types the master password (a trusted typing client: xdotool, in the module's Trust
// list, stands for the keyboard) while an untrusted listener records XI2 raw and device
// events on the root (`xinput test-xi2 --root`, as a keylogger does).
//
// - Under the module: the listener gets none of the password's keys, the database unlocks
//   (every key reached KeePassXC), and the daemon audits the listener (`input-refused`).
// - The control, the same with `Option "DisableRules" "input"`: the listener gets every key.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Real apps under the module: KeePassXC's master password", .serialized, .timeLimit(.minutes(5)))
struct RealAppInputTests {
  static let masterPassword = "db-Pass-7"
  /// Key presses `xdotool type` sends for it: one per character, Shift for the capital.
  static let passwordPresses = masterPassword.count + masterPassword.filter(\.isUppercase).count

  /// What one unlock showed.
  struct Unlock {
    /// XI2 RawKeyPress and KeyPress events the listener printed (all devices, the root).
    var rawPresses: Int
    var keyPresses: Int
    /// Marker events it printed: it was listening (and kept listening to the end).
    var markers: Int
    var unlocked: Bool
    var refusals: [[String: Any]]
  }

  /// A locked test database with KeePassXC's settings beside it (no first-run questions,
  /// one instance per test, no tray); returns the database's path.
  static func makeDatabase(in dir: String) async throws -> String {
    let db = dir + "/test.kdbx"
    try await runCommand(
      "keepassxc-cli", ["db-create", "-q", "-p", "-t", "100", db],
      environment: ["HOME": dir, "XDG_CONFIG_HOME": dir + "/config", "PATH": "/usr/bin:/bin"],
      stdin: Data((masterPassword + "\n" + masterPassword + "\n").utf8)
    ).checked()
    try FileManager.default.createDirectory(atPath: dir + "/config/keepassxc", withIntermediateDirectories: true)
    try """
    [General]
    ConfigVersion=2
    UpdateCheckMessageShown=true
    RememberLastDatabases=false
    OpenPreviousDatabasesOnStartup=false
    SingleInstance=false

    [GUI]
    CheckForUpdates=false
    ShowTrayIcon=false

    [Security]
    LockDatabaseIdle=false
    """.write(toFile: dir + "/config/keepassxc/keepassxc.ini", atomically: true, encoding: .utf8)
    return db
  }

  /// Lines of `output` naming XI2 event `name` ("EVENT type 13 (RawKeyPress)").
  static func events(_ output: Data, _ name: String) -> Int {
    String(decoding: output, as: UTF8.self).split(separator: "\n").filter { $0.hasSuffix("(\(name))") }.count
  }

  /// Starts Xorg with the module (`disableRules`: its test-only option), openbox, the
  /// daemon and KeePassXC on a locked database; types the master password and Return
  /// through trusted XTEST while `xinput test-xi2 --root` listens.
  static func unlock(disableRules: String? = nil) async throws -> Unlock {
    #expect(XorgModule.isBuilt, "build the module first: make xorg-module")
    let dir = try makeTemporaryDirectory(prefix: "captureshield-keepassxc-input")
    defer { removeTree(dir) }
    let db = try await makeDatabase(in: dir)
    let xdotool = XorgModule.realPath("/usr/bin/xdotool")
    // the marker's xinput is a trusted copy (rule keymap refuses an untrusted device
    // property change while a secure window has the focus); the listener's stays untrusted
    let marker = try XorgModule.trustedCopy(of: "/usr/bin/xinput", named: "xinput-marker")
    var options = XorgModule.snippetOptions(alsoTrusting: [XorgModule.testExecutable, xdotool, marker])
    if let disableRules { options.append("Option \"DisableRules\" \"\(disableRules)\"") }
    let server = try await XvfbServer.startXorg(moduleDirectory: XorgModule.directory, moduleOptions: options)
    let wm = try await server.startWindowManager()
    let daemon = try await DaemonProcess.start(on: server, policy: #"{version: 1, secure: [{class: "KeePassXC"}]}"#)
    let app = try server.startBackground(
      "/usr/bin/env",
      [
        "HOME=\(dir)", "XDG_CONFIG_HOME=\(dir)/config", "XDG_RUNTIME_DIR=\(dir)", "QT_QPA_PLATFORM=xcb",
        "keepassxc", db,
      ])
    func mainWindow() throws -> DaemonState.WindowRow? {
      try daemon.state()?.windows.first { $0.secure && $0.title?.hasSuffix("KeePassXC") == true }
    }
    try await waitUntil("KeePassXC asks for the master password, secure", timeout: .seconds(30)) {
      guard app.isRunning else { throw ProcessError.io("keepassxc exited: \(app.stderr)") }
      return try mainWindow()?.title?.contains("Locked") == true
    }
    let window = try #require(try mainWindow())
    print("KeePassXC: window \(hex(window.id)) \(window.title ?? "") (\(window.reason))")

    // The keylogger (untrusted: not in the Trust list). Ready once it prints the
    // PropertyEvent of a marker property set on the XTEST pointer (device properties are
    // not held back).
    let listener = try server.startBackground("stdbuf", ["-oL", "xinput", "test-xi2", "--root"])
    var markers = 0
    func setMarker() async throws {
      markers += 1
      let property = ["--type=int", "--format=8", "CaptureShield marker", "\(markers)"]
      try await server.run(marker, ["set-prop", "Virtual core XTEST pointer"] + property).checked()
    }
    func listened(_ what: String, after seen: Int) async throws {
      do {
        try await waitUntil(what, timeout: .seconds(10)) {
          guard listener.isRunning else { throw ProcessError.io("xinput exited: \(listener.stderr)") }
          try await setMarker()
          return events(listener.stdout, "PropertyEvent") > seen
        }
      } catch {
        let out = String(decoding: listener.stdout + listener.stderr, as: UTF8.self)
        throw ProcessError.io("\(error); the listener printed: \(out.suffix(2000))")
      }
    }
    try await listened("the listener prints a marker", after: 0)

    // The user types the master password into the focused KeePassXC.
    try await server.run("xdotool", ["type", "--delay", "40", masterPassword]).checked()
    try await server.run("xdotool", ["key", "Return"]).checked()
    var unlocked = false
    do {
      try await waitUntil("KeePassXC unlocked the database", timeout: .seconds(20)) {
        try mainWindow()?.title == "test.kdbx - KeePassXC"
      }
      unlocked = true
    } catch {
      print("KeePassXC did not unlock: \(String(describing: try? mainWindow()?.title))")
    }
    // Everything the listener could get is in its output once it printed a marker set
    // after the typing (a client's events come in order).
    let seen = events(listener.stdout, "PropertyEvent")
    try await listened("the listener prints a marker set after the typing", after: seen)
    _ = await listener.stop()
    let output = listener.stdout
    let result = Unlock(
      rawPresses: events(output, "RawKeyPress"), keyPresses: events(output, "KeyPress"),
      markers: events(output, "PropertyEvent"), unlocked: unlocked, refusals: daemon.auditEvents("input-refused"))
    _ = await app.stop()
    await daemon.stop()
    _ = await wm.stop()
    await server.stop()
    return result
  }

  @Test("KeePassXC unlocked by its master password under the module: an XI2 keylogger gets none of its keys")
  func masterPasswordUnderTheModule() async throws {
    let r = try await Self.unlock()
    print(
      "KeePassXC under the module: listener RawKeyPress \(r.rawPresses), KeyPress \(r.keyPresses) "
        + "(\(r.markers) markers seen); unlocked \(r.unlocked); input-refused \(r.refusals)")
    #expect(r.unlocked, "the master password reached KeePassXC")
    #expect(r.rawPresses == 0)
    #expect(r.keyPresses == 0)
    #expect(r.markers >= 2)
    #expect(r.refusals.contains { ($0["exe"] as? String)?.hasSuffix("/xinput") == true }, "\(r.refusals)")
  }

  @Test("the control: the same with the module's input rule off, the keylogger gets every key")
  func masterPasswordWithTheRuleOff() async throws {
    let r = try await Self.unlock(disableRules: "input")
    print(
      "KeePassXC, DisableRules input: listener RawKeyPress \(r.rawPresses), KeyPress \(r.keyPresses) "
        + "(\(r.markers) markers seen); unlocked \(r.unlocked)")
    #expect(r.unlocked)
    // every press of the password (Shift for its capital) and of Return
    #expect(r.rawPresses == Self.passwordPresses + 1, "\(r.rawPresses) raw presses")
    #expect(r.refusals.isEmpty, "\(r.refusals)")
  }
}

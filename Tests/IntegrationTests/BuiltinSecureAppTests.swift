// The built-in secure list with the real programs (docs/policy.md, "Built-in secure programs"):
// each Debian-packaged password manager or credential prompt is started for real (a
// pinentry asked for a PIN over its Assuan pipe, an ssh-askpass asked for a passphrase,
// KeePassXC, KeePass2 and KWalletManager opened, lxpolkit's error window), with the default policy (no rule, no tag). Its window is
// secure by its built-in rule, and a capture (an ffmpeg recording, with xwd and import run
// during it) shows 0 of its pixels. The control: the same window after a reload with
// `replaceDefaultSecure: true` is not secure, and the same captures get its pixels.
//
// Client-side mode: the captures run inside a capture session that ffmpeg (a known
// capturer, shielded from its connection) opened; a one-shot tool that starts a session
// itself still races its first frame (README, "Known limitations"). ssh-askpass-fullscreen
// reads the screen itself (it dims it behind its prompt): it is a capture client too, and
// its own session stays live while it runs.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

/// A program of the built-in list, and how to make it show its window.
struct BuiltinApp: Sendable, CustomStringConvertible {
  /// Its name in the list (`built-in: NAME`).
  var name: String
  /// The executable that must be installed (its Debian package is in scripts/install-deps.sh).
  var executable: String
  /// `sh -c` script run in the app's scratch directory (`$D`), with `$D/pin` holding
  /// pinentry's Assuan commands; it must `exec` the program (the process the test stops).
  var script: String
  /// A private session bus in `$D/bus` first (gcr's prompter is started by the bus).
  var sessionBus = false
  /// How long its window may take to show (mono and Qt start slowly on a loaded machine).
  var startTimeout: Duration = .seconds(30)
  /// KWallet on (no `kwalletrc` turning it off): ksshaskpass asks the wallet first.
  var kwallet = false
  /// Programs the session bus started for it, stopped by the test (by the pid the daemon
  /// knows for their X client).
  var alsoStops: [String] = []
  var description: String { name }

  /// A pinentry, asked for a PIN over its Assuan pipe (its stdin).
  static func pin(_ name: String, _ exe: String) -> BuiltinApp {
    BuiltinApp(name: name, executable: exe, script: "exec \(exe) < \"$D/pin\"")
  }

  static let all: [BuiltinApp] = [
    BuiltinApp(
      name: "KeePassXC", executable: "keepassxc", script: "exec keepassxc", startTimeout: .seconds(60)),
    BuiltinApp(name: "KeePass2", executable: "keepass2", script: "exec keepass2", startTimeout: .seconds(90)),
    pin("pinentry-gtk-2", "pinentry-gtk-2"),
    pin("pinentry-qt", "pinentry-qt"),
    pin("pinentry-fltk", "pinentry-fltk"),
    pin("pinentry-x2go", "pinentry-x2go"),
    // pinentry-gnome3 asks gcr's prompter, which the session bus starts.
    BuiltinApp(
      name: "gcr-prompter", executable: "pinentry-gnome3", script: #"exec pinentry-gnome3 < "$D/pin""#,
      sessionBus: true),
    BuiltinApp(
      name: "x11-ssh-askpass", executable: "/usr/libexec/ssh-askpass/x11-ssh-askpass",
      script: "exec /usr/libexec/ssh-askpass/x11-ssh-askpass 'Passphrase for key:'"),
    BuiltinApp(
      name: "gnome-ssh-askpass", executable: "/usr/lib/openssh/gnome-ssh-askpass",
      script: "exec /usr/lib/openssh/gnome-ssh-askpass 'Passphrase for key:'"),
    // KWallet off (kwalletrc) and no session bus: ksshaskpass asks by itself.
    BuiltinApp(name: "ksshaskpass", executable: "ksshaskpass", script: "exec ksshaskpass 'Passphrase for key:'"),
    // KWallet on: ksshaskpass asks the wallet, and the bus starts kwalletd5, whose first-use
    // wizard is KWallet's prompt.
    BuiltinApp(
      name: "KWallet", executable: "kwalletd5", script: "exec ksshaskpass 'Passphrase for key:'", sessionBus: true,
      startTimeout: .seconds(60), kwallet: true, alsoStops: ["/usr/bin/kwalletd5"]),
    BuiltinApp(
      name: "ssh-askpass-fullscreen", executable: "ssh-askpass-fullscreen",
      script: "exec ssh-askpass-fullscreen 'Passphrase for key:'"),
    // KWallet off: its manager says so in a dialog of its own.
    BuiltinApp(
      name: "KWalletManager", executable: "kwalletmanager5", script: "exec kwalletmanager5", sessionBus: true,
      startTimeout: .seconds(60)),
    // No polkitd here (no system bus): lxpolkit shows its error window, a window of the
    // same program; the authentication dialog is not reached.
    BuiltinApp(name: "lxpolkit", executable: "lxpolkit", script: "exec lxpolkit"),
  ]
}

@Suite("Built-in secure list: the real programs", .serialized, .timeLimit(.minutes(4)))
struct BuiltinSecureAppTests {
  /// The secure windows' content pixels in each capture: ffmpeg's frames, then xwd's and
  /// import's shots taken while ffmpeg records.
  static func captureAll(_ server: XvfbServer, _ daemon: DaemonProcess, mask: [Bool]) async throws -> [Int] {
    let recording = Task {
      try await Capture.ffmpegFrames(on: server, count: 30, frameRate: 10, drawMouse: false)
    }
    try await waitUntil("ffmpeg is capturing", timeout: .seconds(10)) { try daemon.state()?.capturing == true }
    let xwd = try await Capture.xwdRoot(on: server)
    let imported = try await Capture.importRoot(on: server)
    let frames = try await recording.value
    return (frames + [xwd, imported]).map { contentPixels($0, mask) }
  }

  @Test(
    "started for real with the default policy, its window is secure: 0 of its pixels in any capture",
    arguments: BuiltinApp.all)
  func secureOutOfTheBox(_ app: BuiltinApp) async throws {
    guard findExecutable(app.executable, environment: ProcessInfo.processInfo.environment) != nil else {
      Issue.record("\(app.executable) is not installed (scripts/install-deps.sh installs it)")
      return
    }
    let dir = try makeTemporaryDirectory(prefix: "captureshield-builtin")
    defer { removeTree(dir) }
    try FileManager.default.createDirectory(atPath: dir + "/config", withIntermediateDirectories: true)
    try "SETDESC Enter the passphrase\nSETPROMPT Passphrase:\nGETPIN\n".write(
      toFile: dir + "/pin", atomically: true, encoding: .utf8)
    if !app.kwallet {
      try "[Wallet]\nEnabled=false\n".write(toFile: dir + "/config/kwalletrc", atomically: true, encoding: .utf8)
    }

    let server = try await XvfbServer.start()
    // The default policy: no rule, no tag (the test harness adds only `capture.learn: false`).
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    var bus: BackgroundProcess?
    var env = [
      "D=\(dir)", "HOME=\(dir)", "XDG_CONFIG_HOME=\(dir)/config", "XDG_RUNTIME_DIR=\(dir)",
      "NO_AT_BRIDGE=1", "GDK_BACKEND=x11", "QT_QPA_PLATFORM=xcb", "QT_ACCESSIBILITY=0",
    ]
    if app.sessionBus {
      bus = try server.startBackground(
        "dbus-daemon", ["--session", "--nofork", "--nopidfile", "--address=unix:path=\(dir)/bus"])
      try await waitUntil("the session bus listens", timeout: .seconds(10)) {
        FileManager.default.fileExists(atPath: dir + "/bus")
      }
      env.append("DBUS_SESSION_BUS_ADDRESS=unix:path=\(dir)/bus")
    } else {
      env.append("DBUS_SESSION_BUS_ADDRESS=unix:path=\(dir)/no-bus")  // no autolaunch
    }
    let process = try server.startBackground("/usr/bin/env", env + ["sh", "-c", app.script])

    var windows: Set<UInt32> = []
    try await waitUntil("\(app.name) shows its window, secure by its built-in rule", timeout: app.startTimeout) {
      windows = Set(
        try daemon.state()?.windows.filter {
          $0.secure && $0.reason == "built-in: \(app.name)" && (try? server.geometry(of: $0.id).isViewable) == true
        }.map(\.id) ?? [])
      if windows.isEmpty && !process.isRunning {
        throw ProcessError.io("\(app.name) exited: \(String(decoding: process.stderr, as: UTF8.self))")
      }
      return !windows.isEmpty
    }
    // Settle: let it draw its content before the measures.
    try await Task.sleep(for: .seconds(1))
    let mask = try visibleMask(server, windows: windows)
    let area = mask.filter { $0 }.count

    let on = try await Self.captureAll(server, daemon, mask: mask)

    // The control: the built-in list dropped, the same window is not secure and the same
    // captures get its pixels.
    try "{version: 1, replaceDefaultSecure: true}".write(
      toFile: daemon.policyPath, atomically: true, encoding: .utf8)
    daemon.signal(SIGHUP)
    try await waitUntil("\(app.name)'s window is no longer secure", timeout: .seconds(10)) {
      let rows = try daemon.state()?.windows ?? []
      return !rows.contains { windows.contains($0.id) && $0.secure }
    }
    for w in windows { try await daemon.waitShielded(w, false) }
    let off = try await Self.captureAll(server, daemon, mask: mask)

    print(
      "\(app.name): \(windows.count) window(s), \(area) pixels on screen; content pixels per capture "
        + "(30 ffmpeg frames, xwd, import): list on \(on), list off \(off)")
    #expect(on.count == 32 && off.count == 32)
    #expect(on.allSatisfy { $0 == 0 }, "list on: \(on)")
    #expect(off.allSatisfy { $0 > 0 }, "list off (the control): \(off)")
    #expect((off.min() ?? 0) > 500, "the control gets the window's content: \(off) of \(area)")

    let others = try daemon.state()?.clients.filter { app.alsoStops.contains($0.exe ?? "") }.compactMap(\.pid) ?? []
    _ = await process.stop()
    for pid in Set(others) { kill(pid_t(pid), SIGTERM) }
    if let bus { _ = await bus.stop() }
    await daemon.stop()
    await server.stop()
  }
}

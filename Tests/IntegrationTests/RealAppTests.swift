// Real apps people protect, on a desktop with a window manager
// (Xvfb + openbox): KeePassXC 2.7 secured by a `class` rule, with a database made by
// keepassxc-cli and unlocked from stdin, and a GTK app (zenity) tagged from the CLI.
//
// - A recording (ffmpeg x11grab) shows none of their content: every pixel of their client
//   areas, where they are on top, is the shield's (or the black desktop's) in every frame
//   after at most the first, dialogs and menus opened during the recording included. The
//   same measure on a trusted client's view (the test process, `capture.allow`) before the
//   recording counts the app's content, so the measure is not vacuous.
// - A copied password is guarded: a background reader (xclip) gets nothing, the focused
//   paste target gets the text, and KeePassXC's own clear after its timeout (it reads the
//   clipboard back first) still works while the paste target has the focus.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Real apps: KeePassXC and a GTK app", .serialized, .timeLimit(.minutes(4)))
struct RealAppTests {
  static let password = "S3cret-Horse-42"
  static let databasePassword = "db-Pass-7"

  /// A policy that secures `secure` (JSON5 matchers) and lets the test process read the
  /// screen as a trusted client (its view is the reference).
  static func policy(secure: String) -> String {
    """
    {version: 1, secure: [\(secure)], capture: {linger: "2s", allow: [{name: "the test", pid: \(getpid())}]},
     clipboard: {clearAfter: "120s"}}
    """
  }

  /// Visible windows of WM_CLASS class `className` (xdotool; override-redirect menus included).
  static func visibleWindows(_ server: XvfbServer, className: String) async throws -> [UInt32] {
    let r = try await server.run("xdotool", ["search", "--onlyvisible", "--class", className])
    return r.stdoutText.split(separator: "\n").compactMap { UInt32($0) }
  }

  /// The secure windows of the daemon's state whose client areas are viewable.
  static func secureViewable(_ daemon: DaemonProcess, _ server: XvfbServer) throws -> Set<UInt32> {
    let ids = try daemon.state()?.windows.filter(\.secure).map(\.id) ?? []
    return Set(ids.filter { (try? server.geometry(of: $0).isViewable) == true })
  }

  /// Records `frames` frames with ffmpeg (no pointer) while `during` runs, and counts the
  /// content pixels of the secure windows (as they are on top at the end) in each.
  static func record(
    _ server: XvfbServer, _ daemon: DaemonProcess, frames: Int, during: () async throws -> Void
  ) async throws -> [Int] {
    let recording = Task {
      try await Capture.ffmpegFrames(on: server, count: frames, frameRate: 10, drawMouse: false)
    }
    try await waitUntil("ffmpeg is capturing", timeout: .seconds(10)) { try daemon.state()?.capturing == true }
    try await during()
    let images = try await recording.value
    let mask = try visibleMask(server, windows: try secureViewable(daemon, server))
    return images.map { contentPixels($0, mask) }
  }

  /// The trusted view (the test process is in `capture.allow`): content pixels of the
  /// secure windows now.
  static func trustedContent(_ server: XvfbServer, _ daemon: DaemonProcess) throws -> Int {
    let mask = try visibleMask(server, windows: try secureViewable(daemon, server))
    return contentPixels(try Capture.getImageRoot(on: server), mask)
  }

  @Test(
    "KeePassXC secured by class: a recording shows none of it (dialog included); its copy is guarded and its own clear works"
  )
  func keepassxc() async throws {
    let dir = try makeTemporaryDirectory(prefix: "captureshield-keepassxc")
    defer { removeTree(dir) }
    let db = dir + "/test.kdbx"
    let pw = Data((Self.databasePassword + "\n").utf8)
    let env = ["HOME": dir, "XDG_CONFIG_HOME": dir + "/config", "PATH": "/usr/bin:/bin"]
    try await runCommand(
      "keepassxc-cli", ["db-create", "-q", "-p", "-t", "100", db], environment: env,
      stdin: Data((Self.databasePassword + "\n" + Self.databasePassword + "\n").utf8)
    ).checked()
    try await runCommand(
      "keepassxc-cli", ["add", "-q", "-u", "alice", "-p", db, "Bank"], environment: env,
      stdin: Data((Self.databasePassword + "\n" + Self.password + "\n").utf8)
    ).checked()
    // Its settings: no first-run questions, one instance per test, the clipboard cleared
    // after 10 s (its default), no tray.
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
    ClearClipboard=true
    ClearClipboardTimeout=10
    LockDatabaseIdle=false
    """.write(toFile: dir + "/config/keepassxc/keepassxc.ini", atomically: true, encoding: .utf8)
    try pw.write(to: URL(fileURLWithPath: dir + "/pw"))

    let server = try await XvfbServer.start()
    let wm = try await server.startWindowManager()
    let daemon = try await DaemonProcess.start(
      on: server, policy: Self.policy(secure: #"{name: "KeePassXC", class: "KeePassXC"}"#))
    let app = try server.startBackground(
      "/usr/bin/env",
      [
        "HOME=\(dir)", "XDG_CONFIG_HOME=\(dir)/config", "XDG_RUNTIME_DIR=\(dir)", "QT_QPA_PLATFORM=xcb", "sh", "-c",
        #"exec keepassxc --pw-stdin "$0" < "$1""#, db, dir + "/pw",
      ])
    try await waitUntil("KeePassXC shows the unlocked database, secure", timeout: .seconds(30)) {
      guard app.isRunning else { throw ProcessError.io("keepassxc exited: \(app.stderr)") }
      return try daemon.state()?.windows.contains { $0.secure && $0.title == "test.kdbx - KeePassXC" } ?? false
    }
    let main = try #require(try daemon.state()?.windows.first { $0.title == "test.kdbx - KeePassXC" }?.id)
    #expect(try daemon.state()?.windows.first { $0.id == main }?.reason.contains("KeePassXC") == true)

    // The About dialog: secure by the same rule. The trusted view counts its content.
    func openAbout() async throws {
      let before = try await Self.visibleWindows(server, className: "KeePassXC").count
      try await server.run("xdotool", ["key", "alt+h"]).checked()
      try await waitUntil("the Help menu is open", timeout: .seconds(10)) {
        try await Self.visibleWindows(server, className: "KeePassXC").count > before
      }
      try await server.run("xdotool", ["key", "a"]).checked()
      try await waitUntil("the About dialog is shown, secure", timeout: .seconds(10)) {
        try daemon.state()?.windows.contains {
          $0.secure && $0.title == "About KeePassXC" && (try? server.geometry(of: $0.id).isViewable) == true
        } ?? false
      }
    }
    func closeAbout() async throws {
      try await server.run("xdotool", ["key", "Escape"]).checked()
      try await waitUntil("the About dialog is closed", timeout: .seconds(10)) {
        try await Self.visibleWindows(server, className: "KeePassXC").count == 1
      }
    }
    try await openAbout()
    #expect(try Self.secureViewable(daemon, server).count >= 2)  // the main window and the dialog
    let trusted = try Self.trustedContent(server, daemon)
    #expect(trusted > 100_000, "content pixels in the trusted view: \(trusted)")
    try await closeAbout()

    // A recording of 60 frames (6 s); the About dialog (and the Help menu) open during it.
    var openedDuring = false
    let counts = try await Self.record(server, daemon, frames: 60) {
      try await openAbout()
      openedDuring = try daemon.state()?.capturing == true
    }
    print("KeePassXC: the About dialog opened while ffmpeg recorded: \(openedDuring)")
    print("KeePassXC: \(counts.count) frames recorded; content pixels per frame \(counts) (trusted view: \(trusted))")
    #expect(counts.count >= 45)
    #expect(counts.dropFirst().allSatisfy { $0 == 0 }, "content pixels per frame: \(counts)")
    try await closeAbout()
    try await daemon.waitShielded(main, false)

    // Copy the password (Ctrl+C, the entry is selected), then paste elsewhere.
    try await server.run("xdotool", ["key", "ctrl+c"]).checked()
    try await waitUntil("the copy is guarded", timeout: .seconds(10)) {
      try daemon.state()?.clipboard?.guarded.contains {
        $0.selection == "CLIPBOARD" && $0.state == "guarded" && $0.exe?.hasSuffix("/keepassxc") == true
      } ?? false
    }
    let paste = try PasteTarget(server)
    defer { paste.close() }
    let pasted = try paste.read()
    #expect(pasted == Self.password)
    let background = try await server.run("xclip", ["-o", "-selection", "clipboard"], timeout: .seconds(10))
    #expect(background.stdoutText.isEmpty)
    print(
      "KeePassXC copy: focused paste target read \(pasted?.utf8.count ?? 0) bytes, background xclip "
        + "\(background.stdout.count) bytes")

    // KeePassXC clears after its 10 s: it reads the clipboard back, finds its text, and
    // copies an empty text (KeePassXC 2.7's clear), which is not guarded. The paste target
    // keeps the focus all along.
    try await waitUntil("KeePassXC cleared its copy", timeout: .seconds(60)) {
      try daemon.state()?.clipboard?.guarded.isEmpty == true
    }
    #expect(paste.isFocused)
    let readBacks = daemon.auditEvents("clipboard-read").filter {
      $0["why"] as? String == "source reads back its own copy"
        && ($0["exe"] as? String)?.hasSuffix("/keepassxc") == true
    }
    #expect(!readBacks.isEmpty, "\(daemon.auditEvents("clipboard-read"))")
    let clears = daemon.auditEvents("clipboard-clear")
    #expect(
      !clears.isEmpty && clears.allSatisfy { ($0["why"] as? String)?.hasPrefix("clearAfter") != true }, "\(clears)")
    let afterPaste = try paste.read()
    #expect(afterPaste == nil || afterPaste == "", "the paste target read \(afterPaste ?? "nothing")")
    let after = try await server.run("xclip", ["-o", "-selection", "clipboard"], timeout: .seconds(10))
    #expect(after.stdoutText.isEmpty)
    print("KeePassXC's own clear: \(readBacks.count) read-backs served; clears: \(clears.map { $0["why"] ?? "" })")

    let log = String(decoding: app.stderr + app.stdout, as: UTF8.self)
    let unhandled = log.components(separatedBy: "Unhandled client message").count - 1
    #expect(unhandled == 0, "KeePassXC logged \(unhandled) 'Unhandled client message' lines")
    #expect(!String(decoding: daemon.process.stderr, as: UTF8.self).contains(Self.password))

    _ = await app.stop()
    await daemon.stop()
    _ = await wm.stop()
    await server.stop()
  }

  @Test("a GTK app (zenity) tagged from the CLI: a recording shows none of it; its copy is guarded")
  func gtkApp() async throws {
    let secret = "gtk-Secret-99"
    let server = try await XvfbServer.start()
    let wm = try await server.startWindowManager()
    let daemon = try await DaemonProcess.start(on: server, policy: Self.policy(secure: ""))
    let app = try server.startBackground(
      "/usr/bin/env",
      [
        "NO_AT_BRIDGE=1", "GDK_BACKEND=x11", "zenity", "--entry", "--title", "Zenity secret", "--text", "Token:",
        "--entry-text", secret,
      ])
    var window: UInt32 = 0
    try await waitUntil("zenity shows its dialog", timeout: .seconds(30)) {
      guard app.isRunning else { throw ProcessError.io("zenity exited: \(app.stderr)") }
      window = try await Self.visibleWindows(server, className: "Zenity").first ?? 0
      return window != 0
    }
    let tag = try await Shieldctl.run(["tag", hex(window)], on: server)
    #expect(tag.succeeded, "\(tag)")
    try await waitUntil("the daemon lists zenity's window as secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window && $0.secure } ?? false
    }
    let trusted = try Self.trustedContent(server, daemon)
    #expect(trusted > 10_000, "content pixels in the trusted view: \(trusted)")

    let counts = try await Self.record(server, daemon, frames: 30) {}
    print("zenity: \(counts.count) frames recorded; content pixels per frame \(counts) (trusted view: \(trusted))")
    #expect(counts.count >= 20)
    #expect(counts.dropFirst().allSatisfy { $0 == 0 }, "content pixels per frame: \(counts)")
    try await daemon.waitShielded(window, false)

    // The entry's text is selected: Ctrl+C copies it.
    try await server.run("xdotool", ["key", "ctrl+c"]).checked()
    try await waitUntil("the copy is guarded", timeout: .seconds(10)) {
      try daemon.state()?.clipboard?.guarded.contains {
        $0.selection == "CLIPBOARD" && $0.state == "guarded" && $0.exe?.hasSuffix("/zenity") == true
      } ?? false
    }
    let paste = try PasteTarget(server)
    defer { paste.close() }
    let pasted = try paste.read()
    #expect(pasted == secret)
    let background = try await server.run("xclip", ["-o", "-selection", "clipboard"], timeout: .seconds(10))
    #expect(background.stdoutText.isEmpty)
    print(
      "zenity copy: focused paste target read \(pasted?.utf8.count ?? 0) bytes, background xclip "
        + "\(background.stdout.count) bytes")

    _ = await app.stop()
    await daemon.stop()
    _ = await wm.stop()
    await server.stop()
  }
}

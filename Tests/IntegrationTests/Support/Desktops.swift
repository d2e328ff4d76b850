// The real desktops of Debian on a private Xvfb, or a headless Xorg with the module
// (docs/desktops.md): their window managers and compositors, started as each desktop ships them, each with a private session bus
// and home; the screen as the user sees it (Xvfb's framebuffer file, read without any X
// request); the window manager's requests sent as a pager or taskbar sends them; ffmpeg
// recording in the background; a process's CPU time.

import CXCB
import Foundation
import Glibc
import ShieldTestSupport

/// One desktop of the table: how to start its window manager (and compositor), and what
/// it supports.
struct DesktopKind: Sendable, CustomStringConvertible {
  /// The name in test output ("xfwm4", "i3+picom", ...).
  let name: String
  /// The programs to start, in order (each a command line); the first is the window manager.
  let commands: [[String]]
  /// The program the daemon should name as the trusted compositor (`default compositor:
  /// NAME`), or nil when the desktop runs without compositing.
  let compositor: String?
  /// Whether the window manager honours ConfigureRequests (moves, resizes) of a managed
  /// window: a tiling manager (i3) decides the geometry itself.
  let floating: Bool
  /// Whether the window manager iconifies (minimises) windows on WM_CHANGE_STATE.
  let minimises: Bool
  /// Files put into the fresh home first (path in the home, file copied there).
  var homeFiles: [String: String] = [:]

  var description: String { name }

  /// The desktops of docs/desktops.md, each with compositing on as it ships (openbox
  /// without a compositor, as it ships). See docs/desktops.md.
  static let all: [DesktopKind] = [
    DesktopKind(
      name: "xfwm4", commands: [["xfwm4", "--compositor=on", "--sm-client-disable"]], compositor: "xfwm4",
      floating: true, minimises: true),
    DesktopKind(
      name: "marco", commands: [["marco", "--composite", "--sm-disable"]], compositor: "marco",
      floating: true, minimises: true),
    DesktopKind(
      name: "mutter", commands: [["mutter", "--x11", "--sm-disable"]], compositor: "mutter",
      floating: true, minimises: true),
    DesktopKind(
      name: "kwin_x11", commands: [["kwin_x11"]], compositor: "kwin_x11", floating: true,
      minimises: true),
    DesktopKind(
      name: "i3+picom", commands: [["i3"], ["picom", "--config", "/dev/null"]], compositor: "picom",
      floating: false, minimises: false,
      // The configuration a user has after i3's first start (i3-config-wizard writes it;
      // without one, the wizard's window covers the screen).
      homeFiles: [".config/i3/config": "/etc/i3/config"]),
    DesktopKind(
      name: "openbox", commands: [["openbox", "--sm-disable"]], compositor: nil, floating: true,
      minimises: true),
  ]
}

enum DesktopError: Error, CustomStringConvertible {
  case failed(String)
  var description: String {
    switch self {
    case .failed(let what): what
    }
  }
}

/// Where a desktop runs, and so which enforcement the daemon uses there.
enum DesktopServer: String, Sendable, CustomStringConvertible {
  /// Xvfb: the daemon's client-side shields.
  case xvfb
  /// A headless Xorg (dummy driver) with the CaptureShield module as the installed snippet
  /// sets it (the daemon by its role, no compositor: the daemon grants it, `XorgModule`),
  /// trusting this test process too, whose reads are what the user sees: the module censors.
  case xorgModule = "Xorg with the module"

  var description: String { rawValue }
}

/// A running desktop: its X server, its session bus, its window manager and compositor.
/// `stop()` ends them in reverse order.
final class RunningDesktop: @unchecked Sendable {
  let kind: DesktopKind
  let where_: DesktopServer
  let server: XvfbServer
  /// The environment of the desktop's programs: the display, the private session bus, a
  /// fresh home and runtime directory.
  let environment: [String: String]
  private let directory: String
  private let bus: BackgroundProcess
  private(set) var processes: [BackgroundProcess] = []

  /// Xvfb's screen 0 as a file (`-fbdir`): what the user sees, read without an X request.
  var framebufferPath: String { directory + "/fb/Xvfb_screen0" }

  private init(
    kind: DesktopKind, where_: DesktopServer, server: XvfbServer, environment: [String: String], directory: String,
    bus: BackgroundProcess
  ) {
    self.kind = kind
    self.where_ = where_
    self.server = server
    self.environment = environment
    self.directory = directory
    self.bus = bus
  }

  /// Starts the X server (`where_`), a private `dbus-daemon --session`, and the desktop's
  /// programs; returns once the window manager maps windows and the compositor (if any)
  /// owns `_NET_WM_CM_S0` and has redirected the screen.
  static func start(_ kind: DesktopKind, on where_: DesktopServer = .xvfb, timeout: Duration = .seconds(30))
    async throws -> RunningDesktop
  {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-desktop")
    for sub in ["fb", "home", "runtime"] {
      try FileManager.default.createDirectory(atPath: directory + "/" + sub, withIntermediateDirectories: true)
    }
    chmod(directory + "/runtime", 0o700)
    let server: XvfbServer
    do {
      switch where_ {
      case .xvfb:
        server = try await XvfbServer.start(extraArguments: ["-fbdir", directory + "/fb"])
      case .xorgModule:
        guard XorgModule.isBuilt else {
          throw DesktopError.failed("no module in \(XorgModule.directory): build it first (make xorg-module)")
        }
        server = try await XvfbServer.startXorg(
          moduleDirectory: XorgModule.directory, moduleOptions: XorgModule.snippetOptions(), width: 1024,
          height: 768)
      }
    } catch {
      removeTree(directory)
      throw error
    }
    for (path, source) in kind.homeFiles {
      let target = directory + "/home/" + path
      try FileManager.default.createDirectory(
        atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
      try FileManager.default.copyItem(atPath: source, toPath: target)
    }
    var env = server.environment
    env["HOME"] = directory + "/home"
    env["XDG_RUNTIME_DIR"] = directory + "/runtime"
    env["XDG_SESSION_TYPE"] = "x11"
    for key in ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "DBUS_SESSION_BUS_ADDRESS", "SESSION_MANAGER"] {
      env[key] = nil
    }
    // A session bus of this test's own, never the machine's.
    let bus = try BackgroundProcess(
      "dbus-daemon", ["--session", "--nofork", "--nopidfile", "--print-address=1"], environment: env)
    let deadline = ContinuousClock.now + timeout
    var address = ""
    while address.isEmpty {
      address =
        String(decoding: bus.stdout, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
      if !bus.isRunning || ContinuousClock.now >= deadline {
        let r = await bus.stop()
        await server.stop()
        removeTree(directory)
        throw DesktopError.failed("dbus-daemon --session did not start: \(r)")
      }
      if address.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
    }
    env["DBUS_SESSION_BUS_ADDRESS"] = address
    let desktop = RunningDesktop(
      kind: kind, where_: where_, server: server, environment: env, directory: directory, bus: bus)
    do {
      try await desktop.launch(deadline: deadline)
    } catch {
      await desktop.stop()
      throw error
    }
    return desktop
  }

  private func launch(deadline: ContinuousClock.Instant) async throws {
    let connection = try server.connect()
    defer { connection.disconnect() }
    for (i, command) in kind.commands.enumerated() {
      processes.append(try BackgroundProcess(command[0], Array(command.dropFirst()), environment: environment))
      if i == 0 {
        try await waitFor("\(command[0]) to set _NET_SUPPORTING_WM_CHECK", deadline) {
          try connection.windowProperty("_NET_SUPPORTING_WM_CHECK", of: connection.root) != nil
        }
      }
    }
    if kind.compositor != nil {
      try await waitFor("the compositor to own _NET_WM_CM_S0 and redirect the screen", deadline) {
        let owner = try connection.selectionOwner("_NET_WM_CM_S0")
        return try owner != 0
          && connection.resourceTypes(ofClientOwning: owner)["CompositeClientSubwindows", default: 0] > 0
      }
    }
    try await server.waitUntilTheWindowManagerMaps(deadline: deadline) { what in
      try checkRunning("mapping a probe window (\(what))")
    }
    // Xvfb draws the pointer into the framebuffer (a software cursor), at the screen's
    // centre at first: into a corner with it, away from the windows the tests look at.
    try connection.check(
      xcb_warp_pointer_checked(
        connection.raw, 0, connection.root, 0, 0, 0, 0, Int16(server.width - 1), Int16(server.height - 1)),
      "WarpPointer")
  }

  private func checkRunning(_ what: String) throws {
    for p in processes where !p.isRunning {
      throw DesktopError.failed(
        "\(p.child.command.joined(separator: " ")) exited while \(what); its output:\n"
          + String(decoding: p.stdout + p.stderr, as: UTF8.self))
    }
  }

  private func waitFor(_ what: String, _ deadline: ContinuousClock.Instant, _ condition: () throws -> Bool)
    async throws
  {
    while try !condition() {
      try checkRunning("waiting for \(what)")
      if ContinuousClock.now >= deadline { throw DesktopError.failed("\(kind.name): timed out waiting for \(what)") }
      try await Task.sleep(for: .milliseconds(10))
    }
  }

  /// The programs' output so far (for failure messages).
  var log: String {
    processes.map { p in
      "== \(p.child.command.joined(separator: " ")) (running: \(p.isRunning))\n"
        + String(decoding: p.stdout + p.stderr, as: UTF8.self).suffix(3000)
    }.joined(separator: "\n")
  }

  /// Whether every program of the desktop still runs.
  var isRunning: Bool { processes.allSatisfy { $0.isRunning } }

  /// Stops the programs (last first), the bus and the server.
  func stop() async {
    for p in processes.reversed() { _ = await p.stop(grace: .seconds(2)) }
    _ = await bus.stop(grace: .seconds(2))
    await server.stop()
  }

  deinit { removeTree(directory) }

  // MARK: What the user sees

  /// `rect` of the screen now (the whole screen if nil), the compositor's output included:
  /// what the user sees. On Xvfb from its framebuffer file (an XWD image that Xvfb keeps
  /// mapped), read without any X request, so no capture in the daemon's eyes; under the
  /// module a GetImage of the root by this process, which the module trusts.
  func screen(_ rect: PixelRect? = nil) throws -> RGBImage {
    if where_ == .xorgModule {
      let all = PixelRect(x: 0, y: 0, width: server.width, height: server.height)
      let connection = try server.connect()
      defer { connection.disconnect() }
      return try connection.getImage(of: connection.root, rect: rect?.intersection(all) ?? all)
    }
    guard let data = FileManager.default.contents(atPath: framebufferPath) else {
      throw DesktopError.failed("cannot read \(framebufferPath)")
    }
    return try Self.decodeXWD(data, rect)
  }

  /// Decodes `rect` (clipped; all if nil) of a ZPixmap XWD image of 32 bits per pixel
  /// (Xvfb's framebuffer file at depth 24).
  static func decodeXWD(_ data: Data, _ rect: PixelRect? = nil) throws -> RGBImage {
    try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws -> RGBImage in
      func field(_ i: Int) -> Int {
        Int(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)))
      }
      guard bytes.count >= 100 else { throw DesktopError.failed("XWD file too short: \(bytes.count) bytes") }
      let (headerSize, format, width, height) = (field(0), field(2), field(4), field(5))
      let (byteOrder, bitsPerPixel, bytesPerLine, colors) = (field(7), field(11), field(12), field(19))
      let masks = [field(14), field(15), field(16)].map(UInt32.init)
      let offset = headerSize + colors * 12
      guard format == 2, bitsPerPixel == 32, bytes.count >= offset + bytesPerLine * height else {
        throw DesktopError.failed("unexpected XWD: format \(format), \(bitsPerPixel) bpp, \(bytes.count) bytes")
      }
      let area = (rect ?? PixelRect(x: 0, y: 0, width: width, height: height))
        .intersection(PixelRect(x: 0, y: 0, width: width, height: height))
      let shifts = masks.map { UInt32($0.trailingZeroBitCount) }
      var pixels = [UInt8](repeating: 0, count: area.area * 3)
      var p = 0
      for y in area.y..<area.maxY {
        for x in area.x..<area.maxX {
          let raw = bytes.loadUnaligned(fromByteOffset: offset + y * bytesPerLine + x * 4, as: UInt32.self)
          let value = byteOrder == 0 ? UInt32(littleEndian: raw) : UInt32(bigEndian: raw)
          for c in 0..<3 {
            pixels[p + c] = UInt8(truncatingIfNeeded: (value & masks[c]) >> shifts[c])
          }
          p += 3
        }
      }
      return RGBImage(width: area.width, height: area.height, pixels: pixels)
    }
  }

  // MARK: What a pager or taskbar asks of the window manager

  /// Sends a ClientMessage of `type` about `window` to the root, as EWMH and ICCCM ask
  /// (SubstructureRedirect | SubstructureNotify).
  func sendRootMessage(_ type: String, window: UInt32, _ data: [UInt32]) throws {
    let c = try server.connect()
    defer { c.disconnect() }
    var event = xcb_client_message_event_t()
    event.response_type = UInt8(XCB_CLIENT_MESSAGE)
    event.format = 32
    event.window = window
    event.type = try c.internAtom(type)
    withUnsafeMutableBytes(of: &event.data.data32) { raw in
      for (i, v) in data.prefix(5).enumerated() { raw.storeBytes(of: v, toByteOffset: i * 4, as: UInt32.self) }
    }
    let mask = XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT.rawValue | XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY.rawValue
    try withUnsafeBytes(of: &event) { raw in
      let pointer = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
      try c.check(xcb_send_event_checked(c.raw, 0, c.root, mask, pointer), "SendEvent(\(type))")
    }
  }

  /// ICCCM iconify: WM_CHANGE_STATE with IconicState (3).
  func iconify(_ window: UInt32) throws { try sendRootMessage("WM_CHANGE_STATE", window: window, [3]) }

  /// EWMH `_NET_WM_STATE` add (1) or remove (0) `_NET_WM_STATE_FULLSCREEN`, from a pager (2).
  func setFullscreen(_ window: UInt32, _ on: Bool) throws {
    let c = try server.connect()
    defer { c.disconnect() }
    let fullscreen = try c.internAtom("_NET_WM_STATE_FULLSCREEN")
    try sendRootMessage("_NET_WM_STATE", window: window, [on ? 1 : 0, fullscreen, 0, 2])
  }

  /// EWMH `_NET_CURRENT_DESKTOP`: switch to workspace `index` (counted from 0).
  func switchWorkspace(_ index: Int) throws {
    let c = try server.connect()
    defer { c.disconnect() }
    try sendRootMessage("_NET_CURRENT_DESKTOP", window: c.root, [UInt32(index), 0])
  }

  /// The first field of ICCCM's `WM_STATE` on a client window: 1 normal, 3 iconic.
  func wmState(_ window: UInt32) throws -> UInt32? {
    let c = try server.connect()
    defer { c.disconnect() }
    return try c.cardinalProperty("WM_STATE", of: window)
  }

  /// `_NET_CURRENT_DESKTOP` and `_NET_NUMBER_OF_DESKTOPS` of the root.
  func workspaces() throws -> (current: Int?, count: Int?) {
    let c = try server.connect()
    defer { c.disconnect() }
    return (
      try c.cardinalProperty("_NET_CURRENT_DESKTOP", of: c.root).map(Int.init),
      try c.cardinalProperty("_NET_NUMBER_OF_DESKTOPS", of: c.root).map(Int.init)
    )
  }

  /// Runs `i3-msg` (i3's IPC socket) with this desktop's environment.
  func i3(_ command: String) async throws {
    let r = try await runCommand("i3-msg", [command], environment: environment, timeout: .seconds(10))
    guard r.succeeded, !r.stdoutText.contains("\"success\":false") else {
      throw DesktopError.failed("i3-msg \(command): \(r)")
    }
  }
}

/// ffmpeg x11grab recording the whole screen in the background until `stop()`, each frame
/// a PPM file (written as it is grabbed).
final class Recording: @unchecked Sendable {
  let process: BackgroundProcess
  let directory: String

  init(on server: XvfbServer, frameRate: Int = 15) throws {
    directory = try makeTemporaryDirectory(prefix: "captureshield-recording")
    process = try server.startBackground(
      "ffmpeg",
      [
        "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "x11grab", "-draw_mouse", "0",
        "-framerate", String(frameRate), "-video_size", "\(server.width)x\(server.height)",
        "-i", "\(server.display).0+0,0", "-r", String(frameRate), "-y", directory + "/frame_%05d.ppm",
      ])
  }

  /// The frame files written so far, in order.
  var frameFiles: [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
      .filter { $0.hasPrefix("frame_") && $0.hasSuffix(".ppm") }.sorted().map { directory + "/" + $0 }
  }

  /// Waits until ffmpeg has written `count` frames.
  func waitForFrames(_ count: Int, timeout: Duration = .seconds(20)) async throws {
    try await waitUntil("ffmpeg wrote \(count) frames", timeout: timeout) {
      guard process.isRunning else { throw ProcessError.failed(await process.stop()) }
      return frameFiles.count >= count
    }
  }

  /// Stops ffmpeg (SIGTERM: it finishes the frame it writes) and returns each frame's
  /// count of `color` pixels (the last file, possibly cut short, is left out).
  func stop(counting color: RGB) async throws -> [Int] {
    _ = await process.stop(grace: .seconds(5))
    let files = frameFiles.dropLast()
    return try files.map { try RGBImage(pnmFile: $0).count(of: color) }
  }

  deinit {
    if Capture.keepFiles { print("[capture] kept the recording in \(directory)") } else { removeTree(directory) }
  }
}

/// A process's CPU time so far (user + system, in clock ticks of 1/100 s), from
/// /proc/PID/stat fields 14 and 15.
func cpuTicks(_ pid: pid_t) -> Int? {
  guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
    let close = stat.lastIndex(of: ")")
  else { return nil }
  let fields = stat[stat.index(after: close)...].split(separator: " ")
  // fields[0] is field 3 (state): utime is field 14, stime 15.
  guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
  return user + system
}

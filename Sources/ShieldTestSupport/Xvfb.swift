// A private Xvfb per test. Tests run concurrently, so every server lets Xvfb pick a free
// display number itself (`-displayfd`) instead of guessing one.

import Foundation
import Glibc

/// How to get the integration tests' tools (Xvfb, xwd, ImageMagick, ffmpeg, scrot, maim, openbox,
/// picom): the project's test command installs whatever is missing before it runs the tests.
public let integrationTestInstallHint =
  "run the tests through `make test`, which installs the missing test tools first"
  + " (`make deps`, i.e. `scripts/install-deps.sh test`, installs them alone)"

public enum XvfbError: Error, CustomStringConvertible {
  case notInstalled(searchPath: String)
  case exitedEarly(status: ExitStatus, log: String)
  case startupTimedOut(after: Duration, log: String)
  case badDisplayNumber(String, log: String)
  case cannotConnect(display: String, underlying: String, log: String)
  case startFailed(String)

  public var description: String {
    switch self {
    case .notInstalled(let searchPath):
      "Xvfb is not installed (not found in PATH=\(searchPath)). The integration tests need a real X"
        + " server and real capture tools: \(integrationTestInstallHint)."
    case .exitedEarly(let status, let log):
      "Xvfb exited during startup (\(status)). Its log:\n\(log)"
    case .startupTimedOut(let after, let log):
      "Xvfb did not report a display number within \(after). Its log:\n\(log)"
    case .badDisplayNumber(let text, let log):
      "Xvfb wrote an unexpected display number \(text.debugDescription). Its log:\n\(log)"
    case .cannotConnect(let display, let underlying, let log):
      "Xvfb on \(display) started but does not accept connections: \(underlying). Its log:\n\(log)"
    case .startFailed(let message):
      "cannot start Xvfb: \(message)"
    }
  }
}

/// A private Xvfb server, stopped by `stop()` or, at the latest, when released.
///
///     let server = try await XvfbServer.start()
///     let result = try await runCommand("xwd", ["-root"], environment: server.environment)
public final class XvfbServer: Sendable {
  public let displayNumber: Int
  public let width: Int
  public let height: Int
  public let depth: Int
  /// The complete Xvfb command line.
  public let command: [String]
  /// This process's environment with DISPLAY set to this server (and WAYLAND_DISPLAY removed,
  /// so no tool prefers a Wayland compositor).
  public let environment: [String: String]

  private let child: ChildProcess
  private let directory: String

  /// ":N"
  public var display: String { ":\(displayNumber)" }
  public var pid: pid_t { child.pid }
  public var isRunning: Bool { child.isRunning }
  /// Xvfb's stderr so far.
  public var log: String { (try? String(contentsOfFile: directory + "/xvfb.log", encoding: .utf8)) ?? "" }

  private init(
    displayNumber: Int, width: Int, height: Int, depth: Int, command: [String], child: ChildProcess,
    directory: String, baseEnvironment: [String: String]
  ) {
    self.displayNumber = displayNumber
    self.width = width
    self.height = height
    self.depth = depth
    self.command = command
    self.child = child
    self.directory = directory
    var environment = baseEnvironment
    environment["DISPLAY"] = ":\(displayNumber)"
    environment["WAYLAND_DISPLAY"] = nil
    // The daemon's learned history (`capture.learn`) is this server's own: a test never
    // sees what another test's tools did.
    environment["XDG_STATE_HOME"] = directory + "/state"
    self.environment = environment
  }

  /// Starts `Xvfb -displayfd 3 -nolisten tcp -noreset -screen 0 WxHxD EXTRA...` and waits
  /// until it has reported its display number and accepts a connection.
  /// `extraArguments` go last, e.g. `["+extension", "RANDR"]` or `["-ac"]`. `environment` is
  /// Xvfb's and, with DISPLAY added, the base of `self.environment` for the tools. `wrapper`
  /// is a command Xvfb runs under (the benchmark's BENCH_XVFB_WRAPPER, e.g. callgrind); its
  /// first word is looked up in PATH.
  public static func start(
    width: Int = 1024, height: Int = 768, depth: Int = 24, extraArguments: [String] = [],
    environment: [String: String] = ProcessInfo.processInfo.environment,
    startupTimeout: Duration = .seconds(15), wrapper: [String] = []
  ) async throws -> XvfbServer {
    guard let xvfbPath = findExecutable("Xvfb", environment: environment) else {
      throw XvfbError.notInstalled(searchPath: environment["PATH"] ?? "")
    }
    let directory: String
    do { directory = try makeTemporaryDirectory(prefix: "captureshield-xvfb") } catch {
      throw XvfbError.startFailed("\(error)")
    }
    let arguments =
      ["-displayfd", "3", "-nolisten", "tcp", "-noreset", "-screen", "0", "\(width)x\(height)x\(depth)"]
      + extraArguments
    let command = wrapper.isEmpty ? ["Xvfb"] + arguments : wrapper + [xvfbPath] + arguments
    return try await launch(
      command: command, directory: directory, width: width, height: height, depth: depth, environment: environment,
      startupTimeout: startupTimeout)
  }

  /// A headless Xorg with the dummy driver (`width`x`height`, depth 24), with the
  /// CaptureShield module loaded from `moduleDirectory` when it is given (the lines of
  /// `moduleOptions` go into its `SubSection "captureshield"`). Same interface as Xvfb's.
  /// Needs root (Xorg opens no console here: `-novtswitch -sharevts`).
  public static func startXorg(
    moduleDirectory: String?, moduleOptions: [String] = [], width: Int = 800, height: Int = 600,
    environment: [String: String] = ProcessInfo.processInfo.environment, startupTimeout: Duration = .seconds(20)
  ) async throws -> XvfbServer {
    let xorg = "/usr/lib/xorg/Xorg"
    guard FileManager.default.isExecutableFile(atPath: xorg) else {
      throw XvfbError.startFailed("\(xorg) is not installed (xserver-xorg-core): \(integrationTestInstallHint)")
    }
    let directory: String
    do { directory = try makeTemporaryDirectory(prefix: "captureshield-xorg") } catch {
      throw XvfbError.startFailed("\(error)")
    }
    let module =
      moduleDirectory.map { _ in
        (["  SubSection \"captureshield\""] + moduleOptions.map { "    " + $0 } + ["  EndSubSection"])
          .joined(separator: "\n")
      } ?? ""
    let config = """
      Section "ServerFlags"
        Option "AutoAddDevices" "false"
        Option "AutoEnableDevices" "false"
        Option "AutoAddGPU" "false"
        Option "DontVTSwitch" "true"
        Option "DontZap" "true"
      EndSection
      Section "Files"
        ModulePath "\(moduleDirectory.map { $0 + "," } ?? "")/usr/lib/xorg/modules"
      EndSection
      Section "Module"
      \(module)
      EndSection
      Section "Device"
        Identifier "dev0"
        Driver "dummy"
        VideoRam 32768
      EndSection
      Section "Monitor"
        Identifier "mon0"
        HorizSync 5.0 - 1000.0
        VertRefresh 5.0 - 200.0
        Modeline "\(width)x\(height)" 38.25 \(width) \(width + 32) \(width + 112) \(width + 224) \(height) \(height + 3) \(height + 7) \(height + 24) -hsync +vsync
      EndSection
      Section "Screen"
        Identifier "scr0"
        Device "dev0"
        Monitor "mon0"
        DefaultDepth 24
        SubSection "Display"
          Depth 24
          Modes "\(width)x\(height)"
          Virtual \(width) \(height)
        EndSubSection
      EndSection

      """
    do {
      try config.write(toFile: directory + "/xorg.conf", atomically: true, encoding: .utf8)
      try FileManager.default.createDirectory(atPath: directory + "/conf.d", withIntermediateDirectories: true)
    } catch {
      removeTree(directory)
      throw XvfbError.startFailed("\(error)")
    }
    let command = [
      xorg, "-config", directory + "/xorg.conf", "-configdir", directory + "/conf.d", "-logfile",
      directory + "/Xorg.log", "-noreset", "-nolisten", "tcp", "-novtswitch", "-sharevts", "-displayfd", "3",
    ]
    return try await launch(
      command: command, directory: directory, width: width, height: height, depth: 24, environment: environment,
      startupTimeout: startupTimeout)
  }

  /// The Xorg log (a server started by `startXorg`).
  public var xorgLog: String { (try? String(contentsOfFile: directory + "/Xorg.log", encoding: .utf8)) ?? "" }

  /// Xwayland (rootless) as a client of the Wayland compositor at `waylandDisplay` in
  /// `runtimeDirectory` (`XDG_RUNTIME_DIR`): `Xwayland -displayfd 3 -nolisten tcp -noreset`.
  /// The compositor is the caller's to start and stop (a headless weston in the tests).
  public static func startXwayland(
    waylandDisplay: String, runtimeDirectory: String,
    environment: [String: String] = ProcessInfo.processInfo.environment, startupTimeout: Duration = .seconds(15)
  ) async throws -> XvfbServer {
    let directory: String
    do { directory = try makeTemporaryDirectory(prefix: "captureshield-xwayland") } catch {
      throw XvfbError.startFailed("\(error)")
    }
    var env = environment
    env["WAYLAND_DISPLAY"] = waylandDisplay
    env["XDG_RUNTIME_DIR"] = runtimeDirectory
    return try await launch(
      command: ["Xwayland", "-displayfd", "3", "-nolisten", "tcp", "-noreset"], directory: directory, width: 1024,
      height: 768, depth: 24, environment: env, startupTimeout: startupTimeout)
  }

  private static func launch(
    command: [String], directory: String, width: Int, height: Int, depth: Int, environment: [String: String],
    startupTimeout: Duration
  ) async throws -> XvfbServer {
    let logPath = directory + "/xvfb.log"
    let readLog = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    // The display-number pipe. Both ends close-on-exec: only the child's fd 3 (made by dup2
    // in the spawn) stays open across exec, so no other concurrently spawned process holds
    // the write end.
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else {
      removeTree(directory)
      throw XvfbError.startFailed("pipe: \(String(cString: strerror(errno)))")
    }
    let (readEnd, writeEnd) = (ends[0], ends[1])
    _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
    _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
    _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
    defer { close(readEnd) }

    let child: ChildProcess
    do {
      child = try ChildProcess(
        command[0], Array(command.dropFirst()), environment: environment, stdout: .devNull,
        stderr: .writeFile(logPath), extra: [3: .inherit(writeEnd)])
    } catch {
      close(writeEnd)
      removeTree(directory)
      throw XvfbError.startFailed("\(error)")
    }
    close(writeEnd)

    func fail(_ error: XvfbError) async -> XvfbError {
      await child.terminate(grace: .seconds(2))
      removeTree(directory)
      return error
    }

    // Read "N\n" from the pipe without blocking a cooperative thread.
    let deadline = ContinuousClock.now + startupTimeout
    var text = ""
    var buffer = [UInt8](repeating: 0, count: 64)
    while !text.contains("\n") {
      let count = read(readEnd, &buffer, buffer.count)
      if count > 0 {
        text += String(decoding: buffer[0..<count], as: UTF8.self)
        continue
      }
      if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
        // EOF without a number: Xvfb died (or closed fd 3 early).
        let status = await child.wait(timeout: .seconds(2)) ?? .exited(-1)
        throw await fail(.exitedEarly(status: status, log: readLog()))
      }
      if let status = child.poll() {
        throw await fail(.exitedEarly(status: status, log: readLog()))
      }
      if ContinuousClock.now >= deadline {
        throw await fail(.startupTimedOut(after: startupTimeout, log: readLog()))
      }
      try? await Task.sleep(for: .milliseconds(2))
    }
    let numberText = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard let number = Int(numberText), number >= 0 else {
      throw await fail(.badDisplayNumber(numberText, log: readLog()))
    }

    let server = XvfbServer(
      displayNumber: number, width: width, height: height, depth: depth,
      command: child.command, child: child, directory: directory, baseEnvironment: environment)
    // -displayfd is written once the server listens; prove it with one real connection.
    do {
      let connection = try TestXConnection(display: server.display)
      try connection.sync()
    } catch {
      let log = server.log
      await server.stop()
      throw XvfbError.cannotConnect(display: server.display, underlying: "\(error)", log: log)
    }
    return server
  }

  deinit {
    child.terminateBlocking(grace: .seconds(3))
    removeTree(directory)
  }

  /// SIGTERM, wait, SIGKILL fallback. Idempotent; also done on deinit.
  public func stop() async {
    await child.terminate(grace: .seconds(3))
  }

  // MARK: Conveniences bound to this display

  /// Runs a command with this server's environment.
  public func run(
    _ executable: String, _ arguments: [String] = [], timeout: Duration = .seconds(30)
  ) async throws(ProcessError) -> CommandResult {
    try await runCommand(executable, arguments, environment: environment, timeout: timeout)
  }

  /// Starts a long-running command with this server's environment.
  public func startBackground(_ executable: String, _ arguments: [String] = []) throws(ProcessError)
    -> BackgroundProcess
  {
    try BackgroundProcess(executable, arguments, environment: environment)
  }

  /// A new xcb connection to this server.
  public func connect() throws(XConnectionError) -> TestXConnection { try TestXConnection(display: display) }

  /// Where `window`'s content is on the screen (root coordinates), and whether it is viewable.
  public func geometry(of window: UInt32) throws -> WindowGeometry {
    let connection = try connect()
    defer { connection.disconnect() }
    return try connection.geometry(of: window)
  }
}

// Running real programs (Xvfb, xwd, ffmpeg, ...) from integration tests.
//
// Why not Foundation.Process: we need exact control over what the child inherits (an
// extra descriptor for `Xvfb -displayfd`, no stray descriptors of other concurrently
// running tests, default signal dispositions and an empty signal mask even when spawned
// from a Swift-concurrency worker thread), and waiting must not block the cooperative
// thread pool (it has only as many threads as cores). So: posix_spawn + waitpid(WNOHANG)
// polled with Task.sleep; stdout/stderr go to temporary files, which cannot deadlock.

import Foundation
import Glibc
import Synchronization

/// How a child process ended.
public enum ExitStatus: Sendable, Equatable, CustomStringConvertible {
  case exited(Int32)
  case signaled(Int32)

  public var description: String {
    switch self {
    case .exited(let code): "exit status \(code)"
    case .signaled(let signal): "killed by signal \(signal)"
    }
  }

  /// Decodes a raw `waitpid` status (WIFEXITED/WEXITSTATUS are C macros Swift cannot import).
  public init(waitStatus status: Int32) {
    if status & 0x7f == 0 {
      self = .exited((status >> 8) & 0xff)
    } else {
      self = .signaled(status & 0x7f)
    }
  }
}

/// Output and status of a finished command.
public struct CommandResult: Sendable, CustomStringConvertible {
  /// argv[0] is the resolved executable path.
  public let command: [String]
  public let status: ExitStatus
  public let stdout: Data
  public let stderr: Data
  public let duration: Duration

  public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
  public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
  public var succeeded: Bool { status == .exited(0) }

  public var description: String {
    "`\(command.joined(separator: " "))` -> \(status) after \(duration)"
      + (stderr.isEmpty ? "" : "; stderr: \(stderrText.suffix(2000))")
  }

  /// Returns self if the command exited with status 0, throws `ProcessError.failed` otherwise.
  @discardableResult
  public func checked() throws(ProcessError) -> CommandResult {
    guard succeeded else { throw .failed(self) }
    return self
  }
}

public enum ProcessError: Error, CustomStringConvertible {
  case executableNotFound(name: String, searchPath: String)
  case spawnFailed(command: [String], errno: Int32)
  case timedOut(command: [String], after: Duration, stdout: String, stderr: String)
  case failed(CommandResult)
  case io(String)

  public var description: String {
    switch self {
    case .executableNotFound(let name, let searchPath):
      "executable `\(name)` not found in PATH=\(searchPath)"
    case .spawnFailed(let command, let code):
      "cannot start `\(command.joined(separator: " "))`: \(String(cString: strerror(code)))"
    case .timedOut(let command, let after, let stdout, let stderr):
      "`\(command.joined(separator: " "))` did not finish within \(after) and was killed;"
        + " stdout: \(stdout.suffix(1000)) stderr: \(stderr.suffix(2000))"
    case .failed(let result):
      "command failed: \(result)"
    case .io(let message):
      message
    }
  }
}

// MARK: - Locating executables and temporary files

/// Finds `name` in the PATH of `environment` (falling back to this process's PATH), like execvp.
public func findExecutable(_ name: String, environment: [String: String]) -> String? {
  if name.contains("/") {
    return access(name, X_OK) == 0 ? name : nil
  }
  let path =
    environment["PATH"] ?? ProcessInfo.processInfo.environment["PATH"]
    ?? "/usr/local/bin:/usr/bin:/bin"
  for directory in path.split(separator: ":", omittingEmptySubsequences: false) {
    let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + name
    var info = stat()
    if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 {
      return candidate
    }
  }
  return nil
}

/// A fresh private directory under the system temporary directory.
public func makeTemporaryDirectory(prefix: String) throws(ProcessError) -> String {
  let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
  var template = Array((base + "/" + prefix + "-XXXXXX").utf8CString)
  let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
  guard let made else {
    throw .io("mkdtemp in \(base) failed: \(String(cString: strerror(errno)))")
  }
  return String(cString: made)
}

/// Removes a directory tree, ignoring errors (best-effort cleanup).
public func removeTree(_ path: String) {
  try? FileManager.default.removeItem(atPath: path)
}

// MARK: - Spawning

/// What a child's descriptor should be connected to.
public enum ChildDescriptor: Sendable {
  case devNull
  /// Opened for writing (created/truncated) in the child.
  case writeFile(String)
  /// Opened for reading in the child.
  case readFile(String)
  /// A descriptor of this process, duplicated into the child.
  case inherit(Int32)
}

private typealias AddCloseFrom =
  @convention(c) (
    UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32
  ) -> Int32

/// glibc >= 2.34 has posix_spawn_file_actions_addclosefrom_np, but declares it only under
/// _GNU_SOURCE, which Swift's Glibc module does not see; look it up at run time.
private let addCloseFrom: AddCloseFrom? = {
  guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
  else { return nil }
  return unsafeBitCast(symbol, to: AddCloseFrom.self)
}()

/// A spawned child process. Reaps itself exactly once; signals are sent only while it is
/// known to be unreaped, so a recycled PID is never hit.
public final class ChildProcess: Sendable {
  public let pid: pid_t
  public let command: [String]
  public let started: ContinuousClock.Instant
  private let reaped = Mutex<ExitStatus?>(nil)

  /// Starts `executable` (looked up in `environment`'s PATH) with exactly `environment`.
  /// Descriptors 0, 1, 2 come from `stdin`/`stdout`/`stderr`; `extra` maps additional child
  /// descriptor numbers (>= 3) to sources. Everything else is closed in the child.
  public init(
    _ executable: String, _ arguments: [String], environment: [String: String],
    stdin: ChildDescriptor = .devNull, stdout: ChildDescriptor = .devNull,
    stderr: ChildDescriptor = .devNull, extra: [Int32: ChildDescriptor] = [:]
  ) throws(ProcessError) {
    guard let path = findExecutable(executable, environment: environment) else {
      throw .executableNotFound(
        name: executable,
        searchPath: environment["PATH"] ?? ProcessInfo.processInfo.environment["PATH"] ?? "")
    }
    let argv = [path] + arguments
    let envp = environment.map { "\($0.key)=\($0.value)" }

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }

    // Sources that are our own descriptors might collide with target numbers (e.g. our fd 3
    // is needed as the child's fd 1), so first copy them above every target number.
    var mapping: [(target: Int32, source: ChildDescriptor)] = [(0, stdin), (1, stdout), (2, stderr)]
    mapping += extra.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    let highestTarget = mapping.map(\.target).max() ?? 2
    var temporaries: [Int32] = []
    defer { temporaries.forEach { _ = close($0) } }
    for index in mapping.indices {
      if case .inherit(let fd) = mapping[index].source {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, highestTarget + 1)
        guard copy >= 0 else { throw .spawnFailed(command: argv, errno: errno) }
        temporaries.append(copy)
        mapping[index].source = .inherit(copy)
      }
    }
    for (target, source) in mapping {
      switch source {
      case .devNull:
        posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_RDWR, 0)
      case .writeFile(let file):
        posix_spawn_file_actions_addopen(&actions, target, file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
      case .readFile(let file):
        posix_spawn_file_actions_addopen(&actions, target, file, O_RDONLY, 0)
      case .inherit(let fd):
        // dup2 clears close-on-exec on the target.
        posix_spawn_file_actions_adddup2(&actions, fd, target)
      }
    }
    if let addCloseFrom { _ = addCloseFrom(&actions, highestTarget + 1) }

    // Default dispositions and an empty mask: the spawning thread may block signals, and
    // ignored signals would otherwise stay ignored across exec (SIGTERM must work).
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in 1..<Int32(32) where signal != SIGKILL && signal != SIGSTOP {
      sigaddset(&defaults, signal)
    }
    var emptyMask = sigset_t()
    sigemptyset(&emptyMask)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setsigmask(&attributes, &emptyMask)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

    var cArgv: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    var cEnvp: [UnsafeMutablePointer<CChar>?] = envp.map { strdup($0) } + [nil]
    defer {
      cArgv.forEach { free($0) }
      cEnvp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let started = ContinuousClock.now
    let rc = posix_spawn(&pid, path, &actions, &attributes, &cArgv, &cEnvp)
    guard rc == 0 else { throw .spawnFailed(command: argv, errno: rc) }
    self.pid = pid
    self.command = argv
    self.started = started
  }

  deinit {
    // Never leave a child (or a zombie) behind.
    terminateBlocking(grace: .seconds(2))
  }

  /// The exit status if the child has ended (reaps it), nil while it runs.
  public func poll() -> ExitStatus? {
    reaped.withLock { status in
      if let status { return status }
      var raw: Int32 = 0
      let result = waitpid(pid, &raw, WNOHANG)
      if result == pid {
        status = ExitStatus(waitStatus: raw)
      } else if result < 0 && errno == ECHILD {
        // Someone else reaped it (should not happen); treat as gone.
        status = .signaled(0)
      }
      return status
    }
  }

  public var isRunning: Bool { poll() == nil }

  /// Sends `signal` unless the child has already been reaped.
  public func send(_ signal: Int32) {
    reaped.withLock { status in
      if status == nil { _ = kill(pid, signal) }
    }
  }

  /// Waits for the child to end, up to `timeout` (forever if nil). Does not block a thread.
  public func wait(timeout: Duration? = nil) async -> ExitStatus? {
    let deadline = timeout.map { ContinuousClock.now + $0 }
    var interval = Duration.milliseconds(1)
    while true {
      if let status = poll() { return status }
      if let deadline, ContinuousClock.now >= deadline { return nil }
      // Cancellation must not turn this into a busy loop; we finish the wait regardless.
      try? await Task.sleep(for: interval)
      interval = min(interval * 2, .milliseconds(10))
    }
  }

  /// Blocking variant of `wait`, for deinit and other synchronous contexts. Polls every
  /// `pollInterval` (the benchmark polls every 0.2 ms, so an exit is reaped at once).
  public func waitBlocking(timeout: Duration, pollInterval: Duration = .milliseconds(2)) -> ExitStatus? {
    let deadline = ContinuousClock.now + timeout
    let microseconds = useconds_t(pollInterval / .microseconds(1))
    while true {
      if let status = poll() { return status }
      if ContinuousClock.now >= deadline { return nil }
      usleep(microseconds)
    }
  }

  /// SIGTERM, wait up to `grace`, then SIGKILL and wait. Idempotent.
  @discardableResult
  public func terminate(grace: Duration = .seconds(3)) async -> ExitStatus {
    if let status = poll() { return status }
    send(SIGTERM)
    if let status = await wait(timeout: grace) { return status }
    send(SIGKILL)
    if let status = await wait(timeout: .seconds(10)) { return status }
    return .signaled(SIGKILL)  // unkillable (D state); give up rather than hang a test
  }

  @discardableResult
  public func terminateBlocking(grace: Duration = .seconds(3)) -> ExitStatus {
    if let status = poll() { return status }
    send(SIGTERM)
    if let status = waitBlocking(timeout: grace) { return status }
    send(SIGKILL)
    return waitBlocking(timeout: .seconds(10)) ?? .signaled(SIGKILL)
  }
}

// MARK: - Running a command to completion

/// Runs a command to completion with exactly `environment`, capturing stdout and stderr
/// (through temporary files, so a chatty child can never deadlock on a full pipe).
/// On timeout the child gets SIGTERM, then SIGKILL, and `ProcessError.timedOut` is thrown.
/// A non-zero exit status is *not* an error here; use `.checked()`.
public func runCommand(
  _ executable: String, _ arguments: [String] = [],
  environment: [String: String] = ProcessInfo.processInfo.environment,
  timeout: Duration = .seconds(30), stdin: Data? = nil
) async throws(ProcessError) -> CommandResult {
  let directory = try makeTemporaryDirectory(prefix: "captureshield-run")
  defer { removeTree(directory) }
  let outPath = directory + "/stdout"
  let errPath = directory + "/stderr"
  var stdinSource = ChildDescriptor.devNull
  if let stdin {
    let inPath = directory + "/stdin"
    guard FileManager.default.createFile(atPath: inPath, contents: stdin) else {
      throw .io("cannot write \(inPath)")
    }
    stdinSource = .readFile(inPath)
  }
  let child = try ChildProcess(
    executable, arguments, environment: environment,
    stdin: stdinSource, stdout: .writeFile(outPath), stderr: .writeFile(errPath))
  let status = await child.wait(timeout: timeout)
  let read = { (path: String) in FileManager.default.contents(atPath: path) ?? Data() }
  guard let status else {
    await child.terminate(grace: .seconds(1))
    throw .timedOut(
      command: child.command, after: timeout,
      stdout: String(decoding: read(outPath), as: UTF8.self),
      stderr: String(decoding: read(errPath), as: UTF8.self))
  }
  return CommandResult(
    command: child.command, status: status, stdout: read(outPath), stderr: read(errPath),
    duration: ContinuousClock.now - child.started)
}

// MARK: - Long-running background processes

/// A long-running helper (window manager, compositor, capture loop...) started now and
/// stopped later. Its output is collected in temporary files and can be read at any time.
/// Stopped (SIGTERM, then SIGKILL) in `stop()` or, at the latest, on deinit.
public final class BackgroundProcess: Sendable {
  public let child: ChildProcess
  private let directory: String

  public init(
    _ executable: String, _ arguments: [String] = [],
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(ProcessError) {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-bg")
    do {
      child = try ChildProcess(
        executable, arguments, environment: environment,
        stdout: .writeFile(directory + "/stdout"), stderr: .writeFile(directory + "/stderr"))
    } catch {
      removeTree(directory)
      throw error
    }
    self.directory = directory
  }

  deinit {
    child.terminateBlocking(grace: .seconds(2))
    removeTree(directory)
  }

  public var pid: pid_t { child.pid }
  public var isRunning: Bool { child.isRunning }

  /// Everything the process has written so far.
  public var stdout: Data { FileManager.default.contents(atPath: directory + "/stdout") ?? Data() }
  public var stderr: Data { FileManager.default.contents(atPath: directory + "/stderr") ?? Data() }

  private func result(_ status: ExitStatus) -> CommandResult {
    CommandResult(
      command: child.command, status: status, stdout: stdout, stderr: stderr,
      duration: ContinuousClock.now - child.started)
  }

  /// Stops the process (SIGTERM, `grace`, SIGKILL) and returns what it printed. Idempotent.
  @discardableResult
  public func stop(grace: Duration = .seconds(3)) async -> CommandResult {
    result(await child.terminate(grace: grace))
  }

  /// Waits for the process to end on its own; throws `timedOut` (and stops it) if it doesn't.
  public func waitForExit(timeout: Duration = .seconds(30)) async throws(ProcessError) -> CommandResult {
    if let status = await child.wait(timeout: timeout) { return result(status) }
    let partial = await stop(grace: .seconds(1))
    throw .timedOut(
      command: child.command, after: timeout, stdout: partial.stdoutText,
      stderr: partial.stderrText)
  }
}

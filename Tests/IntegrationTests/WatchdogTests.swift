// A stopped or stuck daemon: the systemd watchdog stops hearing from
// it (sd_notify datagrams to $NOTIFY_SOCKET), and `shieldctl status` tells it from a live one.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("A stopped or stuck daemon: systemd watchdog and status", .serialized, .timeLimit(.minutes(4)))
struct WatchdogTests {
  /// WATCHDOG_USEC given to the daemon: it sends WATCHDOG=1 every 150 ms.
  static let watchdogUsec = 300_000

  @Test("READY=1 once protecting, WATCHDOG=1 from the loop; none while stopped, again after SIGCONT; STOPPING=1")
  func watchdogNotifications() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, color: .red, secure: true)
    let listener = try NotifyListener()
    var environment = server.environment
    environment["NOTIFY_SOCKET"] = listener.path
    environment["WATCHDOG_USEC"] = String(Self.watchdogUsec)
    let (daemon, policyDirectory) = try startDaemon(on: server, environment: environment)
    defer {
      kill(daemon.pid, SIGCONT)  // should an expectation below throw while it is stopped
      removeTree(policyDirectory)
    }

    let ready = try listener.waitFor("READY=1", timeout: .seconds(20))
    #expect(ready.contains("MAINPID=\(daemon.pid)"), "\(ready)")
    // READY=1 comes after the scan: the secure window that was there is shielded.
    try await waitUntil("the daemon shields the window", timeout: .seconds(10)) {
      (try? XControl(display: server.display).readState())??.windows.first { $0.id == window.id }?.shielded == true
    }
    for _ in 0..<3 { _ = try listener.waitFor("WATCHDOG=1", timeout: .seconds(10)) }

    // Stopped: once /proc says so, it cannot send; what it sent before is drained, then
    // nothing comes for three watchdog intervals (a bound on absence, but not a race: a
    // stopped process sends nothing at all).
    kill(daemon.pid, SIGSTOP)
    try await waitUntil("the daemon is stopped", timeout: .seconds(5)) { processState(daemon.pid) == "T" }
    listener.drain()
    let whileStopped = listener.receive(timeout: .microseconds(3 * Self.watchdogUsec))
    #expect(whileStopped == nil, "a stopped daemon notified: \(whileStopped ?? "")")

    kill(daemon.pid, SIGCONT)
    for _ in 0..<2 { _ = try listener.waitFor("WATCHDOG=1", timeout: .seconds(10)) }

    kill(daemon.pid, SIGTERM)
    _ = try listener.waitFor("STOPPING=1", timeout: .seconds(10))
    let end = try await daemon.waitForExit(timeout: .seconds(10))
    #expect(end.status == .exited(0), "\(end.stderrText)")
    window.close()
    await server.stop()
  }

  @Test("status: a live daemon answers (exit 0, responding); a stopped one does not (exit 1, NOT RESPONDING)")
  func statusOfStoppedDaemon() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server)

    try await expectResponding(server)

    daemon.signal(SIGSTOP)
    try await waitUntil("the daemon is stopped", timeout: .seconds(5)) { processState(daemon.process.pid) == "T" }
    try await expectNotResponding(server, reason: "stopped")

    daemon.signal(SIGCONT)
    try await expectResponding(server)
    await daemon.stop()
    await server.stop()
  }

  @Test(
    "status: a daemon whose loop is stuck (frozen, not stopped) does not answer: exit 1, NOT RESPONDING",
    .enabled(if: FreezerCgroup.available, "no writable cgroup v1 freezer (needs root): cannot freeze the daemon"))
  func statusOfStuckDaemon() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server)
    try await expectResponding(server)

    // The freezer stops the process without the stopped state /proc would show for
    // SIGSTOP: to everyone else it looks like a loop that no longer gets anywhere.
    // Thawed (by the defer below, which runs first) before the daemon can be released: a
    // frozen process cannot be killed.
    defer { withExtendedLifetime(daemon) {} }
    let freezer = try FreezerCgroup()
    defer { freezer.remove() }
    try freezer.freeze(daemon.process.pid)
    try await waitUntil("the daemon is frozen", timeout: .seconds(10)) { freezer.isFrozen }
    #expect(processState(daemon.process.pid) != "T")
    try await expectNotResponding(server, reason: "did not answer a ping")

    try freezer.thaw()
    try await expectResponding(server)
    await daemon.stop()
    await server.stop()
  }

  // MARK: Helpers

  func expectResponding(_ server: XvfbServer) async throws {
    let plain = try await Shieldctl.run(["status"], on: server)
    #expect(plain.status == .exited(0), "\(plain)")
    #expect(plain.stdoutText.hasPrefix("CaptureShield: running on display"), "\(plain.stdoutText)")
    let json = try await Shieldctl.run(["status", "--json"], on: server)
    #expect(json.status == .exited(0), "\(json)")
    let object = try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [String: Any]
    #expect(object?["responding"] as? Bool == true, "\(json.stdoutText)")
  }

  func expectNotResponding(_ server: XvfbServer, reason: String) async throws {
    let plain = try await Shieldctl.run(["status"], on: server)
    #expect(plain.status == .exited(1), "\(plain)")
    #expect(plain.stdoutText.contains("NOT RESPONDING"), "\(plain.stdoutText)")
    #expect(plain.stdoutText.contains(reason), "\(plain.stdoutText)")
    let json = try await Shieldctl.run(["status", "--json"], on: server)
    #expect(json.status == .exited(1), "\(json)")
    let object = try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [String: Any]
    #expect(object?["responding"] as? String == "false", "\(json.stdoutText)")
    #expect(object?["healthy"] as? String == "false", "\(json.stdoutText)")
  }

  /// `shieldctl watch` with a policy of its own and `environment` (the test's socket).
  func startDaemon(on server: XvfbServer, environment: [String: String]) throws -> (BackgroundProcess, String) {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-watchdog")
    let policy = directory + "/policy.json5"
    try "{version: 1, shield: {when: \"always\"}}".write(toFile: policy, atomically: true, encoding: .utf8)
    chmod(policy, 0o644)
    let process = try BackgroundProcess(
      Shieldctl.path, ["watch", "--policy", policy, "--log-format", "json"], environment: environment)
    return (process, directory)
  }
}

enum WatchdogTestError: Error, CustomStringConvertible {
  case socket(String)
  case timedOut(String)
  case cgroup(String)
  var description: String {
    switch self {
    case .socket(let s): "notify socket: \(s)"
    case .timedOut(let s): "timed out waiting for \(s)"
    case .cgroup(let s): "freezer cgroup: \(s)"
    }
  }
}

/// The service manager's side of sd_notify: a datagram socket bound to a path.
final class NotifyListener {
  let path: String
  private let directory: String
  private let fd: Int32

  init() throws {
    directory = try makeTemporaryDirectory(prefix: "captureshield-notify")
    path = directory + "/notify"
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw WatchdogTestError.socket("socket: errno \(errno)") }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
      throw WatchdogTestError.socket("path too long")
    }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
    let rc = withUnsafePointer(to: &addr) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard rc == 0 else { throw WatchdogTestError.socket("bind \(path): errno \(errno)") }
  }

  deinit {
    close(fd)
    removeTree(directory)
  }

  /// The next datagram, or nil when none comes within `timeout`.
  func receive(timeout: Duration) -> String? {
    let deadline = ContinuousClock.now + timeout
    while true {
      let left = deadline - ContinuousClock.now
      let ms = max(0, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
      var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      let n = poll(&p, 1, ms)
      if n > 0 {
        var buf = [UInt8](repeating: 0, count: 4096)
        let got = recv(fd, &buf, buf.count, Int32(MSG_DONTWAIT))
        if got >= 0 { return String(decoding: buf[..<got], as: UTF8.self) }
      }
      if ContinuousClock.now >= deadline { return nil }
    }
  }

  /// Receives until a datagram holding the line `line` comes; returns that datagram.
  func waitFor(_ line: String, timeout: Duration) throws -> String {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      if let m = receive(timeout: deadline - ContinuousClock.now),
        m.split(separator: "\n").contains(Substring(line))
      {
        return m
      }
    }
    throw WatchdogTestError.timedOut(line)
  }

  /// Discards whatever is queued.
  func drain() {
    var buf = [UInt8](repeating: 0, count: 4096)
    while recv(fd, &buf, buf.count, Int32(MSG_DONTWAIT)) >= 0 {}
  }
}

/// A cgroup v1 freezer group of our own (root only): freezes a process without stopping it.
final class FreezerCgroup {
  static let root = "/sys/fs/cgroup/freezer"
  static var available: Bool {
    access(root + "/cgroup.procs", W_OK) == 0
  }
  let path: String
  private var frozen: [pid_t] = []

  init() throws {
    path = Self.root + "/captureshield-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    guard mkdir(path, 0o755) == 0 else { throw WatchdogTestError.cgroup("mkdir \(path): errno \(errno)") }
  }

  func freeze(_ pid: pid_t) throws {
    try write("\(pid)", to: path + "/cgroup.procs")
    frozen.append(pid)
    try write("FROZEN", to: path + "/freezer.state")
  }

  func thaw() throws { try write("THAWED", to: path + "/freezer.state") }

  var isFrozen: Bool {
    (try? String(contentsOfFile: path + "/freezer.state", encoding: .utf8))?.hasPrefix("FROZEN") == true
  }

  /// Thaws, moves the processes back to the root group and removes the group.
  func remove() {
    try? thaw()
    for pid in frozen { try? write("\(pid)", to: Self.root + "/cgroup.procs") }
    rmdir(path)
  }

  private func write(_ text: String, to file: String) throws {
    let fd = open(file, O_WRONLY)
    guard fd >= 0 else { throw WatchdogTestError.cgroup("open \(file): errno \(errno)") }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    guard Glibc.write(fd, bytes, bytes.count) == bytes.count else {
      throw WatchdogTestError.cgroup("write \(text) to \(file): errno \(errno)")
    }
  }
}

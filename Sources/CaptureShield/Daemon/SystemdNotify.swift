// The service manager's notification protocol (sd_notify(3)) without libsystemd: one
// datagram per message to the AF_UNIX socket in $NOTIFY_SOCKET.

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Sends `READY=1`, `WATCHDOG=1` and `STOPPING=1` to the service manager (a systemd unit
/// with `Type=notify` and `WatchdogSec=`). Without `$NOTIFY_SOCKET` there is none, and the
/// daemon runs as before: no socket, no wakeups.
final class SystemdNotify {
  let config: SystemdNotifyConfig
  private let fd: Int32
  /// When the next `WATCHDOG=1` is due (nil: no watchdog); the loop's poll wakes for it.
  private(set) var nextWatchdog: MonotonicTime?

  /// Reads the environment, then removes `NOTIFY_SOCKET`, `WATCHDOG_USEC` and
  /// `WATCHDOG_PID` from it, so that no process we start inherits them (as
  /// `sd_notify(unset_environment: 1)` does). nil when not started by a service manager
  /// that listens.
  static func fromEnvironment(now: MonotonicTime) -> SystemdNotify? {
    let config = SystemdNotifyConfig.parse(ProcessInfo.processInfo.environment, pid: getpid())
    for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { unsetenv(name) }
    guard let config else { return nil }
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    return SystemdNotify(config: config, fd: fd, now: now)
  }

  private init(config: SystemdNotifyConfig, fd: Int32, now: MonotonicTime) {
    self.config = config
    self.fd = fd
    nextWatchdog = config.nextWatchdog(after: now)
  }

  deinit { close(fd) }

  /// The daemon has scanned the display and protects it.
  func ready(status: String) { send("READY=1\nSTATUS=\(status)\nMAINPID=\(getpid())") }

  /// The daemon is shutting down.
  func stopping() { send("STOPPING=1") }

  /// Sends `WATCHDOG=1` when it is due at `now` (called by the loop after each poll).
  func watchdogIfDue(_ now: MonotonicTime) {
    guard let due = nextWatchdog, now >= due else { return }
    send("WATCHDOG=1")
    nextWatchdog = config.nextWatchdog(after: now)
  }

  /// One datagram; never blocks (a full socket queue drops the message, as libsystemd's
  /// sd_notify would fail it), and failures are not fatal: the service manager then
  /// decides (a missed watchdog restarts us).
  private func send(_ message: String) {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let path = config.socketPath
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
      for (i, b) in path.enumerated() where i < raw.count { raw[i] = b }
    }
    // An abstract address's length counts its bytes exactly; a path's too (the kernel
    // adds the terminating 0 itself).
    let length = socklen_t(MemoryLayout.offset(of: \sockaddr_un.sun_path)! + path.count)
    let bytes = Array(message.utf8)
    _ = withUnsafePointer(to: &addr) { p in
      p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
        bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), sa, length) }
      }
    }
  }
}

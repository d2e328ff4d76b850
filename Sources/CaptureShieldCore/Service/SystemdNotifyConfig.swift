/// What the service manager asks of the daemon through its environment (`sd_notify(3)`,
/// `sd_watchdog_enabled(3)`), decided without I/O: where to send notifications, and how
/// often to tell the watchdog that the loop is alive. The sender is `SystemdNotify` (the shell's Daemon/).
public struct SystemdNotifyConfig: Sendable, Hashable {
  /// The notification socket's address, as the bytes of `sockaddr_un.sun_path` (a leading
  /// 0 for an abstract socket), without a terminating 0.
  public var socketPath: [UInt8]
  /// How often `WATCHDOG=1` is sent: half of `WATCHDOG_USEC`, as systemd recommends; nil
  /// when no watchdog is asked for (or it is meant for another process: `WATCHDOG_PID`).
  public var watchdogInterval: PolicyDuration?

  /// The longest `sun_path` on Linux (108 bytes, with the terminating 0 of a path).
  static let maxPathBytes = 107

  /// The configuration from `environment` for the process `pid`; nil when `NOTIFY_SOCKET`
  /// is unset, empty or not a socket address we can use (not absolute, not `@abstract`,
  /// or too long): the daemon then runs as before, without notifications.
  public static func parse(_ environment: [String: String], pid: Int32) -> SystemdNotifyConfig? {
    guard let path = socketAddress(environment["NOTIFY_SOCKET"]) else { return nil }
    return SystemdNotifyConfig(
      socketPath: path,
      watchdogInterval: watchdogInterval(
        usec: environment["WATCHDOG_USEC"], watchdogPID: environment["WATCHDOG_PID"], pid: pid))
  }

  /// `NOTIFY_SOCKET`: an absolute path, or `@name` for an abstract socket (its first byte
  /// becomes 0). nil for anything else.
  static func socketAddress(_ value: String?) -> [UInt8]? {
    guard let value, let first = value.first else { return nil }
    var bytes = Array(value.utf8)
    switch first {
    case "/": break
    case "@": bytes[0] = 0
    default: return nil
    }
    guard bytes.count >= 2, bytes.count <= maxPathBytes else { return nil }
    if first == "/" && bytes.contains(0) { return nil }
    return bytes
  }

  /// Half of `WATCHDOG_USEC` (a positive decimal number of microseconds), unless
  /// `WATCHDOG_PID` is set and names another process. nil when no watchdog is asked for.
  static func watchdogInterval(usec: String?, watchdogPID: String?, pid: Int32) -> PolicyDuration? {
    guard let usec, let us = UInt64(usec), us > 0, us < UInt64.max / 1000 else { return nil }
    if let watchdogPID, !watchdogPID.isEmpty {
      guard let owner = Int32(watchdogPID), owner == pid else { return nil }
    }
    // At least 1 ms: a smaller interval would turn the loop into a busy wait.
    return PolicyDuration(nanoseconds: max(us * 1000 / 2, 1_000_000))
  }

  /// When the next `WATCHDOG=1` is due after one sent at `sent`; nil without a watchdog.
  public func nextWatchdog(after sent: MonotonicTime) -> MonotonicTime? {
    watchdogInterval.map { sent + $0 }
  }
}

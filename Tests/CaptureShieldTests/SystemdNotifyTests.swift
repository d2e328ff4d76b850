import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// The service manager's environment (`NOTIFY_SOCKET`, `WATCHDOG_USEC`, `WATCHDOG_PID`),
/// decided without I/O (`SystemdNotifyConfig`).
@Suite("systemd notification and watchdog settings")
struct SystemdNotifyTests {
  static let pid: Int32 = 4242

  @Test(
    "NOTIFY_SOCKET: a path, an abstract name (@ becomes a 0 byte), or nothing",
    arguments: [
      ("/run/user/1000/systemd/notify", Array("/run/user/1000/systemd/notify".utf8)),
      ("@/org/freedesktop/systemd1/notify/123", [0] + Array("/org/freedesktop/systemd1/notify/123".utf8)),
      ("@x", [0, UInt8(ascii: "x")]),
    ] as [(String, [UInt8])])
  func socketAddress(value: String, bytes: [UInt8]) {
    #expect(SystemdNotifyConfig.socketAddress(value) == bytes)
  }

  @Test(
    "unusable NOTIFY_SOCKET values turn notifications off",
    arguments: [
      nil, "", "relative/path", "@", "/", "vsock:2:1234", "/" + String(repeating: "a", count: 107),
      "@" + String(repeating: "a", count: 107), "/a\u{0}b",
    ] as [String?])
  func badSocketAddress(value: String?) {
    #expect(SystemdNotifyConfig.socketAddress(value) == nil)
    var env = ["WATCHDOG_USEC": "1000000"]
    env["NOTIFY_SOCKET"] = value
    #expect(SystemdNotifyConfig.parse(env, pid: Self.pid) == nil)
  }

  @Test("the longest usable path: 107 bytes")
  func longestPath() {
    let path = "/" + String(repeating: "a", count: 106)
    #expect(SystemdNotifyConfig.socketAddress(path)?.count == 107)
  }

  @Test(
    "WATCHDOG_USEC and WATCHDOG_PID: WATCHDOG=1 every half interval, for this process only",
    arguments: [
      // usec, WATCHDOG_PID, interval in ns (nil: no watchdog)
      ("10000000", nil, 5_000_000_000),
      ("300000", nil, 150_000_000),
      ("300000", "4242", 150_000_000),
      ("300000", "", 150_000_000),
      ("300000", "1", nil),  // the watchdog is for another process
      ("300000", "pid", nil),
      ("1", nil, 1_000_000),  // never below 1 ms: no busy loop
      ("0", nil, nil),
      ("-5", nil, nil),
      ("10s", nil, nil),
      ("", nil, nil),
      (nil, "4242", nil),
      ("18446744073709551615", nil, nil),  // overflows in nanoseconds
    ] as [(String?, String?, UInt64?)])
  func watchdogInterval(usec: String?, watchdogPID: String?, nanoseconds: UInt64?) {
    let interval = SystemdNotifyConfig.watchdogInterval(usec: usec, watchdogPID: watchdogPID, pid: Self.pid)
    #expect(interval?.nanoseconds == nanoseconds)
  }

  @Test("parse: the socket and the watchdog together; the next WATCHDOG=1 is one interval after the last")
  func parseAndDeadlines() throws {
    let config = try #require(
      SystemdNotifyConfig.parse(
        ["NOTIFY_SOCKET": "@notify", "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "4242"], pid: Self.pid))
    #expect(config.socketPath == [0] + Array("notify".utf8))
    #expect(config.watchdogInterval == .seconds(1))
    let t = MonotonicTime(nanoseconds: 5_000_000_000)
    #expect(config.nextWatchdog(after: t) == MonotonicTime(nanoseconds: 6_000_000_000))

    // Without WATCHDOG_USEC: READY=1 and STOPPING=1 only, and no deadline (no wakeups).
    let plain = try #require(SystemdNotifyConfig.parse(["NOTIFY_SOCKET": "/run/notify"], pid: Self.pid))
    #expect(plain.watchdogInterval == nil)
    #expect(plain.nextWatchdog(after: t) == nil)
  }

  @Test("the ping command round-trips through the ClientMessage words with its nonce")
  func pingCommand() throws {
    for nonce: UInt32 in [1, 0x8000_0000, UInt32.max] {
      let words = CommandCode.encode(.ping(nonce: nonce), senderPID: 77)
      #expect(words[0] == 7)
      let decoded = try #require(CommandCode.decode(words))
      #expect(decoded.0 == .ping(nonce: nonce))
      #expect(decoded.senderPID == 77)
    }
  }
}

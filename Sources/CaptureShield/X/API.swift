// Users of the library (shieldctl, the tests) see the core's public types through this module.
@_exported import CaptureShieldCore

/// Errors from talking to the X server. X protocol errors about vanished windows are
/// not thrown by the daemon (they are expected races); these are for the CLI.
public enum XError: Error, Sendable, Hashable, CustomStringConvertible {
  /// No X server at this display (or DISPLAY unset).
  case cannotConnect(display: String)
  /// The window id does not exist on this display.
  case noSuchWindow(WindowID)
  /// No `shieldctl watch` runs on this display.
  case noDaemon(display: String)
  /// Another daemon already owns the display.
  case alreadyRunning(pid: Int?)
  /// A required X extension is missing.
  case missingExtension(String)
  /// Anything else the server said.
  case failed(String)

  public var description: String {
    switch self {
    case .cannotConnect(let d): return "cannot connect to X display '\(d)'"
    case .noSuchWindow(let w): return "no window 0x\(String(w, radix: 16)) (\(w)) on this display"
    case .noDaemon(let d):
      return "no CaptureShield daemon is running on display '\(d)' (start one with 'shieldctl watch')"
    case .alreadyRunning(let pid):
      return "a CaptureShield daemon already runs on this display" + (pid.map { " (pid \($0))" } ?? "")
    case .missingExtension(let e): return "the X server lacks the \(e) extension"
    case .failed(let s): return s
    }
  }
}

/// A request from the CLI to the running daemon, sent over its command socket
/// (`CommandChannel`).
public enum DaemonCommand: Sendable, Hashable {
  case shield(WindowID)
  case unshield(WindowID)
  /// Pause shielding for a duration (nil: until resume).
  case pause(PolicyDuration?)
  case resume
  /// Reload the policy files (like SIGHUP).
  case reload
  /// Clear the guarded clipboard (copied-text guard).
  case clipboardClear
  /// Are you there? The daemon's loop writes `nonce` to `_CAPTURE_SHIELD_PONG` on its
  /// manager window and replies (`shieldctl status`).
  case ping(nonce: UInt32)
  /// Remove the window's secure tag (`shieldctl untag` while a daemon runs): a tag another
  /// client removes is put back (docs/security.md, "Tags").
  case untag(WindowID)
  /// Set the window's secure tag (`shieldctl tag` while a daemon runs): under the Xorg
  /// module only the window's owner and trusted programs (the daemon) may.
  case tag(WindowID)
  /// The titles of the secure windows, for `shieldctl list`, `status` and `policy explain
  /// --window` (the published state has none: any client can read it). Answered with
  /// `CommandChannel.Reply.titles` to the daemon's own user only (the socket's check).
  case titles
}

/// How `shieldctl watch` runs.
public struct WatchOptions: Sendable {
  /// X display; nil means `$DISPLAY`.
  public var display: String?
  /// Policy files given with `--policy`; nil means the default locations.
  public var policyPaths: [String]?
  public var logFormat: AuditFormat = .text
  /// Also send audit records to syslog (RFC 5424).
  public var syslog: Bool = false
  public init(display: String? = nil, policyPaths: [String]? = nil) {
    self.display = display
    self.policyPaths = policyPaths
  }
}

/// Exit codes of `shieldctl watch`.
public enum WatchExit {
  public static let ok: Int32 = 0
  public static let failure: Int32 = 1
  /// The policy given at start-up is invalid (no last good policy to keep).
  public static let badPolicy: Int32 = 78
  /// The X server went away: the service manager should restart us.
  public static let xServerGone: Int32 = 69
  /// Another daemon owns the display.
  public static let alreadyRunning: Int32 = 75
}

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

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

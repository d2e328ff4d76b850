// One X error policy: what an X error means, decided in one place for every connection.

internal import CXCB
import Foundation

/// What an X error on one of the daemon's connections means.
///
/// X errors are never fatal. A window (or its drawable) that vanished between two of our
/// requests is an expected race on a live desktop, logged at debug level only. Anything
/// else (BadMatch, BadValue, BadAccess, ...) points at a bug of ours or at another client
/// interfering, and is logged as an error with the request's major and minor opcode.
struct XErrorPolicy: Sendable {
  /// How bad an error is.
  enum Meaning: Equatable, Sendable {
    /// A resource vanished between two requests: expected, logged at debug level.
    case expectedRace
    /// Anything else: logged as an error.
    case unexpected
  }

  /// X protocol error codes (X11 protocol, section 4, "Errors").
  enum Code {
    static let badWindow: UInt8 = 3
    static let badPixmap: UInt8 = 4
    static let badAtom: UInt8 = 5
    static let badMatch: UInt8 = 8
    static let badDrawable: UInt8 = 9
    static let badAccess: UInt8 = 10
  }

  /// Pure: what an error with this code means.
  static func meaning(code: UInt8) -> Meaning {
    switch code {
    case Code.badWindow, Code.badDrawable, Code.badPixmap: return .expectedRace
    default: return .unexpected
    }
  }

  /// Pure: what an error on the shield connection means. A shield's CreateWindow (major
  /// 1) that fails with BadMatch naming one of our targets (`resourceIsTarget`) met an
  /// InputOnly window: shields go up at once on new top-levels, before their class is read,
  /// and an InputOnly window cannot hold an InputOutput child. It shows no pixels; window
  /// tracking drops it once its class is read. Expected, not an error.
  static func shieldMeaning(code: UInt8, major: UInt8, resourceIsTarget: Bool) -> Meaning {
    if code == Code.badMatch, major == 1, resourceIsTarget { return .expectedRace }
    return meaning(code: code)
  }

  /// The line logged for an error (`connection` names which of the daemon's connections).
  static func describe(code: UInt8, major: UInt8, minor: UInt16, resource: UInt32, connection: String) -> String {
    "X error \(code) on the \(connection) connection: request major \(major) minor \(minor), resource 0x\(String(resource, radix: 16))"
  }

  /// Where the lines go (nil: nowhere, e.g. in unit tests).
  let log: AuditLog?

  /// Logs one error as its meaning says (by default `meaning(code:)`; `why` says why an
  /// expected one is).
  func report(
    _ e: xcb_generic_error_t, connection: String, meaning: Meaning? = nil, why: String = "a resource vanished"
  ) {
    let line = Self.describe(
      code: e.error_code, major: e.major_code, minor: e.minor_code, resource: e.resource_id, connection: connection)
    switch meaning ?? Self.meaning(code: e.error_code) {
    case .expectedRace: log?.debug(line + " (\(why): expected)")
    case .unexpected: log?.error(line)
    }
  }

  /// Reports and frees the error libxcb handed out with a reply or a request check
  /// (`xcb_poll_for_reply`, `xcb_request_check`); nil is no error.
  func report(_ error: UnsafeMutablePointer<xcb_generic_error_t>?, connection: String) {
    guard let error else { return }
    report(error.pointee, connection: connection)
    free(error)
  }
}

extension XConnection {
  /// Reads and frees every event queued on this connection, reporting its errors through
  /// `errors` as `name`: for the connections that select no events (the RECORD control
  /// connections), where only errors of unchecked requests arrive.
  func drainErrors(connection name: String) {
    while let ev = xcb_poll_for_event(conn) {
      if CXCB_event_type(ev) == 0 {
        errors.report(UnsafeRawPointer(ev).load(as: xcb_generic_error_t.self), connection: name)
      }
      free(ev)
    }
  }
}

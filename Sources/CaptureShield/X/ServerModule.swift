// Finding the CaptureShield Xorg module (xorg/PROTOCOL.md) on a display and reading what
// it says about itself and about clients. Its state-changing requests are in Effects/.

internal import CXCB
import Foundation

/// The CAPTURESHIELD extension of the Xorg module, as a client sees it.
struct ServerModule: Sendable {
  /// Minor opcodes (xorg/PROTOCOL.md).
  enum Minor {
    static let queryVersion: UInt8 = 0
    static let grant: UInt8 = 1
    static let revoke: UInt8 = 2
    static let selectInput: UInt8 = 3
    static let getClientTrust: UInt8 = 4
    static let setProtection: UInt8 = 5
  }
  /// How the module keeps secure pixels from untrusted readers.
  enum Mode: String, Sendable, Codable {
    case censor, deny
  }
  /// How the module trusts a client (GetClientTrust, and QueryVersion for the caller).
  enum Trust: UInt8, Sendable, Codable {
    case none = 0
    case server = 1
    case trustList = 2
    case granted = 3
  }
  /// The CaptureNotify event's kinds.
  enum NotifyKind: UInt8, Sendable {
    case censored = 0
    case denied = 1
    /// Someone tried to take a `_CAPTURE_SHIELD_S*` selection (drawable: the atom).
    case selectionRefused = 2
    /// KillClient of a trusted client (drawable: the XID it named).
    case killRefused = 3
    /// A `_CAPTURE_SHIELD_*` root property change (drawable: the atom).
    case propertyRefused = 4
    /// A `_CAPTURE_SHIELD_COMMAND` SendEvent (drawable: the destination window).
    case commandRefused = 5
    /// (1.2, secure mask) A window became secure (reader: its owner; drawable: the window).
    case secure = 6
    /// The module refused or ended a client's trust (reader: that client; drawable: the
    /// reason's number, `trustReason`).
    case trust = 7
    /// The module kept a focused secure window's keys from an untrusted client, or refused
    /// its input into one (reader: that client; drawable: the secure window).
    case input = 8

    /// Kind 7's reason for the daemon's program run as another command than `watch`.
    static let notRunAsWatch: UInt32 = 6

    /// Kind 7's reasons (xorg/include/captureshieldproto.h).
    static func trustReason(_ n: UInt32) -> String {
      switch n {
      case 1: return "injected code"
      case 2: return "handover (another process holds its connection)"
      case 3: return "another mount namespace"
      case 4: return "traced"
      case 5: return "its program or a directory above it is not root's alone"
      case 6: return "the daemon's program not run as 'watch'"
      case 7: return "the daemon's program run by a user not in DaemonUsers"
      case 8: return "process gone"
      case 9: return "its program file changed"
      default: return "reason \(n)"
      }
    }

    /// What a refused defence's audit record says was tried (nil for reads).
    var defence: String? {
      switch self {
      case .censored, .denied, .secure, .trust, .input: return nil
      case .selectionRefused: return "take the daemon's manager selection"
      case .killRefused: return "kill a trusted client's connection"
      case .propertyRefused: return "change the daemon's root properties"
      case .commandRefused: return "send the daemon a command"
      }
    }
  }

  static let name = "CAPTURESHIELD"
  let majorOpcode: UInt8
  let firstEvent: UInt8
  let version: (major: UInt16, minor: UInt16)
  let mode: Mode
  /// How the module trusts the connection that asked.
  let callerTrust: Trust

  /// "1.0"
  var versionString: String { "\(version.major).\(version.minor)" }

  /// SelectInput's mask bits.
  enum EventMask {
    static let notify: UInt32 = 1
    /// Since 1.2: kind 6 each time a window becomes secure.
    static let secure: UInt32 = 2
  }

  /// Whether the module reports windows that become secure (1.2): then a daemon whose
  /// policy has no rules about windows learns every secure window without watching all.
  var reportsSecureWindows: Bool { version.major > 1 || (version.major == 1 && version.minor >= 2) }
  /// Whether it keeps the keys of a focused secure window from untrusted clients (rule
  /// `input`, reported as CaptureNotify kind 8: protocol 1.2).
  var protectsInput: Bool { reportsSecureWindows }

  /// The module on `x`'s display, or nil when the server has no CAPTURESHIELD extension.
  static func probe(_ x: XConnection) -> ServerModule? {
    guard let (major, firstEvent) = x.queryExtension(name) else { return nil }
    // QueryVersion: client version 1.2 in the argument (two CARD16).
    let seq = CXCB_shield_ext_request(x.conn, major, Minor.queryVersion, 1 | (2 << 16), 1)
    guard seq != 0, let reply = xcb_wait_for_reply(x.conn, seq, nil) else { return nil }
    defer { free(reply) }
    let b = UnsafeRawPointer(reply)
    let mode: Mode = b.load(fromByteOffset: 1, as: UInt8.self) == 1 ? .deny : .censor
    return ServerModule(
      majorOpcode: major, firstEvent: firstEvent,
      version: (
        b.loadUnaligned(fromByteOffset: 8, as: UInt16.self), b.loadUnaligned(fromByteOffset: 10, as: UInt16.self)
      ),
      mode: mode, callerTrust: Trust(rawValue: b.load(fromByteOffset: 12, as: UInt8.self)) ?? .none)
  }

  /// How the module trusts the client owning `xid`; nil when it does not exist.
  func trust(of xid: UInt32, on x: XConnection) -> Trust? {
    let seq = CXCB_shield_ext_request(x.conn, majorOpcode, Minor.getClientTrust, xid, 1)
    guard seq != 0, let reply = xcb_wait_for_reply(x.conn, seq, nil) else { return nil }
    defer { free(reply) }
    return Trust(rawValue: UnsafeRawPointer(reply).load(fromByteOffset: 1, as: UInt8.self))
  }

  /// A CaptureNotify event: who read, what, with which request, and what the module did.
  struct Notify: Sendable, Hashable {
    var kind: UInt8
    var reader: UInt32
    var drawable: UInt32
    var requestMajor: UInt8
    var requestMinor: UInt16
    /// The reader's PID as the server knows it (0: unknown).
    var pid: UInt32
  }

  /// Decodes `ev` when it is this module's CaptureNotify. One that another client sent
  /// (SendEvent sets bit 7 of the type; the module's own never have it) is a forgery: any
  /// client can SendEvent any event type to a window of the daemon's, and a forged notice
  /// would write false audit records blaming whoever it names.
  func notify(_ ev: UnsafeMutablePointer<xcb_generic_event_t>) -> Notify? {
    guard CXCB_event_type(ev) == firstEvent else { return nil }
    guard CXCB_event_sent(ev) == 0 else { return nil }
    let b = UnsafeRawPointer(ev)
    return Notify(
      kind: b.load(fromByteOffset: 1, as: UInt8.self), reader: b.loadUnaligned(fromByteOffset: 4, as: UInt32.self),
      drawable: b.loadUnaligned(fromByteOffset: 8, as: UInt32.self),
      requestMajor: b.load(fromByteOffset: 16, as: UInt8.self),
      requestMinor: b.loadUnaligned(fromByteOffset: 18, as: UInt16.self),
      pid: b.loadUnaligned(fromByteOffset: 20, as: UInt32.self))
  }
}

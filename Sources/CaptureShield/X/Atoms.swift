internal import CXCB

/// Names of the atoms of the CaptureShield protocol (see PROTOCOL.md).
enum ProtocolAtom {
  /// CARDINAL/32 on a client window: 1 = secure (the tag).
  static let secure = "_CAPTURE_SHIELD_SECURE"
  /// UTF8_STRING JSON on the root: the daemon's state (`DaemonState`).
  static let state = "_CAPTURE_SHIELD_STATE"
  /// CARDINAL/32 on the root: 1 while a capture session is live.
  static let capturing = "_CAPTURE_SHIELD_CAPTURING"
  /// ClientMessage type sent to secure windows that opted in (`notify`) when capture
  /// starts/stops.
  static let captureChanged = "_CAPTURE_SHIELD_CAPTURE_CHANGED"
  /// CARDINAL/32 on a client window, set by its app: the ClientMessages it wants (bit 0:
  /// `captureChanged`). Without it, an app gets none.
  static let notify = "_CAPTURE_SHIELD_NOTIFY"
  /// ClientMessage type of CLI → daemon commands.
  static let command = "_CAPTURE_SHIELD_COMMAND"
  /// CARDINAL/32 on a window, set by the daemon under server enforcement: the policy makes
  /// it secure (the Xorg module protects it; only trusted clients may change it).
  static let policyTag = "_CAPTURE_SHIELD_POLICY"
  /// The daemon's secure views on a window (password fields): CARDINAL/32, 4n items x, y,
  /// width, height in window coordinates.
  static let policyViews = "_CAPTURE_SHIELD_POLICY_VIEWS"
  /// CARDINAL/32 on the daemon's manager window: the nonce of the last ping it answered.
  static let pong = "_CAPTURE_SHIELD_PONG"
  /// Manager selection prefix; the screen number is appended.
  static let managerPrefix = "_CAPTURE_SHIELD_S"
}

/// Command codes carried in `_CAPTURE_SHIELD_COMMAND` data32[0].
enum CommandCode: UInt32 {
  case shield = 1
  case unshield, pause, resume, reload, clipboardClear
  /// Answer with the nonce in data32[1] (`_CAPTURE_SHIELD_PONG` on the manager window).
  case ping
  /// Remove the window's `_CAPTURE_SHIELD_SECURE` (`shieldctl untag`; `TagGuard`).
  case untag
  /// Set the window's `_CAPTURE_SHIELD_SECURE` (`shieldctl tag`).
  case tag
  /// The secure windows' titles (command socket only: the reply carries them).
  case titles

  /// Encodes a command as the five data32 words of a ClientMessage.
  static func encode(_ c: DaemonCommand, senderPID: UInt32) -> [UInt32] {
    switch c {
    case .shield(let w): return [Self.shield.rawValue, w, 0, senderPID, 0]
    case .unshield(let w): return [Self.unshield.rawValue, w, 0, senderPID, 0]
    case .pause(let d):
      let ms = d.map { UInt32(clamping: $0.nanoseconds / 1_000_000) } ?? UInt32.max
      return [Self.pause.rawValue, 0, ms, senderPID, 0]
    case .resume: return [Self.resume.rawValue, 0, 0, senderPID, 0]
    case .reload: return [Self.reload.rawValue, 0, 0, senderPID, 0]
    case .clipboardClear: return [Self.clipboardClear.rawValue, 0, 0, senderPID, 0]
    case .ping(let nonce): return [Self.ping.rawValue, nonce, 0, senderPID, 0]
    case .untag(let w): return [Self.untag.rawValue, w, 0, senderPID, 0]
    case .tag(let w): return [Self.tag.rawValue, w, 0, senderPID, 0]
    case .titles: return [Self.titles.rawValue, 0, 0, senderPID, 0]
    }
  }

  /// Decodes data32 words; nil for unknown codes (ignored and audited).
  static func decode(_ d: [UInt32]) -> (DaemonCommand, senderPID: UInt32)? {
    guard d.count >= 4, let code = CommandCode(rawValue: d[0]) else { return nil }
    let cmd: DaemonCommand
    switch code {
    case .shield: cmd = .shield(d[1])
    case .unshield: cmd = .unshield(d[1])
    case .pause: cmd = .pause(d[2] == UInt32.max ? nil : .milliseconds(UInt64(d[2])))
    case .resume: cmd = .resume
    case .reload: cmd = .reload
    case .clipboardClear: cmd = .clipboardClear
    case .ping: cmd = .ping(nonce: d[1])
    case .untag: cmd = .untag(d[1])
    case .tag: cmd = .tag(d[1])
    case .titles: cmd = .titles
    }
    return (cmd, d[3])
  }
}

extension xcb_client_message_data_t {
  init(words w: [UInt32]) {
    self.init()
    self.data32 = (w[0], w[1], w[2], w[3], w[4])
  }
  var words: [UInt32] { [data32.0, data32.1, data32.2, data32.3, data32.4] }
}

/// The X protocol's predefined atoms the shell uses (X11 protocol, appendix B), by name
/// instead of as bare numbers.
enum PredefinedAtom {
  static let atom: xcb_atom_t = 4
  static let cardinal: xcb_atom_t = 6
  static let integer: xcb_atom_t = 19
  static let string: xcb_atom_t = 31
  static let wmName: xcb_atom_t = 39
  static let wmClass: xcb_atom_t = 67
}

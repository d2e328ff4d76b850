// The atoms the daemon's loop reads and writes on the main connection, interned once at start.

/// The daemon's atoms: the predefined ones by name (`PredefinedAtom`), the others interned
/// once by `WatcherLoop.init` (one InternAtom round trip for all of them).
struct DaemonAtoms {
  var wmClass: UInt32 { PredefinedAtom.wmClass }
  var wmName: UInt32 { PredefinedAtom.wmName }
  var cardinal: UInt32 { PredefinedAtom.cardinal }
  let netWMName: UInt32, utf8: UInt32, netWMPID: UInt32
  /// `_CAPTURE_SHIELD_SECURE`: the tag apps (or `shieldctl tag`) put on secure windows.
  let secure: UInt32
  /// `_CAPTURE_SHIELD_STATE`, `_CAPTURE_SHIELD_CAPTURING` and its change notice on the root.
  let state: UInt32, capturing: UInt32, captureChanged: UInt32
  /// `_CAPTURE_SHIELD_COMMAND`: ClientMessages claiming to be commands (forged, see `ForgedAudit`).
  let command: UInt32
  /// The manager selection (`_CAPTURE_SHIELD_S<screen>`) and the compositor's (`_NET_WM_CM_S<screen>`).
  let manager: UInt32, compositorSelection: UInt32
  /// `_CAPTURE_SHIELD_POLICY`: the daemon's tag on windows its policy makes secure.
  let policyTag: UInt32
  /// `_CAPTURE_SHIELD_PONG`: the answer to a ping (`shieldctl status`) on the manager window.
  let pong: UInt32
  /// `_CAPTURE_SHIELD_NOTIFY`: the ClientMessages an app opted in to (`CaptureNotices`).
  let notify: UInt32
  /// `_CAPTURE_SHIELD_VIEWS` and `_CAPTURE_SHIELD_POLICY_VIEWS`: secure views (`ViewState`).
  let views: UInt32, policyViews: UInt32

  /// The names to intern, in the order `init(interned:)` takes them.
  static func names(screen: Int) -> [String] {
    [
      "_NET_WM_NAME", "UTF8_STRING", ProtocolAtom.secure, "_NET_WM_PID", ProtocolAtom.state,
      ProtocolAtom.capturing, ProtocolAtom.captureChanged, ProtocolAtom.command,
      ProtocolAtom.managerPrefix + String(screen), "_NET_WM_CM_S" + String(screen),
      ProtocolAtom.policyTag, ProtocolAtom.pong, ProtocolAtom.notify, ProtocolAtom.views,
      ProtocolAtom.policyViews,
    ]
  }

  /// The atoms `names(screen:)` named, as the server interned them.
  init(interned a: [UInt32]) {
    precondition(a.count == 15)
    (netWMName, utf8, secure, netWMPID, state, capturing, captureChanged, command) =
      (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7])
    (manager, compositorSelection, policyTag, pong, notify) = (a[8], a[9], a[10], a[11], a[12])
    (views, policyViews) = (a[13], a[14])
  }
}

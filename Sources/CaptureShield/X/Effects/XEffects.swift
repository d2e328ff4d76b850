// The daemon's writes on its main connection: manager window and selection, event
// selection on tracked windows, the published state, and capture notifications.

internal import CXCB
import Foundation

/// Carries out what the engine and the loop decided on the daemon's main connection.
/// With `ShieldDriver` (the shield windows, on the shield connection) and the
/// copied-text guard's `ClipboardGuard` (its window, selections and paste replies, on its
/// own connection), this is where the daemon changes X state; all three send through
/// `XRequests`.
struct XEffects {
  let x: any XRequests
  let root: UInt32

  /// The daemon's manager window (InputOnly, override-redirect, off screen), named by its
  /// `_NET_WM_PID`, and the manager selection `selection` claimed for it.
  func claimManager(window: UInt32, selection: UInt32, pidAtom: UInt32, pid: UInt32) {
    x.createWindow(
      window, parent: root, x: -1, y: -1, width: 1, height: 1, inputOnly: true,
      mask: XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue,
      values: [1, XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue], checked: false)
    x.changeProperty(window, pidAtom, cardinals: [pid])
    x.setSelectionOwner(window, selection: selection, time: 0)
  }

  /// The answer to a ping: its nonce in `_CAPTURE_SHIELD_PONG` on the manager window
  /// (`shieldctl status` reads it: the loop is alive).
  func answerPing(window: UInt32, atom: UInt32, nonce: UInt32) { x.changeProperty(window, atom, cardinals: [nonce]) }

  /// Takes the manager selection back for our window (another client took it).
  func reclaimManager(window: UInt32, selection: UInt32) { x.setSelectionOwner(window, selection: selection, time: 0) }

  /// New top-levels and reparenting: SubstructureNotify on the root.
  func watchRoot() { x.selectEvents(root, XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY.rawValue) }

  /// No more events about the root's children (see `WatcherLoop.watchesAllWindows`).
  func unwatchRoot() { x.selectEvents(root, 0) }

  /// No more events from a window the daemon stops following.
  func unwatchWindow(_ w: WindowID) { x.selectEvents(w, 0) }

  /// Property changes of a tracked window, and its structure events when it sits inside
  /// a window manager's frame (`nested`).
  func watchWindow(_ w: WindowID, nested: Bool) {
    x.selectEvents(
      w, XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue | (nested ? XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue : 0))
  }

  /// Owner changes of `selection` (the compositor's `_NET_WM_CM_Sn`), reported to `window`.
  func watchSelection(_ selection: UInt32, reportTo window: UInt32) {
    x.selectSelectionInput(
      window, selection: selection,
      mask: XCB_XFIXES_SELECTION_EVENT_MASK_SET_SELECTION_OWNER.rawValue
        | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_WINDOW_DESTROY.rawValue
        | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_CLIENT_CLOSE.rawValue)
  }

  /// The state JSON on the root (`_CAPTURE_SHIELD_STATE`, UTF8_STRING).
  func publishState(_ json: [UInt8], atom: UInt32, utf8: UInt32) {
    x.changeProperty(root, atom, type: utf8, format: 8, bytes: json)
  }

  /// `_CAPTURE_SHIELD_CAPTURING` on the root, and a `_CAPTURE_SHIELD_CAPTURE_CHANGED`
  /// ClientMessage to each of `windows` (the secure windows that opted in, see
  /// `Engine.sendsCaptureChanged`).
  func notifyCapture(active: Bool, windows: [WindowID], capturingAtom: UInt32, changedAtom: UInt32) {
    let v: UInt32 = active ? 1 : 0
    x.changeProperty(root, capturingAtom, cardinals: [v])
    for w in windows { x.sendClientMessage(to: w, type: changedAtom, words: [v, 0, 0, 0, 0]) }
  }

  /// Removes the daemon's root properties (at shutdown).
  func clearRootProperties(_ atoms: [UInt32]) {
    for a in atoms { x.deleteProperty(root, a) }
  }
}

extension XEffects {
  /// `_CAPTURE_SHIELD_POLICY` = 1 on a window the policy makes secure (server
  /// enforcement: the module protects it; only trusted clients may change it).
  func policyTag(_ w: WindowID, atom: UInt32) { x.changeProperty(w, atom, cardinals: [1]) }

  func policyUntag(_ w: WindowID, atom: UInt32) { x.deleteProperty(w, atom) }

  /// `_CAPTURE_SHIELD_POLICY` = 0: classified, not secure (the module stops holding it).
  func policyClassify(_ w: WindowID, atom: UInt32) { x.changeProperty(w, atom, cardinals: [0]) }

  /// `_CAPTURE_SHIELD_CLASSIFY` on the root: 1 while the daemon classifies every window,
  /// deleted when it stops (its clean exit, or following tagged windows only).
  func announceClassification(_ on: Bool, atom: UInt32) {
    if on { x.changeProperty(root, atom, cardinals: [1]) } else { x.deleteProperty(root, atom) }
  }

  /// `_CAPTURE_SHIELD_POLICY_VIEWS` on a window with password fields showing (the areas,
  /// `PasswordViews.propertyValue`); deleted when none is left.
  func secureViews(_ w: WindowID, _ rects: [ViewRect], atom: UInt32) {
    if rects.isEmpty {
      x.deleteProperty(w, atom)
    } else {
      x.changeProperty(w, atom, cardinals: PasswordViews.propertyValue(rects))
    }
  }

  /// Puts `_CAPTURE_SHIELD_SECURE` = 1 back on a window whose tag another client removed
  /// (`TagGuard`).
  func restoreTag(_ w: WindowID, atom: UInt32) { x.changeProperty(w, atom, cardinals: [1]) }

  /// Removes `_CAPTURE_SHIELD_SECURE` for `shieldctl untag` (a command): the daemon's own
  /// removal, which `TagGuard` lets stand.
  func removeTag(_ w: WindowID, atom: UInt32) { x.deleteProperty(w, atom) }

  /// Grant or revoke a client (any XID of it) in the module.
  func grant(_ client: ClientID, granted: Bool, module: ServerModule) {
    x.moduleRequest(
      major: module.majorOpcode, minor: granted ? ServerModule.Minor.grant : ServerModule.Minor.revoke, client.base)
  }

  /// Asks the app of `w` to redraw it: ClearArea with exposures (an Expose for the whole
  /// window; with background None its pixels stay as they are). After a compositor's
  /// grant its next paint of a secure window, the app's redraw damages it, reads the
  /// window uncensored (what it drew before the grant was black there).
  func exposeWindow(_ w: WindowID) { x.clearArea(w) }

  /// The module's CaptureNotify events, to this connection; with `secureWindows`, also
  /// its notices of windows that become secure (1.2).
  func selectModuleEvents(_ module: ServerModule, secureWindows: Bool) {
    let mask = ServerModule.EventMask.notify | (secureWindows ? ServerModule.EventMask.secure : 0)
    x.moduleRequest(major: module.majorOpcode, minor: ServerModule.Minor.selectInput, mask)
  }

  /// Protection of secure windows on or off (pause) in the module.
  func setProtection(_ on: Bool, module: ServerModule) {
    x.moduleRequest(major: module.majorOpcode, minor: ServerModule.Minor.setProtection, on ? 1 : 0)
  }
}

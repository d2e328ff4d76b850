// The frame shields' routing (`FrameShields` owns their state): the loop tells it about
// reparented and gone windows, syncs it after engine events, and audits a lost frame shield.

extension WatcherLoop {
  /// A tracked window changed parents: its frame is asked again (now, if it is shielded).
  func forgetFrame(of w: WindowID) {
    if frames.reparented(w, isShielded: engine.shielded.contains(w)) { syncFrameShields() }
  }

  /// After engine events and reparenting (client-side mode only: nothing is mapped under
  /// the Xorg module).
  func syncFrameShields() {
    guard module == nil else {
      frames.syncDue = false
      return
    }
    // Secure views (a tagged child, rectangles of a window) show no title: no frame shield.
    let framed = engine.shielded.filter { !tracker.taggedChildren.contains($0) && viewRects($0) == nil }
    frames.sync(engineShielded: framed, driver: driver, isOwn: isOwn)
  }

  /// The driver repaired a shield another client tampered with (`ShieldDriver.Report.lost`).
  /// A window's shield goes to the engine (it re-creates and audits it). A frame's shield
  /// (the engine does not shield frames) is put back here at once, if it was destroyed,
  /// before the engine writes its audit record (`Engine.Event.frameShieldLost`, naming the
  /// frame and the shielded window in it).
  func shieldLost(_ target: WindowID, how: String) {
    guard frames.isFrameShield(target, engineShielded: engine.shielded) else {
      apply(.shieldLost(target, how: how))
      return
    }
    syncFrameShields()
    if let w = frames.windows(in: target, engineShielded: engine.shielded).first {
      apply(.frameShieldLost(frame: target, window: w, how: how))
    }
  }
}

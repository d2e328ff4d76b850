// Window-manager frames of shielded windows (issue 18): a reparenting window manager draws a
// secure window's title ("vault.kdbx - KeePassXC") in the frame around it, which the shield
// inside the window does not cover. While a window is shielded, its frame gets a shield
// too: the same tiled, override-redirect child (see `ShieldDriver`), created in the frame
// and stacked above the frame's other children, so the title bar and borders are covered.
// A frame shield that another client tampers with is repaired by the driver like a
// window's, put back at once if it was destroyed, and audited (`shieldLost`).

extension WatcherLoop {
  /// The window-manager frame of `w`: its top-level ancestor (a child of the root); nil
  /// when `w` is a top-level itself, when it is gone, or when the ancestor is ours. Asked
  /// once per window (one QueryTree per level, usually one or two), forgotten when the
  /// window is reparented or gone.
  func frame(of w: WindowID) -> WindowID? {
    if let f = frameOf[w] { return f == w ? nil : f }
    var current = w
    for _ in 0..<16 {
      guard let tree = x.queryTree(current) else { return nil }  // gone: an expected race
      if tree.parent == x.root || tree.parent == 0 { break }
      current = tree.parent
    }
    frameOf[w] = current
    return current == w || isOwn(current) ? nil : current
  }

  /// A tracked window changed parents: its frame is asked again (now, if it is shielded).
  func forgetFrame(of w: WindowID) {
    guard frameOf.removeValue(forKey: w) != nil || engine.shielded.contains(w) else { return }
    frameSyncDue = true
    syncFrameShields()
  }

  /// A tracked window is gone: as a shielded window, or as a frame (its shield went with it).
  func frameGone(_ w: WindowID) {
    frameOf[w] = nil
    if frameShields.remove(w) != nil {
      for (c, f) in frameOf where f == w { frameOf[c] = nil }
    }
    frameSyncDue = true
  }

  /// Puts a shield in the frame of every shielded window, and takes the shields of frames
  /// no shielded window is in any more. Re-asserts: a frame shield that is missing (its
  /// connection was replaced, the frame was gone) is created again, one that is down is
  /// put up again. Client-side mode only; a frame the engine shields itself is left to the
  /// engine.
  func syncFrameShields() {
    guard frameSyncDue else { return }
    frameSyncDue = false
    guard module == nil else { return }
    var wanted: Set<WindowID> = []
    for w in engine.shielded { if let f = frame(of: w), !engine.shielded.contains(f) { wanted.insert(f) } }
    for f in frameShields.subtracting(wanted).sorted() where !engine.shielded.contains(f) { driver.unshield(f) }
    var now: Set<WindowID> = []
    for f in wanted.sorted() {
      // Not up: missing, or down (a frame the engine shielded itself while its facts were
      // not known, `shieldAtOnce`, and unshielded once they were, is wanted here now).
      if !driver.table.isUp(f), !driver.shield(f) {
        for (w, g) in frameOf where g == f { frameOf[w] = nil }  // gone: asked again next time
        continue
      }
      now.insert(f)
    }
    frameShields = now
  }

  /// The driver repaired a shield another client tampered with (`ShieldDriver.Report.lost`).
  /// A window's shield goes to the engine (it re-creates and audits it). A frame's shield
  /// (the engine does not shield frames) is put back here at once, if it was destroyed,
  /// before the engine writes its audit record (`Engine.Event.frameShieldLost`, naming the
  /// frame and the shielded window in it).
  func shieldLost(_ target: WindowID, how: String) {
    guard frameShields.contains(target), !engine.shielded.contains(target) else {
      apply(.shieldLost(target, how: how))
      return
    }
    frameSyncDue = true
    syncFrameShields()
    let inside = frameOf.filter { $0.value == target && engine.shielded.contains($0.key) }.keys.sorted()
    if let w = inside.first { apply(.frameShieldLost(frame: target, window: w, how: how)) }
  }
}

// Window-manager frames of shielded windows (`FrameShieldTests`): a reparenting window manager draws a
// secure window's title ("vault.kdbx - KeePassXC") in the frame around it, which the shield
// inside the window does not cover. While a window is shielded, its frame gets a shield
// too: the same tiled, override-redirect child (see `ShieldDriver`), created in the frame
// and stacked above the frame's other children, so the title bar and borders are covered.
// A frame shield that another client tampers with is repaired by the driver like a
// window's, put back at once if it was destroyed, and audited (`shieldLost`).

/// What the frame shields ask of X to find a window's frame (real: the main `XConnection`;
/// tests: `RecordingConnection`): QueryTree's parent, one level at a time.
protocol FrameConnection: AnyObject {
  var root: UInt32 { get }
  /// The window's parent; nil when it is gone.
  func parent(of window: UInt32) -> UInt32?
}

extension XConnection: FrameConnection {}

/// The frame shields: which frame each shielded window is in (asked once), and which frames
/// carry a shield. Client-side mode only (under the Xorg module nothing is mapped). Runs on
/// the loop's thread; the shields themselves are the `ShieldDriver`'s, handed in with each
/// call (the loop replaces the driver when another client kills its connection).
final class FrameShields {
  let connection: FrameConnection
  /// Each shielded window's window-manager frame (its top-level ancestor; itself when it is
  /// a top-level), asked once (see `frame(of:)`).
  private(set) var frameOf: [WindowID: WindowID] = [:]
  /// The frames shielded for the shielded windows in them.
  private(set) var shielded: Set<WindowID> = []
  /// Set when shields or frames may have changed: `sync` does its work.
  var syncDue = false

  init(connection: FrameConnection) { self.connection = connection }

  /// The window-manager frame of `w`: its top-level ancestor (a child of the root); nil
  /// when `w` is a top-level itself, when it is gone, or when the ancestor is ours
  /// (`isOwn`). Asked once per window (one QueryTree per level, usually one or two),
  /// forgotten when the window is reparented or gone.
  func frame(of w: WindowID, isOwn: (WindowID) -> Bool) -> WindowID? {
    if let f = frameOf[w] { return f == w ? nil : f }
    var current = w
    for _ in 0..<16 {
      guard let parent = connection.parent(of: current) else { return nil }  // gone: an expected race
      if parent == connection.root || parent == 0 { break }
      current = parent
    }
    frameOf[w] = current
    return current == w || isOwn(current) ? nil : current
  }

  /// A tracked window changed parents (`isShielded`: the engine shields it): whether its
  /// frame must be asked again now (then `sync` is due).
  func reparented(_ w: WindowID, isShielded: Bool) -> Bool {
    guard frameOf.removeValue(forKey: w) != nil || isShielded else { return false }
    syncDue = true
    return true
  }

  /// A tracked window is gone: as a shielded window, or as a frame (its shield went with it).
  func gone(_ w: WindowID) {
    frameOf[w] = nil
    if shielded.remove(w) != nil {
      for (c, f) in frameOf where f == w { frameOf[c] = nil }
    }
    syncDue = true
  }

  /// Puts a shield in the frame of every window the engine shields (`engineShielded`), and
  /// takes the shields of frames no shielded window is in any more. Re-asserts: a frame
  /// shield that is missing (its connection was replaced, the frame was gone) is created
  /// again, one that is down is put up again. A frame the engine shields itself is left to
  /// the engine. Does nothing unless `syncDue`.
  func sync(engineShielded: Set<WindowID>, driver: ShieldDriver, isOwn: (WindowID) -> Bool) {
    guard syncDue else { return }
    syncDue = false
    var wanted: Set<WindowID> = []
    for w in engineShielded {
      if let f = frame(of: w, isOwn: isOwn), !engineShielded.contains(f) { wanted.insert(f) }
    }
    for f in shielded.subtracting(wanted).sorted() where !engineShielded.contains(f) { driver.unshield(f) }
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
    shielded = now
  }

  /// Whether `target`, whose shield another client tampered with, is a frame shielded here
  /// (and not by the engine): then the loop syncs (`syncDue` is set) and audits it with
  /// `windowsInside`.
  func isFrameShield(_ target: WindowID, engineShielded: Set<WindowID>) -> Bool {
    guard shielded.contains(target), !engineShielded.contains(target) else { return false }
    syncDue = true
    return true
  }

  /// The shielded windows in `frame`, in order.
  func windows(in frame: WindowID, engineShielded: Set<WindowID>) -> [WindowID] {
    frameOf.filter { $0.value == frame && engineShielded.contains($0.key) }.keys.sorted()
  }
}

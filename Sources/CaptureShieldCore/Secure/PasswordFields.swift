/// A password text field the accessibility bus (AT-SPI) reports: role "password text",
/// state showing. The shell's accessibility thread hands these to the engine as plain values.
public struct AccessibleField: Sendable, Hashable {
  /// The PID of the accessible application (its bus connection's, from the bus daemon).
  public var pid: Int
  /// Its area in desktop (root) coordinates (AT-SPI `Component.GetExtents`, screen coordinates).
  public var area: ScreenRect
  /// Whether it has the keyboard focus (state focused).
  public var focused: Bool

  public init(pid: Int, area: ScreenRect, focused: Bool) {
    self.pid = pid
    self.area = area
    self.focused = focused
  }
}

/// A mapped top-level client window as the shell sees it when fields arrive: the PID of its
/// client (X-Resource, else `_NET_WM_PID`) and its area in root coordinates (inside its border).
public struct TopLevelFrame: Sendable, Hashable {
  public var window: WindowID
  public var pid: Int
  public var area: ScreenRect

  public init(window: WindowID, pid: Int, area: ScreenRect) {
    self.window = window
    self.pid = pid
    self.area = area
  }
}

/// Where password fields are, as secure views of their windows: the one place the view
/// rectangles are computed (`views`) and encoded (`propertyValue`).
public enum PasswordViews {
  /// Until the daemon and the module support `_CAPTURE_SHIELD_POLICY_VIEWS`, a window with a
  /// password field showing is made secure as a whole too (`SecureReason.passwordField`), so
  /// protection holds either way. Views alone: set this to false.
  public static let wholeWindowSecure = true

  /// Each field goes to the top-level window of its application (same PID) that holds the
  /// most of it (ties: the lowest id); its area in that window's coordinates, clipped to
  /// the window. Fields of no window, or outside every window of their application, are
  /// dropped. Rectangles of one window are sorted (y, x) and duplicates dropped.
  public static func views(fields: [AccessibleField], frames: [TopLevelFrame]) -> [WindowID: [ViewRect]] {
    var out: [WindowID: Set<ViewRect>] = [:]
    for f in fields where f.area.width > 0 && f.area.height > 0 {
      var best: (frame: TopLevelFrame, overlap: Int)?
      for w in frames where w.pid == f.pid {
        let o = overlap(f.area, w.area)
        guard o > 0 else { continue }
        if let b = best, b.overlap > o || (b.overlap == o && b.frame.window < w.window) { continue }
        best = (w, o)
      }
      guard let w = best?.frame else { continue }
      let left = max(f.area.x, w.area.x)
      let top = max(f.area.y, w.area.y)
      let right = min(f.area.x + f.area.width, w.area.x + w.area.width)
      let bottom = min(f.area.y + f.area.height, w.area.y + w.area.height)
      out[w.window, default: []].insert(
        ViewRect(
          x: Int32(clamping: left - w.area.x), y: Int32(clamping: top - w.area.y),
          width: UInt32(clamping: right - left), height: UInt32(clamping: bottom - top)))
    }
    return out.mapValues { $0.sorted { ($0.y, $0.x, $0.width, $0.height) < ($1.y, $1.x, $1.width, $1.height) } }
  }

  /// The windows whose password field has the focus.
  public static func focusedWindows(fields: [AccessibleField], frames: [TopLevelFrame]) -> Set<WindowID> {
    Set(views(fields: fields.filter(\.focused), frames: frames).keys)
  }

  /// `_CAPTURE_SHIELD_POLICY_VIEWS`: CARDINAL/32, 4n items x, y, width, height.
  public static func propertyValue(_ rects: [ViewRect]) -> [UInt32] {
    rects.flatMap { [UInt32(bitPattern: $0.x), UInt32(bitPattern: $0.y), $0.width, $0.height] }
  }

  static func overlap(_ a: ScreenRect, _ b: ScreenRect) -> Int {
    let w = min(a.x + a.width, b.x + b.width) - max(a.x, b.x)
    let h = min(a.y + a.height, b.y + b.height) - max(a.y, b.y)
    return w > 0 && h > 0 ? w * h : 0
  }
}

// Window tracking's state: which windows the daemon follows and what it knows of each (class,
// title, tag, notices, mapped), the new top-levels whose tracking is deferred, and where
// top-levels have been. The loop decodes X events and routes them (`WatcherLoop+Windows`).

internal import CXCB
import Foundation

/// What window tracking asks of X on the main connection (real: `XConnection`; tests:
/// `FakeWindowConnection`): the facts of new windows (one pipelined round trip), a property
/// that changed, and which client owns a window. Event selection is a state-changing
/// request and goes through `XEffects` (the loop sends it).
protocol WindowConnection: AnyObject {
  /// The resource base of the client that created `xid`.
  func clientBase(of xid: UInt32) -> UInt32
  /// For each window, whether it is mapped and InputOnly (nil: gone), and its properties
  /// `atoms` (nil: not set): GetWindowAttributes and GetProperty, pipelined.
  func windowFacts(_ windows: [WindowID], atoms: [UInt32], maxBytes: UInt32) -> [WindowFacts]
  /// For each window, its properties `atoms` (nil: not set, or the window is gone):
  /// GetProperty, pipelined.
  func properties(_ windows: [WindowID], atoms: [UInt32], maxBytes: UInt32) -> [[PropertyValue?]]
  func property(_ window: UInt32, _ atom: UInt32, maxBytes: UInt32) -> PropertyValue?
}

/// One window's attributes and properties as `WindowConnection.windowFacts` read them.
struct WindowFacts {
  /// nil when the window is gone.
  var attributes: (mapped: Bool, inputOnly: Bool)?
  var properties: [PropertyValue?]
}

extension XConnection: WindowConnection {
  func windowFacts(_ windows: [WindowID], atoms: [UInt32], maxBytes: UInt32) -> [WindowFacts] {
    let attrCookies = windows.map { xcb_get_window_attributes(conn, $0) }
    let propCookies = windows.map { w in atoms.map { propertyCookie(w, $0, maxBytes: maxBytes) } }
    return windows.indices.map { i in
      let reply = xcb_get_window_attributes_reply(conn, attrCookies[i], nil)
      var attributes: (mapped: Bool, inputOnly: Bool)?
      if let reply {
        attributes = (
          reply.pointee.map_state != UInt8(XCB_MAP_STATE_UNMAPPED.rawValue),
          reply.pointee._class == UInt16(XCB_WINDOW_CLASS_INPUT_ONLY.rawValue)
        )
        free(reply)
      }
      return WindowFacts(attributes: attributes, properties: propCookies[i].map { propertyReply($0) })
    }
  }

  func properties(_ windows: [WindowID], atoms: [UInt32], maxBytes: UInt32) -> [[PropertyValue?]] {
    let cookies = windows.map { w in atoms.map { propertyCookie(w, $0, maxBytes: maxBytes) } }
    return cookies.map { $0.map { propertyReply($0) } }
  }
}

/// The window tracker. Runs on the loop's thread.
final class WindowTracker {
  /// The most bytes of a property read.
  static let maxPropertyBytes: UInt32 = 16384

  let connection: WindowConnection
  let atoms: DaemonAtoms
  /// What the shell knows of each tracked window (the engine has its own copy).
  var tracked: [WindowID: WindowInfo] = [:]
  /// Tracked windows per client (without RECORD, a client's last window gone ends it).
  private var windowsPerClient: [UInt32: Int] = [:]
  /// Windows whose title comes from `_NET_WM_NAME` (WM_NAME changes are then ignored).
  private(set) var netNamed: Set<WindowID> = []
  /// New top-levels not tracked yet (see `WatcherLoop.deferNewWindows`), in creation order,
  /// and since when.
  private var pendingCreates: [WindowID] = []
  private var pendingSet: Set<WindowID> = []
  private(set) var pendingSince: MonotonicTime?
  /// Where top-level windows have been since they were mapped (own-window reads, see
  /// `WatcherLoop.noteTopLevel`).
  var topLevelHistory = TopLevelHistory()
  /// Tagged child windows found under top-levels (`WatcherLoop.trackTaggedChildren`):
  /// secure views of their own, shielded inside, never through a frame.
  var taggedChildren: Set<WindowID> = []

  init(connection: WindowConnection, atoms: DaemonAtoms) {
    self.connection = connection
    self.atoms = atoms
  }

  /// The properties read of a new window, in the order `read` applies them.
  func propertyAtoms(wantTitle: Bool) -> [UInt32] {
    [atoms.wmClass, atoms.secure, atoms.notify, atoms.views, atoms.policyViews]
      + (wantTitle ? [atoms.netWMName, atoms.wmName] : [])
  }

  /// Reads the facts of new windows (after their events were selected, so that a property
  /// set before is seen here): their `WindowInfo`s, and the windows that are gone already or
  /// InputOnly (`dropped`: they show no pixels; a shield put up for them goes).
  func read(_ fresh: [WindowID], initial: Bool, wantTitle: Bool) -> (infos: [WindowInfo], dropped: [WindowID]) {
    let names = propertyAtoms(wantTitle: wantTitle)
    var infos: [WindowInfo] = []
    var dropped: [WindowID] = []
    for (w, f) in zip(fresh, connection.windowFacts(fresh, atoms: names, maxBytes: Self.maxPropertyBytes)) {
      guard let a = f.attributes, !a.inputOnly else {
        dropped.append(w)  // gone already (an expected race), or shows no pixels
        continue
      }
      var info = WindowInfo(
        id: w, client: ClientID(connection.clientBase(of: w)), tag: .absent, propertiesKnown: initial || a.mapped,
        mapped: a.mapped)
      for (atom, v) in zip(names, f.properties) where atom != atoms.wmName || info.facts.title == nil {
        applyProperty(&info, atom: atom, v)
      }
      infos.append(info)
    }
    return (infos, dropped)
  }

  /// `info` is tracked from now on.
  func add(_ info: WindowInfo) {
    tracked[info.id] = info
    if let base = info.client?.base { windowsPerClient[base, default: 0] += 1 }
  }

  /// `w` is gone: what was known of it (nil: it was not tracked).
  func remove(_ w: WindowID) -> WindowInfo? {
    netNamed.remove(w)
    taggedChildren.remove(w)
    return tracked.removeValue(forKey: w)
  }

  /// One of the client's tracked windows is gone: whether it was its last.
  func clientWindowGone(_ base: UInt32) -> Bool {
    windowsPerClient[base, default: 1] -= 1
    guard windowsPerClient[base]! <= 0 else { return false }
    windowsPerClient[base] = nil
    return true
  }

  /// Reads the titles of `ids` (pipelined, one round trip) and applies them to the tracked
  /// ones: their infos now.
  func readTitles(_ ids: [WindowID]) -> [WindowInfo] {
    let names = [atoms.netWMName, atoms.wmName]
    let values = connection.properties(ids, atoms: names, maxBytes: Self.maxPropertyBytes)
    var out: [WindowInfo] = []
    for (w, v) in zip(ids, values) {
      guard var info = tracked[w] else { continue }
      applyProperty(&info, atom: atoms.netWMName, v[0])
      if info.facts.title == nil { applyProperty(&info, atom: atoms.wmName, v[1]) }
      tracked[w] = info
      out.append(info)
    }
    return out
  }

  /// A PropertyNotify of a watched property (`deleted`: PropertyDelete): the window's new
  /// info, read from the server; nil when `w` is not tracked, the atom is not one the
  /// daemon reads, or WM_NAME changed under a `_NET_WM_NAME` (which takes precedence).
  func propertyChanged(_ w: WindowID, atom: UInt32, deleted: Bool) -> WindowInfo? {
    guard var info = tracked[w], watched(atom) else { return nil }
    if atom == atoms.wmName, netNamed.contains(w) { return nil }
    let v = deleted ? nil : connection.property(w, atom, maxBytes: Self.maxPropertyBytes)
    applyProperty(&info, atom: atom, v)
    if atom == atoms.netWMName && (v?.bytes.isEmpty ?? true) {
      info.facts.title = nil
      netNamed.remove(w)
    }
    return info
  }

  /// Whether the daemon reads this property of tracked windows.
  func watched(_ atom: UInt32) -> Bool {
    [atoms.wmClass, atoms.netWMName, atoms.wmName, atoms.secure, atoms.notify, atoms.views, atoms.policyViews]
      .contains(atom)
  }

  func applyProperty(_ info: inout WindowInfo, atom: UInt32, _ v: PropertyValue?) {
    switch atom {
    case atoms.wmClass:
      let c = PropertyDecoding.wmClass(v?.bytes ?? [])
      info.facts.instance = c.instance
      info.facts.class = c.class
    case atoms.netWMName:
      if let v, !v.bytes.isEmpty {
        info.facts.title = PropertyDecoding.text(v.bytes, utf8: true)
        netNamed.insert(info.id)
      }
    case atoms.wmName:
      if let v, !v.bytes.isEmpty {
        info.facts.title = PropertyDecoding.text(v.bytes, utf8: v.type == atoms.utf8)
      }
    case atoms.secure:
      guard let v else {
        info.tag = .absent
        return
      }
      info.tag = TagState.decode(isCardinal: v.type == atoms.cardinal, format: v.format, bytes: v.bytes)
    case atoms.views, atoms.policyViews:
      let s = v.map { ViewState.decode(isCardinal: $0.type == atoms.cardinal, format: $0.format, bytes: $0.bytes) }
      if atom == atoms.views { info.appViews = s ?? .none } else { info.policyViews = s ?? .none }
    case atoms.notify:
      info.notices =
        v.map { CaptureNotices.decode(isCardinal: $0.type == atoms.cardinal, format: $0.format, bytes: $0.bytes) }
        ?? []
    default:
      break
    }
  }

  // MARK: Deferred tracking

  /// Whether `w`'s tracking is deferred.
  func isPending(_ w: WindowID) -> Bool { pendingSet.contains(w) }

  /// A new top-level whose tracking is deferred (at most `tuning.batchInterval`).
  func deferTracking(_ w: WindowID, now: MonotonicTime) {
    if pendingSet.insert(w).inserted { pendingCreates.append(w) }
    if pendingSince == nil { pendingSince = now }
  }

  /// A deferred window was destroyed: whether it was pending (then there is nothing to undo).
  func pendingDestroyed(_ w: WindowID) -> Bool { pendingSet.remove(w) != nil }

  /// The deferred windows, each once, in creation order; none is pending after.
  func takePending() -> [WindowID] {
    // Each once (an id reused after a DestroyNotify can be listed twice).
    let windows = pendingCreates.filter { pendingSet.remove($0) != nil }
    dropPending()
    return windows
  }

  /// Forgets the deferred windows (following only tagged windows from now on).
  func dropPending() {
    pendingCreates = []
    pendingSet = []
    pendingSince = nil
  }
}

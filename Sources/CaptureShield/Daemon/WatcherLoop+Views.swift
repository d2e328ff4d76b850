// Secure views in client-side mode (PROTOCOL.md section 1): a window with views
// (`SecureReason.views`) gets a shield shaped to their rectangles, so the rest of it stays
// visible; a tagged child window (an embedded widget) is found under its top-level and
// followed as a window of its own, so its shield is inside it and covers it with its
// descendants only.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  /// The rectangles the shield in `w` is shaped to (nil: the whole window).
  func viewRects(_ w: WindowID) -> [ViewRect]? {
    if case .views(let r, _) = engine.windows[w]?.reason { return r }
    return nil
  }

  /// After an engine event: the shields' shapes follow the windows' views (the window of
  /// the event, and every shield shaped now, whose window may be wholly secure now).
  func syncViews(after event: Engine.Event) {
    guard module == nil else { return }
    switch event {
    case .windowAppeared(let info), .windowChanged(let info): driver.viewsChanged(info.id)
    default: break
    }
    driver.reshapeViews()
  }

  /// Looks for tagged windows below the top-level `top` (4 levels, 512 windows at most; a
  /// tagged one's own children are its part) and follows them. Called when `top` is mapped:
  /// toolkits create and tag their child windows before they map the top-level.
  func trackTaggedChildren(of top: WindowID) {
    guard tracker.tracked[top] != nil, !tracker.taggedChildren.contains(top) else { return }
    let wmState = x.atom("WM_STATE")
    var level = [top]
    var found: [WindowID] = []
    var seen = 0
    for _ in 0..<4 where !level.isEmpty && seen < 512 {
      let cookies = level.map { xcb_query_tree(x.conn, $0) }
      var inner: [WindowID] = []
      for ck in cookies {
        guard let r = xcb_query_tree_reply(x.conn, ck, nil) else { continue }
        let n = Int(xcb_query_tree_children_length(r))
        let p = xcb_query_tree_children(r)!
        for i in 0..<n where !driver.isShield(p[i]) { inner.append(p[i]) }
        free(r)
      }
      inner = Array(inner.prefix(512 - seen))
      seen += inner.count
      let tags = inner.map { x.propertyCookie($0, atoms.secure, maxBytes: 8) }
      let states = inner.map { x.propertyCookie($0, wmState, maxBytes: 8) }
      level = []
      for (w, (ck, st)) in zip(inner, zip(tags, states)) {
        let tagged = x.propertyReply(ck).map { !$0.bytes.isEmpty || $0.type != 0 } ?? false
        // a window manager's client window inside its frame is a window of its own (its
        // frame is shielded with it), not a view of the frame
        if let v = x.propertyReply(st), v.type != 0 { continue }
        if tagged { found.append(w) } else { level.append(w) }
      }
    }
    let fresh = found.filter { tracker.tracked[$0] == nil }
    guard !fresh.isEmpty else { return }
    tracker.taggedChildren.formUnion(fresh)
    track(fresh, initial: false, nested: Set(fresh))
  }
}

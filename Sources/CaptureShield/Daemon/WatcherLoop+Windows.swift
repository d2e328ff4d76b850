// Window tracking: which windows exist, their facts (class, title, tag), and X events about them.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  // MARK: Windows

  func isOwn(_ w: WindowID) -> Bool {
    isOwnAlive(base: x.clientBase(of: w)) || w == managerWindow
  }

  /// Tracks every top-level window and, under a reparenting window manager, the client
  /// windows inside the frames.
  func scanExistingWindows() {
    guard let tree = x.queryTree(x.root) else { return }
    var candidates: [WindowID] = []
    var frames: [WindowID] = []
    for w in tree.children where !isOwn(w) {
      candidates.append(w)
      frames.append(w)
    }
    // Descendants of top-levels that carry WM_STATE are client windows inside WM frames:
    // a child of the frame (openbox, xfwm4, mutter) or deeper (kwin: frame, wrapper, client).
    // Looked for three levels down, not below a window that carries it.
    let wmState = x.atom("WM_STATE")
    var level = frames
    for _ in 0..<3 where !level.isEmpty {
      let cookies = level.map { xcb_query_tree(x.conn, $0) }
      var inner: [WindowID] = []
      for ck in cookies {
        guard let r = xcb_query_tree_reply(x.conn, ck, nil) else { continue }
        let n = Int(xcb_query_tree_children_length(r))
        let p = xcb_query_tree_children(r)!
        for i in 0..<n where !isOwn(p[i]) { inner.append(p[i]) }
        free(r)
      }
      let stateCookies = inner.map { x.propertyCookie($0, wmState, maxBytes: 8) }
      level = []
      for (w, ck) in zip(inner, stateCookies) {
        if let v = x.propertyReply(ck), !v.bytes.isEmpty { candidates.append(w) } else { level.append(w) }
      }
    }
    track(candidates, initial: true, nested: Set(candidates).subtracting(frames))
  }

  /// Selects events on the windows, reads their facts (pipelined, `WindowTracker.read`) and
  /// tells the engine.
  func track(_ windows: [WindowID], initial: Bool, nested: Set<WindowID> = []) {
    let fresh = windows.filter { tracker.tracked[$0] == nil && !isOwn($0) }
    guard !fresh.isEmpty else { return }
    // Top-levels' structure events already come through the root's SubstructureNotify;
    // selecting StructureNotify on them too would make the server send each event twice.
    // Windows inside a window manager's frame need it (see ReparentNotify).
    // Following only tagged windows, the root's events are not selected: each window's own.
    for w in fresh { effects.watchWindow(w, nested: nested.contains(w) || server.windowWatch == .tagged) }
    // Titles are read only when a rule looks at them (or, later, for secure windows'
    // rows in the state): title changes are the most frequent property traffic.
    let wantTitle = policyUsesTitle || initial
    let (infos, dropped) = tracker.read(fresh, initial: initial, wantTitle: wantTitle)
    for w in dropped { driver.forget(w) }  // a shield put up at CreateNotify died with it, or shows nothing
    for info in infos {
      ensureClient(info.client!.base, sample: info.id)
      tracker.add(info)
      apply(.windowAppeared(info))
      // A shield put up at CreateNotify that the engine does not want (the window was
      // already mapped and is not secure) goes at once.
      if !engine.shielded.contains(info.id) { driver.dropProvisional(info.id) }
      if !wantTitle { refreshTitleIfSecure(info.id) }
      if info.mapped && !nested.contains(info.id) { trackTaggedChildren(of: info.id) }
    }
  }

  /// Whether any `secure` rule matches on titles (then every title is read and followed).
  var policyUsesTitle: Bool { engine.policy.secure.contains { $0.title != nil } }

  /// Reads every tracked window's title (a reloaded policy now has title rules).
  func readAllTitles() {
    for info in tracker.readTitles(Array(tracker.tracked.keys)) { apply(.windowChanged(info)) }
  }

  /// Reads the title of a secure window whose title was skipped (for `list`/`status`).
  func refreshTitleIfSecure(_ w: WindowID) {
    guard let info = tracker.tracked[w], info.facts.title == nil, engine.windows[w]?.reason.isSecure == true,
      engine.windows[w]?.reason != .provisional
    else { return }
    guard let now = tracker.readTitles([w]).first, now.facts.title != nil else { return }
    apply(.windowChanged(now))
  }

  /// Looks up a client's identity once (X-Resource PID, then /proc).
  func ensureClient(_ base: UInt32, sample: WindowID) {
    guard capture.identities[base] == nil, engine.clients[ClientID(base)] == nil else { return }
    apply(.clientConnected(ClientID(base), identify(base: base, sample: sample)))
  }

  func windowGone(_ w: WindowID) {
    tagGuard.windowGone(w)
    guard let info = tracker.remove(w) else { return }
    driver.forget(w)
    frames.gone(w)
    apply(.windowGone(w))
    // Without RECORD, a client's last window gone ends the client.
    if detector == nil, let base = info.client?.base, tracker.clientWindowGone(base) {
      capture.identities[base] = nil
      apply(.clientGone(ClientID(base)))
    }
  }

  /// `destroyedLater(w)`: whether a DestroyNotify of `w` follows in the batch being handled.
  func handleMainEvent(
    _ ev: UnsafeMutablePointer<xcb_generic_event_t>, destroyedLater: (WindowID) -> Bool = { _ in false }
  ) {
    let raw = UnsafeRawPointer(ev)
    noteTopLevel(ev)
    switch Int32(CXCB_event_type(ev)) {
    case 0:
      // An X error: never fatal; `XErrorPolicy` says whether it was an expected race.
      x.errors.report(raw.load(as: xcb_generic_error_t.self), connection: "main")
    case XCB_CREATE_NOTIFY:
      let e = raw.load(as: xcb_create_notify_event_t.self)
      guard e.parent == x.root, !isOwn(e.window), !destroyedLater(e.window) else { return }
      // While shields are up, every new top-level gets a shield before anything else
      // (`Engine.Effect.shieldAtOnce`; the engine keeps it provisionally until the window's
      // facts are known). The engine does not change on this event: `deferNewWindows` (false
      // while shields are up) reads it as before.
      apply(.topLevelCreated(e.window))
      if deferNewWindows {
        tracker.deferTracking(e.window, now: Clock.now())
        return
      }
      track([e.window], initial: false)
    case XCB_REPARENT_NOTIFY:
      let e = raw.load(as: xcb_reparent_notify_event_t.self)
      forgetFrame(of: e.window)
      if tracker.isPending(e.window) { trackPending() }  // follow it into a frame
      if e.parent == x.root, e.event == x.root, !isOwn(e.window), !destroyedLater(e.window) {
        track([e.window], initial: false)
      }
      if e.parent != x.root, e.event == x.root, tracker.tracked[e.window] != nil {
        // A top-level went into a window manager's frame: follow it there.
        effects.watchWindow(e.window, nested: true)
      }
    case XCB_DESTROY_NOTIFY:
      let e = raw.load(as: xcb_destroy_notify_event_t.self)
      if tracker.pendingDestroyed(e.window) { return }  // never tracked: nothing to undo
      if e.event == e.window || e.event == x.root { windowGone(e.window) }
    case XCB_MAP_NOTIFY:
      let e = raw.load(as: xcb_map_notify_event_t.self)
      if e.event == e.window || e.event == x.root, var info = tracker.tracked[e.window],
        !(info.mapped && info.propertiesKnown)
      {
        info.mapped = true
        info.propertiesKnown = true
        tracker.tracked[e.window] = info
        apply(.windowChanged(info))
        trackTaggedChildren(of: e.window)
      }
    case XCB_UNMAP_NOTIFY:
      let e = raw.load(as: xcb_unmap_notify_event_t.self)
      if e.event == e.window || e.event == x.root, var info = tracker.tracked[e.window] {
        info.mapped = false
        tracker.tracked[e.window] = info
      }
    case XCB_PROPERTY_NOTIFY:
      let e = raw.load(as: xcb_property_notify_event_t.self)
      guard let before = tracker.tracked[e.window], tracker.watched(e.atom) else { return }
      let isTitle = e.atom == atoms.netWMName || e.atom == atoms.wmName
      if isTitle && !policyUsesTitle && engine.windows[e.window]?.reason.isSecure != true {
        return  // no rule looks at titles, and only secure windows' titles are shown
      }
      guard
        let info = tracker.propertyChanged(
          e.window, atom: e.atom, deleted: e.state == UInt8(XCB_PROPERTY_DELETE.rawValue))
      else { return }  // WM_NAME under a _NET_WM_NAME
      if e.atom == atoms.secure, info.tag.asksSecure { tagGuard.tagSet(e.window) }  // set again meanwhile
      guard info != before else { return }
      // A secure tag removed or zeroed: lifted only by its own client (`TagGuard`).
      if e.atom == atoms.secure, before.tag.asksSecure, !info.tag.asksSecure, guardTagRemoval(e.window, to: info.tag) {
        return
      }
      tracker.tracked[e.window] = info
      apply(.windowChanged(info))
      if e.atom == atoms.secure { refreshTitleIfSecure(e.window) }
    case XCB_CLIENT_MESSAGE:
      let e = raw.load(as: xcb_client_message_event_t.self)
      guard e.window == managerWindow, e.type == atoms.command else { return }
      dropForgedCommand(e.data.words)
    case XCB_SELECTION_CLEAR:
      let e = raw.load(as: xcb_selection_clear_event_t.self)
      if e.selection == atoms.manager { managerSelectionTaken() }
    case Int32(capture.xfixesFirstEvent) + Int32(XCB_XFIXES_SELECTION_NOTIFY) where capture.xfixesFirstEvent != 0:
      let e = raw.load(as: xcb_xfixes_selection_notify_event_t.self)
      guard e.selection == atoms.compositorSelection else { return }
      let owner = e.subtype == UInt8(XCB_XFIXES_SELECTION_EVENT_SET_SELECTION_OWNER.rawValue) ? e.owner : 0
      apply(.compositorChanged(owner == 0 ? nil : ClientID(x.clientBase(of: owner))))
    default:
      if let module, let n = module.notify(ev) { moduleNotified(n) }
    }
  }

}

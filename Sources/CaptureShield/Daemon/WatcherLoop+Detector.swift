// The loop's side of capture detection: the capture bridge's host (`CaptureHost`: identity,
// the window manager, own-window reads, a redirected shield), X-Resource and the compositor
// selection.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  // MARK: Capture detection

  /// The RECORD context (`CaptureBridge.detector`).
  var detector: CaptureDetector? {
    get { capture.detector }
    set { capture.detector = newValue }
  }

  /// Looks up a client's identity (X-Resource PID of `sample`, any XID of the client, or
  /// of its resource base; then /proc) and remembers it. The one identity lookup.
  func identify(base: UInt32, sample: UInt32? = nil) -> ClientIdentity {
    let id = ProcessInfoReader.identity(pid: x.clientPID(of: sample ?? base))
    capture.identities[base] = id
    return id
  }

  /// Looks at the processes that can be behind the pending launches when the engine asks
  /// (`Engine.launchCheckDue`: at once, and once more when the launch has settled); the
  /// engine ends the launches that cannot be clients of this display.
  func checkLaunchesIfDue() {
    let now = Clock.now()
    guard let due = engine.launchCheckDue, now >= due, let oldest = engine.launches.map(\.seen).min() else { return }
    let programs = engine.launches.map(\.program)
    let scan = ProcessInfoReader.launchProcesses(
      maxAge: now.seconds(since: oldest) + Engine.launchForkWindow + 0.02,
      onlyPrograms: programs.contains(nil) ? nil : Set(programs.compactMap { $0 }), now: now)
    apply(.launchProcesses(scan.processes, complete: scan.complete))
  }

  func wantsPokes(_ now: MonotonicTime) -> Bool {
    guard detector != nil else { return false }
    return capture.timing.wantsPokes(now, sessionsLive: !engine.sessions.isEmpty)
  }

  /// Reads the RECORD records and routes them (`CaptureBridge.drain`, the loop as its host).
  func drainDetector() {
    guard let d = detector else { return }
    capture.drain(d, host: self)
  }

  /// Whether `c` is the window manager: the owner of `WM_S<screen>` (ICCCM). A window
  /// manager that does not own it is not recognised: its reparenting of a secure window
  /// then starts a capture session (shields up for the linger), the safe mistake.
  func isWindowManager(_ c: ClientID) -> Bool {
    let owner = x.selectionOwner(x.atom("WM_S\(x.screenNumber)"))
    return owner != 0 && x.clientBase(of: owner) == c.base
  }

  /// The capture request a read of the client's own drawable amounts to, or nil: asks the
  /// server only for the facts `OwnDrawableRead.verdict` names (a drawable's kind and area,
  /// the secure windows' areas). Kinds known where the read was recorded count (`known`,
  /// from `CaptureDetector.drawableKinds`); a window's area is asked afresh, and an answer
  /// that contradicts what was known is reconciled (`DrawableKinds.reconcile`).
  func ownReadCapture(
    _ read: OwnDrawableRead, by c: ClientID, known: [UInt32: DrawableFact], knowWindows: () -> Void
  ) -> CaptureRequest? {
    var facts = known
    var secure: [ScreenRect]?
    let secureAreas = { () -> [ScreenRect] in
      if let secure { return secure }
      knowWindows()  // a secure window whose tracking was deferred counts too
      // Other clients' secure windows: an app reading its own secure window reads its own
      // pixels (where another client's secure window covers it, that one counts).
      let ids = self.engine.windows.values.filter { $0.reason.isSecure && $0.info.mapped && $0.info.client != c }
        .map(\.info.id)
      let areas = self.drawableFacts(ids).values.compactMap { f -> ScreenRect? in
        if case .window(let area?) = f { return area }
        return nil
      }
      secure = areas
      return areas
    }
    let earlierAreas = { () -> [ScreenRect] in
      knowWindows()  // the structure events that came before the read
      return self.tracker.topLevelHistory.places(ofClient: c.base, resourceMask: self.x.resourceMask)
    }
    for _ in 0..<2 {
      switch read.verdict(facts: facts, secureAreas: secureAreas, earlierAreas: earlierAreas) {
      case .capture: return CaptureRequest(kind: read.kind, target: read.source)
      case .notCapture: return nil
      case .lookUp(let ids):
        for (id, fact) in drawableFacts(ids) {
          facts[id] = DrawableKinds.reconcile(known: known[id], answer: fact)
          detector?.drawableKinds.learned(id, fact)
        }
      }
    }
    return nil  // not reached: every fact looked up is final
  }

  /// Follows where top-level windows go (the root's CreateNotify, ConfigureNotify,
  /// MapNotify, DestroyNotify: `TopLevelHistory`), while capture detection runs. No request.
  func noteTopLevel(_ ev: UnsafeMutablePointer<xcb_generic_event_t>) {
    guard detector != nil, CXCB_event_sent(ev) == 0 else { return }
    let raw = UnsafeRawPointer(ev)
    func area(_ x: Int16, _ y: Int16, _ w: UInt16, _ h: UInt16, _ border: UInt16) -> ScreenRect {
      ScreenRect(x: Int(x), y: Int(y), width: Int(w) + 2 * Int(border), height: Int(h) + 2 * Int(border))
    }
    switch Int32(CXCB_event_type(ev)) {
    case XCB_CREATE_NOTIFY:
      let e = raw.load(as: xcb_create_notify_event_t.self)
      if e.parent == x.root {
        tracker.topLevelHistory.placed(e.window, area(e.x, e.y, e.width, e.height, e.border_width))
      }
    case XCB_CONFIGURE_NOTIFY:
      let e = raw.load(as: xcb_configure_notify_event_t.self)
      if e.event == x.root {
        tracker.topLevelHistory.placed(e.window, area(e.x, e.y, e.width, e.height, e.border_width))
      }
    case XCB_MAP_NOTIFY:
      let e = raw.load(as: xcb_map_notify_event_t.self)
      if e.event == x.root { tracker.topLevelHistory.mapped(e.window) }
    case XCB_DESTROY_NOTIFY:
      let e = raw.load(as: xcb_destroy_notify_event_t.self)
      if e.event == x.root { tracker.topLevelHistory.destroyed(e.window) }
    default: break
    }
  }

  /// Kind and area of each drawable (pipelined GetGeometry and TranslateCoordinates, one
  /// round trip): a window's area in root coordinates, border included; `.pixmap` when
  /// TranslateCoordinates fails (not a window), `.gone` when GetGeometry fails too.
  private func drawableFacts(_ ids: [UInt32]) -> [UInt32: DrawableFact] {
    let cookies = ids.map { (xcb_get_geometry(x.conn, $0), xcb_translate_coordinates(x.conn, $0, x.root, 0, 0)) }
    var out: [UInt32: DrawableFact] = [:]
    for (id, (g, t)) in zip(ids, cookies) {
      var error: UnsafeMutablePointer<xcb_generic_error_t>?
      let geometry = xcb_get_geometry_reply(x.conn, g, &error)
      free(error)
      error = nil
      let translated = xcb_translate_coordinates_reply(x.conn, t, &error)
      free(error)
      defer {
        free(geometry)
        free(translated)
      }
      guard let geometry else {
        out[id] = .gone
        continue
      }
      guard let translated else {
        out[id] = .pixmap
        continue
      }
      let border = Int(geometry.pointee.border_width)
      out[id] = .window(
        ScreenRect(
          x: Int(translated.pointee.dst_x) - border, y: Int(translated.pointee.dst_y) - border,
          width: Int(geometry.pointee.width) + 2 * border, height: Int(geometry.pointee.height) + 2 * border))
    }
    return out
  }

  /// A client as an audit record names it in prose: its id, and its pid and program when
  /// X-Resource told them.
  func described(_ c: ClientID) -> String {
    let i = engine.clients[c]?.identity
    let known = [i?.pid.map { "pid \($0)" }, i?.exe].compactMap { $0 }
    return "client \(c)" + (known.isEmpty ? " (identity unknown)" : " (" + known.joined(separator: ", ") + ")")
  }

  /// Clients connected before the daemon: identify each (X-Resource QueryClients).
  func enumerateClients() {
    let own = Set([x.ownBase, shieldX.ownBase]).union(detector?.excludedClients.map(\.base) ?? [])
    for base in x.allClientBases() where !own.contains(base) && base != 0 {
      let id = identify(base: base)
      apply(.clientConnected(ClientID(base), id))
    }
  }

  /// The compositor: owner of `_NET_WM_CM_Sn` (XFixes selection events tell us when it
  /// changes), or, without one, a client found redirecting windows (X-Resource types).
  func watchCompositor() {
    capture.xfixesFirstEvent = x.firstEvent("XFIXES")
    if capture.xfixesFirstEvent != 0 {
      if let r = xcb_xfixes_query_version_reply(x.conn, xcb_xfixes_query_version(x.conn, 5, 0), nil) { free(r) }
      effects.watchSelection(atoms.compositorSelection, reportTo: managerWindow)
    }
    let owner = x.selectionOwner(atoms.compositorSelection)
    if owner != 0 {
      apply(.compositorChanged(ClientID(x.clientBase(of: owner))))
      return
    }
    let own: Set<UInt32> = [x.ownBase, shieldX.ownBase]
    for base in x.allClientBases() where !own.contains(base) && base != 0 {
      let types = x.resourceTypeNames(ofClient: base)
      if types.contains("CompositeClientSubwindows") || types.contains("CompositeClientWindow") {
        log.info("client 0x\(String(base, radix: 16)) redirects windows without owning _NET_WM_CM_S\(x.screenNumber)")
        apply(.compositorChanged(ClientID(base), ownsSelection: false))
        return
      }
    }
  }
}

/// The loop as the capture bridge's host (`CaptureBridge.drain`).
extension WatcherLoop: CaptureHost {
  func mayBeSecure(_ w: WindowID) -> Bool {
    engine.windows[w]?.reason.isSecure ?? (tracker.isPending(w) || driver.isShield(w))
  }

  var hasSecureWindow: Bool { engine.hasSecureWindow }
  var sessionsLive: Bool { !engine.sessions.isEmpty }
  var quarantines: Bool { engine.policy.quarantine != nil }

  func unknownClient(_ c: ClientID) -> Bool { engine.isUnheardOf(c) }

  func countsAsCapture(_ c: ClientID, _ req: CaptureRequest, catalog: ResolvedCaptureCatalog) -> Bool {
    engine.countsAsCapture(
      req, catalog: catalog, pixmapOwner: req.target.map { ClientID($0 & ~x.resourceMask) },
      isWindowManager: { isWindowManager(c) })
  }

  func earlyShieldsMapped(_ fired: Set<WindowID>) {
    for t in fired { driver.markMapped(t) }
  }

  func knowWindows() {
    drainEvents()
    trackPending()
  }

  func captureReported(_ c: ClientID, _ req: CaptureRequest) {
    if req.bypassesShield, let w = req.target,
      case .lost(let t, let how) = driver.redirected(w, how: "redirected (Composite, Manual) by \(described(c))")
    {
      // A redirected shield paints nothing: replaced by a new one (not redirected).
      // (`redirected` does nothing unless `w` is one of our shields.)
      shieldLost(t, how: how)
    }
  }
}

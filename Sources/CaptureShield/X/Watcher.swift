internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Signal numbers written by the handlers into the self-pipe; the loop reads them.
/// Signal handlers only write one byte: nothing else happens in signal context.
nonisolated(unsafe) private var signalPipeWriteFD: Int32 = -1

/// `shieldctl watch`: the daemon. One event loop over the X connections; the decision
/// engine decides, `XEffects` and `ShieldDriver` act.
public enum Watcher {
  /// Runs until SIGTERM/SIGINT (exit 0) or a fatal condition (see `WatchExit`).
  public static func run(_ options: WatchOptions) -> Int32 {
    let log = AuditLog(format: options.logFormat, syslog: options.syslog)
    if let why = waylandSession(ProcessInfo.processInfo.environment) {
      // Say so instead of pretending: X11 shields only cover Xwayland windows against X11
      // capture clients; Wayland-native capture (PipeWire portals) is the compositor's call.
      log.error(
        "this is a Wayland session (\(why)): CaptureShield only sees X11 (Xwayland) clients and windows; "
          + "screen capture through the Wayland compositor (xdg-desktop-portal, PipeWire) is not detected or "
          + "blanked. Use your compositor's own rules for Wayland-native windows.")
    }
    let policyPaths = options.policyPaths ?? PolicyLoader.defaultPaths(environment: ProcessInfo.processInfo.environment)
    let policy: Policy
    do {
      policy = try loadPolicy(policyPaths)
    } catch {
      log.error("invalid policy; not starting (no last good policy to keep):\n\(error)")
      return WatchExit.badPolicy
    }
    do {
      let w = try WatcherLoop(options: options, policy: policy, policyPaths: policyPaths, log: log)
      return w.run()
    } catch {
      log.error("\(error)")
      if case .alreadyRunning = error { return WatchExit.alreadyRunning }
      if case .cannotConnect = error { return WatchExit.xServerGone }
      return WatchExit.failure
    }
  }

  /// Why the environment looks like a Wayland session, or nil.
  public static func waylandSession(_ env: [String: String]) -> String? {
    if env["XDG_SESSION_TYPE"] == "wayland" { return "XDG_SESSION_TYPE=wayland" }
    if let w = env["WAYLAND_DISPLAY"], !w.isEmpty { return "WAYLAND_DISPLAY=\(w)" }
    return nil
  }

  static func loadPolicy(_ paths: [String]) throws -> Policy {
    if paths.isEmpty {
      var p = Policy()
      p.sources = []
      return p
    }
    return try PolicyLoader.load(paths: paths)
  }
}

final class WatcherLoop {
  let x: XConnection
  var driver: ShieldDriver
  var engine: Engine
  let log: AuditLog
  let policyPaths: [String]
  let startedAt = Date().timeIntervalSince1970
  let managerWindow: xcb_window_t
  let managerAtom: xcb_atom_t
  /// Interesting atoms.
  let aWMClass: xcb_atom_t = 67, aWMName: xcb_atom_t = 39, aCardinal: xcb_atom_t = 6
  let aNetWMName: xcb_atom_t, aUTF8: xcb_atom_t, aSecure: xcb_atom_t, aNetWMPID: xcb_atom_t
  let aState: xcb_atom_t, aCapturing: xcb_atom_t, aCaptureChanged: xcb_atom_t, aCommand: xcb_atom_t
  /// What the shell knows of each tracked window (the engine has its own copy).
  var tracked: [WindowID: WindowInfo] = [:]
  var windowsPerClient: [UInt32: Int] = [:]
  /// Windows whose title comes from `_NET_WM_NAME` (WM_NAME changes are then ignored).
  var netNamed: Set<WindowID> = []
  var identities: [UInt32: ClientIdentity] = [:]
  var stateDirty = true
  /// `flushAll` is running (it may handle records, which must not flush again).
  var flushing = false
  /// `engine.quarantineTargets` since the engine last handled an event (nil: ask again).
  var quarantineTargets: [WindowID]?
  var lastPublish = MonotonicTime(nanoseconds: 0)
  let publishInterval = PolicyDuration.milliseconds(50)
  var signalRead: Int32 = -1
  var shuttingDown = false
  var fds: [pollfd] = []
  /// Request-level capture detection (RECORD); nil when the server lacks RECORD, in
  /// which case `capturing` mode falls back to shielding always (fail safe).
  var detector: CaptureDetector?
  let cmAtom: xcb_atom_t
  var xfixesFirstEvent: UInt8 = 0
  /// Poke the server (a cheap round trip) so it flushes pending RECORD records: only
  /// while a session is live or shortly after a client connected.
  var promptRecordsUntil = MonotonicTime(nanoseconds: 0)
  var lastPoke = MonotonicTime(nanoseconds: 0)
  let pokeInterval = PolicyDuration.milliseconds(20)
  /// See `batchingUntil`.
  var lastMainEvents = MonotonicTime(nanoseconds: 0)
  /// New top-levels not tracked yet (see `deferNewWindows`), in creation order, and since when.
  var pendingCreates: [WindowID] = []
  var pendingSet: Set<WindowID> = []
  var pendingSince: MonotonicTime?
  let batchInterval = PolicyDuration.milliseconds(10)
  /// When the RECORD stream last brought anything, and how many records came in the current
  /// run of reads each within `batchInterval` of the one before (see `recordBatchingUntil`).
  var lastRecords = MonotonicTime(nanoseconds: 0)
  var recordRun = 0
  /// Records in one run that make a burst (a busy client's harmless requests).
  let burstRecords = 32
  // MARK: Copied-text guard hook
  /// The copied-text guard (own connection; nil when `clipboard.enabled` is false or it
  /// could not start). Its failures are logged, never fatal.
  var clipboard: ClipboardGuard?

  init(options: WatchOptions, policy: Policy, policyPaths: [String], log: AuditLog) throws(XError) {
    x = try XConnection(display: options.display)
    let shieldConn = try XConnection(display: options.display)
    self.log = log
    self.policyPaths = policyPaths
    engine = Engine(policy: policy)
    for ext in ["X-Resource", "SHAPE"] where !x.hasExtension(ext) { throw .missingExtension(ext) }
    let a = x.atoms([
      "_NET_WM_NAME", "UTF8_STRING", ProtocolAtom.secure, "_NET_WM_PID", ProtocolAtom.state,
      ProtocolAtom.capturing, ProtocolAtom.captureChanged, ProtocolAtom.command,
      ProtocolAtom.managerPrefix + String(x.screenNumber), "_NET_WM_CM_S" + String(x.screenNumber),
    ])
    (aNetWMName, aUTF8, aSecure, aNetWMPID, aState, aCapturing, aCaptureChanged, aCommand) =
      (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7])
    managerAtom = a[8]
    cmAtom = a[9]

    // One daemon per display: own the manager selection, as window managers do.
    let owner = x.selectionOwner(managerAtom)
    if owner != 0 {
      let pid = x.property(owner, aNetWMPID).flatMap { PropertyDecoding.cardinal(format: $0.format, bytes: $0.bytes) }
      throw .alreadyRunning(pid: pid.map(Int.init))
    }
    managerWindow = x.generateID()
    var values: [UInt32] = [1, XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue]
    xcb_create_window(
      x.conn, 0, managerWindow, x.root, -1, -1, 1, 1, 0, UInt16(XCB_WINDOW_CLASS_INPUT_ONLY.rawValue), 0,
      XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue, &values)
    var pid = UInt32(getpid())
    xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), managerWindow, aNetWMPID, aCardinal, 32, 1, &pid)
    xcb_set_selection_owner(x.conn, managerWindow, managerAtom, 0)
    guard x.selectionOwner(managerAtom) == managerWindow else { throw .alreadyRunning(pid: nil) }

    driver = ShieldDriver(connection: shieldConn, failMode: policy.failMode, input: policy.input, label: policy.label)
    do {
      // Only requests that start a session are recorded (indicators such as GrabServer or
      // MIT-SHM Attach would cost records without changing a decision).
      let d = try CaptureDetector(
        display: options.display, catalog: CaptureCatalog.standard.sessionStartersOnly.windowReaders)
      d.excludedClients.formUnion([ClientID(x.ownBase), ClientID(shieldConn.ownBase)])
      detector = d
    } catch {
      log.error(
        "capture detection unavailable (\(error)); shield.when=capturing falls back to shielding secure windows always"
      )
      var p = policy
      if p.when == .capturing { p.when = .always }
      engine = Engine(policy: p)
    }
    if policy.clipboard.enabled { startClipboardGuard(policy.clipboard) }  // copied-text guard hook
  }

  // MARK: Loop

  func run() -> Int32 {
    installSignalHandlers()
    log.info(
      "watching display \(x.displayName) (pid \(getpid()), policy: \(policyPaths.isEmpty ? "built-in defaults" : policyPaths.joined(separator: ", ")), when=\(engine.policy.when.rawValue), failMode=\(engine.policy.failMode.rawValue))"
    )
    // Root: new top-level windows and reparenting.
    var mask: [UInt32] = [XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY.rawValue]
    xcb_change_window_attributes(x.conn, x.root, XCB_CW_EVENT_MASK.rawValue, &mask)
    // Adopt shields a previous daemon left (closed mode), then scan the tree.
    let adopted = driver.adoptExisting()
    if !adopted.isEmpty { log.info("adopted \(adopted.count) shields left by an earlier daemon") }
    enumerateClients()
    watchCompositor()
    scanExistingWindows()
    // Shields the engine did not claim after the initial scan are stale: remove them.
    for t in adopted where !engine.shielded.contains(t) { driver.destroy(t) }
    updatePump()
    flushAll()

    fds = [
      pollfd(fd: x.fileDescriptor, events: Int16(POLLIN), revents: 0),
      pollfd(fd: driver.x.fileDescriptor, events: Int16(POLLIN), revents: 0),
      pollfd(fd: signalRead, events: Int16(POLLIN), revents: 0),
      pollfd(fd: detector?.fileDescriptor ?? -1, events: Int16(POLLIN), revents: 0),
      pollfd(fd: clipboard?.fileDescriptor ?? -1, events: Int16(POLLIN), revents: 0),  // copied-text guard hook
    ]
    while !shuttingDown {
      var timeout = pollTimeout()
      let now = Clock.now()
      // Descriptors read in batches (see batchingUntil/recordBatchingUntil) are left out of
      // this poll; the timeout brings us back when their batch is due.
      for (i, until) in [(0, batchingUntil(now)), (3, recordBatchingUntil(now))] {
        if let until {
          fds[i].events = 0
          timeout = min(timeout, Int32((until.nanoseconds - now.nanoseconds) / 1_000_000 + 1))
        } else {
          fds[i].events = Int16(POLLIN)
        }
      }
      _ = poll(&fds, nfds_t(fds.count), timeout)
      if fds[2].revents != 0 { handleSignals() }
      // RECORD first: a new client under quarantine is shielded against before anything else.
      drainDetector()
      drainEvents()
      if detector?.hasError == true {
        log.error("capture detection stopped (RECORD context ended); exiting so the service manager restarts us")
        return WatchExit.xServerGone
      }
      if driver.x.hasError && !x.hasError { replaceShieldConnection() }
      if x.hasError || driver.x.hasError {
        log.error("lost the connection to the X server (\(x.displayName)); exiting so the service manager restarts us")
        return WatchExit.xServerGone
      }
      if let d = engine.nextDeadline, Clock.now() >= d { apply(.tick) }
      drainClipboard()  // copied-text guard hook
      drainEvents(readSockets: false)  // events queued while we waited for replies above
      if let since = pendingSince, !deferNewWindows || Clock.now() >= since + batchInterval { trackPending() }
      publishIfDue()
      flushAll()
    }
    return shutdown()
  }

  /// Milliseconds until the earliest deadline the loop must wake for (60 s at most).
  func pollTimeout() -> Int32 {
    let now = Clock.now()
    var ms: UInt64 = 60_000
    func wake(at d: MonotonicTime?) {
      guard let d else { return }
      ms = min(ms, d.nanoseconds > now.nanoseconds ? (d.nanoseconds - now.nanoseconds) / 1_000_000 + 1 : 0)
    }
    wake(at: engine.nextDeadline)
    wake(at: pendingSince.map { $0 + batchInterval })
    if wantsPokes(now) { wake(at: lastPoke + pokeInterval) }
    wake(at: clipboard?.nextDeadline)  // copied-text guard hook
    if stateDirty { wake(at: lastPublish + publishInterval) }
    return Int32(ms)
  }

  /// Sends what is buffered. Shield removals go out here, and with quarantine on only
  /// when every ClientStarted the pump read has been handled: a shield is never taken down
  /// between a new client's connection and our decision about it. Then the pump is armed
  /// with the shields a new client's connection would put up (`Engine.quarantineTargets`).
  func flushAll() {
    guard !flushing else { return }
    flushing = true
    defer { flushing = false }
    driver.writeRegistry()
    x.flush()
    guard let pump = detector?.pump else {
      driver.commitUnmaps()
      driver.x.flush()
      return
    }
    while true {
      // The engine's answer changes only when it handles an event (it scans every window).
      if quarantineTargets == nil { quarantineTargets = engine.quarantineTargets }
      let arm = driver.armable(quarantineTargets ?? [])
      if pump.commit(
        removesShields: driver.hasPendingUnmaps, arm: (driver.x.conn, arm.shields, arm.targets),
        submit: { driver.commitUnmaps() })
      {
        break
      }
      drainDetector()
      driver.writeRegistry()
      x.flush()
    }
    driver.x.flush()
  }

  /// Quarantine on: the RECORD pump thread reads records and fires armed shields; off: the
  /// loop reads them itself (no thread, and records can be read in batches).
  func updatePump() {
    guard let d = detector else { return }
    let p = engine.policy
    let launches = p.quarantine != nil && p.quarantineOnLaunch
    if p.quarantine != nil, d.pump != nil, d.pumpWatchesLaunches != launches {
      d.stopPump()  // restarted below with or without the watch
    }
    if p.quarantine != nil {
      if d.pump == nil {
        var watch: LaunchWatch? = nil
        if launches {
          do {
            watch = try LaunchWatch()
          } catch {
            log.error(
              "capture.quarantineOnLaunch: cannot watch for X client launches (\(error)); the quarantine starts at each client's connection"
            )
          }
        }
        d.startPump(launchWatch: watch)
      }
    } else {
      d.stopPump()
    }
    if fds.count > 3 { fds[3].fd = d.fileDescriptor }
  }

  /// Handles every event of both connections, including those xcb queued while we waited
  /// for a reply (poll() does not see those), until none is left. `readSockets: false`
  /// takes only those queued events (what arrives on a socket wakes the next poll anyway).
  func drainEvents(readSockets: Bool = true) {
    // One read of each socket per call (xcb_poll_for_event reads when its queue is empty);
    // later passes take only what libxcb queued meanwhile. Reading again and again would
    // chase a busy client's event stream one event at a time.
    var first = readSockets
    while true {
      func next(_ c: OpaquePointer) -> UnsafeMutablePointer<xcb_generic_event_t>? {
        first ? xcb_poll_for_event(c) : xcb_poll_for_queued_event(c)
      }
      // Read the whole batch first: a window created and destroyed within it needs no
      // requests at all (menus, tooltips, busy apps).
      var batch: [UnsafeMutablePointer<xcb_generic_event_t>] = []
      if let ev = next(x.conn) {
        batch.append(ev)
        while let ev = xcb_poll_for_queued_event(x.conn) { batch.append(ev) }
      }
      var shieldEvents = 0
      while let ev = next(driver.x.conn) {
        shieldEvents += 1
        if let report = driver.handle(ev) {
          switch report {
          case .lost(let t, let how): apply(.shieldLost(t, how: how))
          }
        }
        free(ev)
      }
      first = false
      if batch.isEmpty && shieldEvents == 0 { return }
      if !batch.isEmpty { lastMainEvents = Clock.now() }
      var destroyedAt: [WindowID: Int] = [:]
      for (i, ev) in batch.enumerated() where Int32(CXCB_event_type(ev)) == XCB_DESTROY_NOTIFY {
        destroyedAt[UnsafeRawPointer(ev).load(as: xcb_destroy_notify_event_t.self).window] = i
      }
      for (i, ev) in batch.enumerated() {
        handleMainEvent(ev, destroyedLater: { w in (destroyedAt[w] ?? -1) > i })
        free(ev)
      }
    }
  }

  /// While the desktop is busy and nothing is at stake, the main connection's events are
  /// read in batches: the socket is not polled until `batchInterval` after the last batch,
  /// so a burst of window traffic wakes the daemon (and makes the X server wake it) once per
  /// interval instead of once per event (see `deferNewWindows` for when nothing is at
  /// stake). Whatever the main socket holds is read before any capture record is acted on.
  /// Idle desktops are unaffected: the first event after a quiet interval is read at once.
  func batchingUntil(_ now: MonotonicTime) -> MonotonicTime? {
    guard deferNewWindows else { return nil }
    let until = lastMainEvents + batchInterval
    return now < until ? until : nil
  }

  /// The RECORD stream, likewise, during a burst (`burstRecords` records, each within
  /// `batchInterval` of the one before) while nothing is at stake and quarantine is off: a
  /// busy client whose recorded requests all turn out harmless (GetImage of its own pixmaps)
  /// would otherwise wake the daemon, and make the server wake it, for every request. The
  /// price, during such a burst only: a capture that begins is seen up to `batchInterval`
  /// later, and a client that connects and exits within that time is not identified (so
  /// never allowed) (docs/security.md, Known limitations). Quarantine needs every ClientStarted at
  /// once, so it turns this off; sporadic records are always read at once.
  func recordBatchingUntil(_ now: MonotonicTime) -> MonotonicTime? {
    guard deferNewWindows, engine.policy.quarantine == nil, recordRun >= burstRecords else { return nil }
    let until = lastRecords + batchInterval
    return now < until ? until : nil
  }

  /// Nothing is at stake: capture detection runs, shields are only wanted while capturing,
  /// and none is up. Then a new top-level is tracked (its event selection and facts: a
  /// round trip) up to `batchInterval` after its CreateNotify, and not at all if it is
  /// destroyed by then. Everything pending is tracked at once before any capture record,
  /// command or policy change is acted on, so a decision never misses a window.
  var deferNewWindows: Bool {
    detector != nil && engine.policy.when == .capturing && !engine.shieldsActive
  }

  /// Tracks the windows whose tracking was deferred.
  func trackPending() {
    guard !pendingCreates.isEmpty else { return }
    // Each once (an id reused after a DestroyNotify can be listed twice).
    let windows = pendingCreates.filter { pendingSet.remove($0) != nil }
    pendingCreates = []
    pendingSince = nil
    track(windows, initial: false)
  }

  /// Another client killed our shield connection (XKillClient): its shields are gone
  /// (open mode) or orphaned (closed mode). Reconnect and put every shield back.
  func replaceShieldConnection() {
    guard let conn = try? XConnection(display: x.displayName) else { return }
    detector?.pump?.disarm()  // it must not touch the old connection once that is gone
    let p = engine.policy
    driver = ShieldDriver(connection: conn, failMode: p.failMode, input: p.input, label: p.label)
    fds[1].fd = conn.fileDescriptor
    detector?.excludedClients.insert(ClientID(conn.ownBase))
    let orphans = driver.adoptExisting()
    for t in engine.shielded.sorted() where !orphans.contains(t) {
      apply(.shieldLost(t, how: "shield connection killed by another client"))
    }
  }

  // MARK: Capture detection

  func wantsPokes(_ now: MonotonicTime) -> Bool {
    guard detector != nil else { return false }
    return !engine.sessions.isEmpty || now < promptRecordsUntil
  }

  func drainDetector() {
    guard let d = detector else { return }
    let now = Clock.now()
    if wantsPokes(now), now >= lastPoke + pokeInterval {
      d.poke()
      lastPoke = now
    }
    let readBefore = d.repliesRead
    defer {
      if d.repliesRead != readBefore {
        let now = Clock.now()
        recordRun = (now < lastRecords + batchInterval ? recordRun : 0) + (d.repliesRead - readBefore)
        lastRecords = now
      }
    }
    repeat {
      // A window not tracked yet might be secure: a manual redirection of it counts.
      // (No capture list: capturing `engine` would copy the whole engine on every drain.)
      let events = d.drain(isSecure: { w in self.engine.windows[w]?.reason.isSecure ?? self.pendingSet.contains(w) })
      // Shields the pump put up on a ClientStarted among these records: up on the server.
      let fired = d.lastFired
      for t in fired { driver.markMapped(t) }
      // Processes that loaded libxcb: clients about to connect (the pump fired for them).
      for program in d.lastLaunches { apply(.clientLaunching(program: program)) }
      defer {
        // Put up for a client the engine then did not quarantine (say, it had gone again):
        // down again, as the engine wants.
        for t in fired.sorted() where !engine.shielded.contains(t) { driver.unshield(t) }
      }
      // Decide with every window known: read the window events that came before and track
      // the windows whose tracking was deferred (once per batch of records).
      var windowsKnown = false
      func knowWindows() {
        guard !windowsKnown else { return }
        windowsKnown = true
        drainEvents()
        trackPending()
      }
      for e in events {
        switch e {
        case .clientStarted(let c):
          promptRecordsUntil = Clock.now() + .seconds(2)
          if engine.policy.quarantine != nil {
            // Quarantine: the pump has put the armed shields up already; shield whatever
            // else the engine wants (one MapWindow each, no round trip, flushed by apply),
            // then identify (a round trip), then the rest.
            apply(.clientConnected(c, nil))
            let id = ProcessInfoReader.identity(pid: x.clientPID(of: c.base))
            identities[c.base] = id
            knowWindows()
            apply(.clientIdentified(c, id))
          } else {
            // Identify first: short-lived tools are gone by the time anyone asks later, and a
            // lookup behind another request can get stuck behind the tool's GrabServer.
            let id = ProcessInfoReader.identity(pid: x.clientPID(of: c.base))
            identities[c.base] = id
            knowWindows()
            apply(.clientConnected(c, id))
          }
        case .clientDied(let c):
          knowWindows()
          identities[c.base] = nil
          apply(.clientGone(c))
        case .request(let c, let req):
          if identities[c.base] == nil, engine.clients[c] == nil {
            // Connected before we started, or its ClientStarted was missed: identify now.
            let id = ProcessInfoReader.identity(pid: x.clientPID(of: c.base))
            identities[c.base] = id
            knowWindows()
            apply(.clientConnected(c, id))
          }
          knowWindows()
          apply(.captureRequest(c, req))
        }
      }
    } while d.moreAvailable
  }

  /// Clients connected before the daemon: identify each (X-Resource QueryClients).
  func enumerateClients() {
    let own = Set([x.ownBase, driver.x.ownBase]).union(detector?.excludedClients.map(\.base) ?? [])
    for base in x.allClientBases() where !own.contains(base) && base != 0 {
      let id = ProcessInfoReader.identity(pid: x.clientPID(of: base))
      identities[base] = id
      apply(.clientConnected(ClientID(base), id))
    }
  }

  /// The compositor: owner of `_NET_WM_CM_Sn` (XFixes selection events tell us when it
  /// changes), or, without one, a client found redirecting windows (X-Resource types).
  func watchCompositor() {
    xfixesFirstEvent = x.firstEvent("XFIXES")
    if xfixesFirstEvent != 0 {
      if let r = xcb_xfixes_query_version_reply(x.conn, xcb_xfixes_query_version(x.conn, 5, 0), nil) { free(r) }
      xcb_xfixes_select_selection_input(
        x.conn, managerWindow, cmAtom,
        XCB_XFIXES_SELECTION_EVENT_MASK_SET_SELECTION_OWNER.rawValue
          | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_WINDOW_DESTROY.rawValue
          | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_CLIENT_CLOSE.rawValue)
    }
    let owner = x.selectionOwner(cmAtom)
    if owner != 0 {
      apply(.compositorChanged(ClientID(x.clientBase(of: owner))))
      return
    }
    let own: Set<UInt32> = [x.ownBase, driver.x.ownBase]
    for base in x.allClientBases() where !own.contains(base) && base != 0 {
      let types = x.resourceTypeNames(ofClient: base)
      if types.contains("CompositeClientSubwindows") || types.contains("CompositeClientWindow") {
        log.info("client 0x\(String(base, radix: 16)) redirects windows without owning _NET_WM_CM_S\(x.screenNumber)")
        apply(.compositorChanged(ClientID(base)))
        return
      }
    }
  }

  func shutdown() -> Int32 {
    detector?.stopPump()
    clipboard?.shutdown()  // copied-text guard hook: nothing secret is left behind
    if engine.policy.failMode == .open {
      driver.removeAll()
      log.info("stopped; shields removed (failMode=open)")
    } else {
      driver.writeRegistry()
      log.info("stopped; \(driver.shields.count) shields left up for the next daemon to adopt (failMode=closed)")
    }
    xcb_delete_property(x.conn, x.root, aState)
    xcb_delete_property(x.conn, x.root, aCapturing)
    flushAll()
    return WatchExit.ok
  }

  // MARK: Signals

  func installSignalHandlers() {
    var p: [Int32] = [0, 0]
    _ = pipe(&p)
    _ = fcntl(p[0], F_SETFL, O_NONBLOCK)
    _ = fcntl(p[1], F_SETFL, O_NONBLOCK)
    signalRead = p[0]
    signalPipeWriteFD = p[1]
    for s in [SIGTERM, SIGINT, SIGHUP] {
      signal(s) { sig in
        var b = UInt8(truncatingIfNeeded: sig)
        _ = write(signalPipeWriteFD, &b, 1)
      }
    }
    signal(SIGPIPE, SIG_IGN)
  }

  func handleSignals() {
    var buf = [UInt8](repeating: 0, count: 64)
    var reload = false
    while true {
      let n = read(signalRead, &buf, buf.count)
      if n <= 0 { break }
      for b in buf[..<n] {
        switch Int32(b) {
        case SIGTERM, SIGINT: shuttingDown = true
        case SIGHUP: reload = true
        default: break
        }
      }
    }
    // A storm of SIGHUPs collapses into one reload.
    if reload { reloadPolicy(by: "SIGHUP") }
  }

  func reloadPolicy(by: String) {
    trackPending()
    do {
      let p = try Watcher.loadPolicy(policyPaths)
      let hadTitles = policyUsesTitle
      if !hadTitles && p.secure.contains(where: { $0.title != nil }) { readAllTitles() }
      apply(.policyReplaced(p))
      if p.quarantine != nil {
        for (id, w) in engine.windows where w.reason.isSecure && w.reason != .provisional { driver.prepare(id) }
      }
      updatePump()
      driver.setFailMode(p.failMode)
      driver.input = p.input
      driver.label = p.label
      reloadClipboardGuard(p.clipboard)  // copied-text guard hook
    } catch {
      apply(.policyRejected("\(error) (reload requested by \(by))"))
    }
  }

  // MARK: Engine

  func apply(_ event: Engine.Event) {
    let effects = engine.handle(event, now: Clock.now())
    quarantineTargets = nil
    // Shields going up first, and on the wire at once: the audit lines (date formatting, a
    // write) and the rest come after. A tool that grabs the server right after connecting
    // leaves quarantine a few hundred microseconds. (Taking shields down is not urgent: it
    // stays in order, after the records that explain it.)
    var raised = false
    for case .shield(let w) in effects {
      perform(.shield(w))
      raised = true
    }
    if raised { driver.x.flush() }
    for e in effects {
      if case .shield = e { continue }
      perform(e)
    }
    // With quarantine on, keep an unmapped shield ready in every secure window, so that
    // a new client's quarantine costs one MapWindow per window and no round trip.
    if engine.policy.quarantine != nil {
      switch event {
      case .windowAppeared(let info), .windowChanged(let info):
        if let w = engine.windows[info.id], w.reason.isSecure, w.reason != .provisional { driver.prepare(info.id) }
      default: break
      }
    }
  }

  /// Carries out one effect. With `ShieldDriver`, the only place that changes X state.
  func perform(_ effect: Engine.Effect) {
    switch effect {
    case .shield(let w):
      if !driver.shield(w) { windowGone(w) }
    case .unshield(let w):
      driver.unshield(w)
    case .audit(let r):
      log.write(r)
    case .publishState:
      stateDirty = true
    case .notifyCapture(let active, let windows):
      var v: UInt32 = active ? 1 : 0
      xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), x.root, aCapturing, aCardinal, 32, 1, &v)
      for w in windows {
        var ev = xcb_client_message_event_t()
        ev.response_type = UInt8(XCB_CLIENT_MESSAGE)
        ev.format = 32
        ev.window = w
        ev.type = aCaptureChanged
        ev.data = xcb_client_message_data_t(words: [v, 0, 0, 0, 0])
        withUnsafeBytes(of: &ev) { raw in
          var buf = [CChar](repeating: 0, count: 32)
          for i in 0..<min(32, raw.count) { buf[i] = CChar(bitPattern: raw[i]) }
          _ = xcb_send_event(x.conn, 0, w, 0, buf)
        }
      }
    }
  }

  func publishIfDue() {
    guard stateDirty else { return }
    let now = Clock.now()
    guard now >= lastPublish + publishInterval else { return }
    stateDirty = false
    lastPublish = now
    var snap = engine.snapshot(pid: Int(getpid()), display: x.displayName, startedAt: startedAt)
    snap.clipboard = clipboard?.status(wallClock: Date().timeIntervalSince1970)  // copied-text guard hook
    if let w = detector?.pump?.launchWatch {
      snap.launchWatch = w.path
      if w.programs != nil, !w.programDirectories.isEmpty {
        snap.launchDirectories = w.programDirectories.values.sorted()
        snap.launchPrograms = w.watchedPrograms
      }
    }
    let enc = JSONEncoder()
    enc.outputFormatting = [.sortedKeys]
    guard let data = try? enc.encode(snap) else { return }
    let bytes = [UInt8](data)
    xcb_change_property(
      x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), x.root, aState, aUTF8, 8, UInt32(bytes.count), bytes)
  }

  // MARK: Windows

  func isOwn(_ w: WindowID) -> Bool {
    let b = x.clientBase(of: w)
    return b == x.ownBase || b == driver.x.ownBase || w == managerWindow
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
    // Children of top-levels that carry WM_STATE are client windows inside WM frames.
    let wmState = x.atom("WM_STATE")
    let cookies = frames.map { xcb_query_tree(x.conn, $0) }
    var inner: [WindowID] = []
    for ck in cookies {
      guard let r = xcb_query_tree_reply(x.conn, ck, nil) else { continue }
      let n = Int(xcb_query_tree_children_length(r))
      let p = xcb_query_tree_children(r)!
      for i in 0..<n where !isOwn(p[i]) { inner.append(p[i]) }
      free(r)
    }
    let stateCookies = inner.map { x.propertyCookie($0, wmState, maxBytes: 8) }
    for (w, ck) in zip(inner, stateCookies) {
      if let v = x.propertyReply(ck), !v.bytes.isEmpty { candidates.append(w) }
    }
    track(candidates, initial: true, nested: Set(candidates).subtracting(frames))
  }

  /// Selects events on the windows, reads their facts (pipelined) and tells the engine.
  func track(_ windows: [WindowID], initial: Bool, nested: Set<WindowID> = []) {
    let fresh = windows.filter { tracked[$0] == nil && !isOwn($0) }
    guard !fresh.isEmpty else { return }
    // Top-levels' structure events already come through the root's SubstructureNotify;
    // selecting StructureNotify on them too would make the server send each event twice.
    // Windows inside a window manager's frame need it (see ReparentNotify).
    for w in fresh {
      var mask: [UInt32] = [
        XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue
          | (nested.contains(w) ? XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue : 0)
      ]
      xcb_change_window_attributes(x.conn, w, XCB_CW_EVENT_MASK.rawValue, &mask)
    }
    // Read after selecting: a property set before the selection took effect is seen here.
    let attrCookies = fresh.map { xcb_get_window_attributes(x.conn, $0) }
    // Titles are read only when a rule looks at them (or, later, for secure windows'
    // rows in the state): title changes are the most frequent property traffic.
    let wantTitle = policyUsesTitle || initial
    let propAtoms = wantTitle ? [aWMClass, aSecure, aNetWMName, aWMName] : [aWMClass, aSecure]
    let propCookies = fresh.map { w in propAtoms.map { x.propertyCookie(w, $0, maxBytes: 16384) } }
    var infos: [WindowInfo] = []
    for (i, w) in fresh.enumerated() {
      guard let attr = xcb_get_window_attributes_reply(x.conn, attrCookies[i], nil) else {
        for ck in propCookies[i] { _ = x.propertyReply(ck) }
        driver.forget(w)  // a shield put up at CreateNotify died with it
        continue  // gone already: an expected race
      }
      let mapped = attr.pointee.map_state != UInt8(XCB_MAP_STATE_UNMAPPED.rawValue)
      let inputOnly = attr.pointee._class == UInt16(XCB_WINDOW_CLASS_INPUT_ONLY.rawValue)
      free(attr)
      let props = propCookies[i].map { x.propertyReply($0) }
      if inputOnly {  // shows no pixels
        driver.forget(w)
        continue
      }
      var info = WindowInfo(
        id: w, client: ClientID(x.clientBase(of: w)), tag: .absent, propertiesKnown: initial || mapped, mapped: mapped)
      applyProperty(&info, atom: aWMClass, props[0])
      applyProperty(&info, atom: aSecure, props[1])
      if wantTitle {
        applyProperty(&info, atom: aNetWMName, props[2])
        if info.facts.title == nil { applyProperty(&info, atom: aWMName, props[3]) }
      }
      infos.append(info)
    }
    for info in infos {
      ensureClient(info.client!.base, sample: info.id)
      tracked[info.id] = info
      windowsPerClient[info.client!.base, default: 0] += 1
      apply(.windowAppeared(info))
      // A shield put up at CreateNotify that the engine does not want (the window was
      // already mapped and is not secure) goes at once.
      if !engine.shielded.contains(info.id) { driver.dropProvisional(info.id) }
      if !wantTitle { refreshTitleIfSecure(info.id) }
    }
  }

  /// Whether any `secure` rule matches on titles (then every title is read and followed).
  var policyUsesTitle: Bool { engine.policy.secure.contains { $0.title != nil } }

  /// Reads every tracked window's title (a reloaded policy now has title rules).
  func readAllTitles() {
    let ids = Array(tracked.keys)
    let cookies = ids.map {
      ($0, x.propertyCookie($0, aNetWMName, maxBytes: 16384), x.propertyCookie($0, aWMName, maxBytes: 16384))
    }
    for (w, net, old) in cookies {
      let n = x.propertyReply(net)
      let o = x.propertyReply(old)
      guard var info = tracked[w] else { continue }
      applyProperty(&info, atom: aNetWMName, n)
      if info.facts.title == nil { applyProperty(&info, atom: aWMName, o) }
      tracked[w] = info
    }
    for w in ids { if let info = tracked[w] { apply(.windowChanged(info)) } }
  }

  /// Reads the title of a secure window whose title was skipped (for `list`/`status`).
  func refreshTitleIfSecure(_ w: WindowID) {
    guard var info = tracked[w], info.facts.title == nil, engine.windows[w]?.reason.isSecure == true,
      engine.windows[w]?.reason != .provisional
    else { return }
    let net = x.propertyCookie(w, aNetWMName, maxBytes: 16384)
    let old = x.propertyCookie(w, aWMName, maxBytes: 16384)
    applyProperty(&info, atom: aNetWMName, x.propertyReply(net))
    let legacy = x.propertyReply(old)
    if info.facts.title == nil { applyProperty(&info, atom: aWMName, legacy) }
    guard info.facts.title != nil else { return }
    tracked[w] = info
    apply(.windowChanged(info))
  }

  func applyProperty(_ info: inout WindowInfo, atom: xcb_atom_t, _ v: PropertyValue?) {
    switch atom {
    case aWMClass:
      let c = PropertyDecoding.wmClass(v?.bytes ?? [])
      info.facts.instance = c.instance
      info.facts.class = c.class
    case aNetWMName:
      if let v, !v.bytes.isEmpty {
        info.facts.title = PropertyDecoding.text(v.bytes, utf8: true)
        netNamed.insert(info.id)
      }
    case aWMName:
      if let v, !v.bytes.isEmpty {
        info.facts.title = PropertyDecoding.text(v.bytes, utf8: v.type == aUTF8)
      }
    case aSecure:
      guard let v else {
        info.tag = .absent
        return
      }
      info.tag = TagState.decode(isCardinal: v.type == aCardinal, format: v.format, bytes: v.bytes)
    default:
      break
    }
  }

  /// Looks up a client's identity once (X-Resource PID, then /proc).
  func ensureClient(_ base: UInt32, sample: WindowID) {
    guard identities[base] == nil, engine.clients[ClientID(base)] == nil else { return }
    let pid = x.clientPID(of: sample)
    let id = ProcessInfoReader.identity(pid: pid)
    identities[base] = id
    apply(.clientConnected(ClientID(base), id))
  }

  func windowGone(_ w: WindowID) {
    netNamed.remove(w)
    guard let info = tracked.removeValue(forKey: w) else { return }
    driver.forget(w)
    apply(.windowGone(w))
    if detector == nil, let base = info.client?.base {
      windowsPerClient[base, default: 1] -= 1
      if windowsPerClient[base]! <= 0 {
        windowsPerClient[base] = nil
        identities[base] = nil
        apply(.clientGone(ClientID(base)))
      }
    }
  }

  /// `destroyedLater(w)`: whether a DestroyNotify of `w` follows in the batch being handled.
  func handleMainEvent(
    _ ev: UnsafeMutablePointer<xcb_generic_event_t>, destroyedLater: (WindowID) -> Bool = { _ in false }
  ) {
    let raw = UnsafeRawPointer(ev)
    switch Int32(CXCB_event_type(ev)) {
    case 0:
      break  // an X error: a window vanished between two requests. Expected, never fatal.
    case XCB_CREATE_NOTIFY:
      let e = raw.load(as: xcb_create_notify_event_t.self)
      guard e.parent == x.root, !isOwn(e.window), !destroyedLater(e.window) else { return }
      // While shields are up, every new top-level gets a shield before anything else
      // (the engine keeps it provisionally until the window's facts are known).
      if engine.shieldsActive {
        driver.shieldAtOnce(e.window)
      } else if deferNewWindows {
        if pendingSet.insert(e.window).inserted { pendingCreates.append(e.window) }
        if pendingSince == nil { pendingSince = Clock.now() }
        return
      }
      track([e.window], initial: false)
    case XCB_REPARENT_NOTIFY:
      let e = raw.load(as: xcb_reparent_notify_event_t.self)
      if pendingSet.contains(e.window) { trackPending() }  // follow it into a frame
      if e.parent == x.root, e.event == x.root, !isOwn(e.window), !destroyedLater(e.window) {
        track([e.window], initial: false)
      }
      if e.parent != x.root, e.event == x.root, tracked[e.window] != nil {
        // A top-level went into a window manager's frame: follow it there.
        var m: [UInt32] = [XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue | XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue]
        xcb_change_window_attributes(x.conn, e.window, XCB_CW_EVENT_MASK.rawValue, &m)
      }
    case XCB_DESTROY_NOTIFY:
      let e = raw.load(as: xcb_destroy_notify_event_t.self)
      if pendingSet.remove(e.window) != nil { return }  // never tracked: nothing to undo
      if e.event == e.window || e.event == x.root { windowGone(e.window) }
    case XCB_MAP_NOTIFY:
      let e = raw.load(as: xcb_map_notify_event_t.self)
      if e.event == e.window || e.event == x.root, var info = tracked[e.window], !(info.mapped && info.propertiesKnown)
      {
        info.mapped = true
        info.propertiesKnown = true
        tracked[e.window] = info
        apply(.windowChanged(info))
      }
    case XCB_UNMAP_NOTIFY:
      let e = raw.load(as: xcb_unmap_notify_event_t.self)
      if e.event == e.window || e.event == x.root, var info = tracked[e.window] {
        info.mapped = false
        tracked[e.window] = info
      }
    case XCB_PROPERTY_NOTIFY:
      let e = raw.load(as: xcb_property_notify_event_t.self)
      guard var info = tracked[e.window], [aWMClass, aNetWMName, aWMName, aSecure].contains(e.atom) else { return }
      let isTitle = e.atom == aNetWMName || e.atom == aWMName
      if isTitle && !policyUsesTitle && engine.windows[e.window]?.reason.isSecure != true {
        return  // no rule looks at titles, and only secure windows' titles are shown
      }
      if e.atom == aWMName, netNamed.contains(e.window) { return }  // _NET_WM_NAME takes precedence
      let v = e.state == UInt8(XCB_PROPERTY_DELETE.rawValue) ? nil : x.property(e.window, e.atom, maxBytes: 16384)
      let before = info
      applyProperty(&info, atom: e.atom, v)
      if e.atom == aNetWMName && (v?.bytes.isEmpty ?? true) {
        info.facts.title = nil
        netNamed.remove(e.window)
      }
      guard info != before else { return }
      tracked[e.window] = info
      apply(.windowChanged(info))
      if e.atom == aSecure { refreshTitleIfSecure(e.window) }
    case XCB_CLIENT_MESSAGE:
      let e = raw.load(as: xcb_client_message_event_t.self)
      guard e.window == managerWindow, e.type == aCommand, e.format == 32,
        let (cmd, sender) = CommandCode.decode(e.data.words)
      else { return }
      handleCommand(cmd, sender: "shieldctl (pid \(sender))")
    case XCB_SELECTION_CLEAR:
      let e = raw.load(as: xcb_selection_clear_event_t.self)
      if e.selection == managerAtom {
        log.error("another daemon took over the display; exiting")
        shuttingDown = true
      }
    case Int32(xfixesFirstEvent) + Int32(XCB_XFIXES_SELECTION_NOTIFY) where xfixesFirstEvent != 0:
      let e = raw.load(as: xcb_xfixes_selection_notify_event_t.self)
      guard e.selection == cmAtom else { return }
      let owner = e.subtype == UInt8(XCB_XFIXES_SELECTION_EVENT_SET_SELECTION_OWNER.rawValue) ? e.owner : 0
      apply(.compositorChanged(owner == 0 ? nil : ClientID(x.clientBase(of: owner))))
    default:
      break
    }
  }

  func handleCommand(_ cmd: DaemonCommand, sender: String) {
    trackPending()
    switch cmd {
    case .shield(let w): apply(.manualOverride(w, shielded: true, by: sender))
    case .unshield(let w): apply(.manualOverride(w, shielded: false, by: sender))
    case .pause(let d):
      apply(.pause(until: d.map { Clock.now() + $0 }, by: sender))
    case .resume: apply(.resume(by: sender))
    case .reload: reloadPolicy(by: sender)
    case .clipboardClear:  // copied-text guard hook
      if let clipboard {
        clipboard.clear(by: sender)
      } else {
        log.info("clipboard clear requested by \(sender): the copied-text guard is off (clipboard.enabled)")
      }
    }
  }

  // MARK: Copied-text guard hooks (the guard itself is in Clipboard/)

  func startClipboardGuard(_ p: ClipboardPolicy) {
    do {
      clipboard = try ClipboardGuard(display: x.displayName, policy: p, log: log) { [unowned self] base, _ in
        self.describeSelectionOwner(base)
      }
      detector?.excludedClients.insert(ClientID(clipboard!.ownBase))
    } catch {
      log.error("copied-text guard unavailable (\(error)); screen shielding continues")
    }
  }

  /// Whether the client owns a secure window (tag, property or policy), its identity, and
  /// the facts `clipboard.sources` is matched against.
  func describeSelectionOwner(_ base: UInt32) -> ClipboardGuard.OwnerInfo {
    let c = ClientID(base)
    let own = engine.windows.values.filter { $0.info.client == c }
    let identity =
      engine.clients[c]?.identity ?? identities[base] ?? ProcessInfoReader.identity(pid: x.clientPID(of: base))
    let facts = [identity.facts] + own.map { engine.effectiveFacts($0.info) }
    return (own.contains { $0.reason.isSecure }, identity, facts)
  }

  func drainClipboard() {
    guard let g = clipboard else { return }
    if fds.count > 4 { fds[4].fd = g.fileDescriptor }
    g.drain()
    if let d = g.nextDeadline, Clock.now() >= d { g.tick() }
    if g.statusChanged {
      g.statusChanged = false
      stateDirty = true
    }
    if g.hasError {
      log.error("the copied-text guard lost its X connection; it is off until the next reload")
      clipboard = nil
      if fds.count > 4 { fds[4].fd = -1 }
      stateDirty = true
    }
  }

  func reloadClipboardGuard(_ p: ClipboardPolicy) {
    if let clipboard {
      clipboard.policyReplaced(p)
    } else if p.enabled {
      startClipboardGuard(p)
      if fds.count > 4 { fds[4].fd = clipboard?.fileDescriptor ?? -1 }
    }
    stateDirty = true
  }
}

// The daemon's event loop: poll, batching, flushing, and reading both X connections.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  // MARK: Loop

  func run() -> Int32 {
    installSignalHandlers()
    log.info(
      "watching display \(x.displayName) (pid \(getpid()), policy: \(setup.policyPaths.isEmpty ? "built-in defaults" : setup.policyPaths.joined(separator: ", ")), when=\(engine.policy.when.rawValue), failMode=\(engine.policy.failMode.rawValue))"
    )
    if let module {
      log.info(
        "server enforcement: the CaptureShield Xorg module \(module.versionString) (\(module.mode.rawValue)) keeps secure windows out of untrusted clients' captures; no shield windows are mapped"
      )
      // Tag notices too (1.2): selected before the scan, so no tag falls between the two.
      effects.selectModuleEvents(module, secureWindows: module.reportsSecureWindows)
      server.requestNames = readRequestNames()
    }
    // Root: new top-level windows and reparenting (unless only tagged windows are followed).
    updateWindowWatch(initial: true)
    // Adopt shields a previous daemon left (closed mode), then scan the tree.
    let adopted = adoptShields()  // +Reconnect: only what the registry file vouches for
    if !adopted.isEmpty { log.info("adopted \(adopted.count) shields left by an earlier daemon") }
    enumerateClients()
    watchCompositor()
    scanExistingWindows()
    if server.windowWatch == .tagged { dropUntaggedWindows() }
    // Shields the engine did not claim after the initial scan are stale: remove them.
    // (Under server enforcement, all of them.)
    for t in adopted where module != nil || !engine.shielded.contains(t) { driver.destroy(t) }
    updatePump()
    syncKeylogWatch()  // who listens to the keyboard, from here on (+Keylog)
    syncAccessibility()  // password fields on the accessibility bus (+Accessibility)
    publishIfDue()
    flushAll()
    // Scanned, shields up, state published: the service manager may count us as started.
    channels.systemd?.ready(status: "protecting display \(x.displayName)")

    loop.fds = PollSlot.allCases.map { slot in
      let fd: Int32 =
        switch slot {
        case .x: x.fileDescriptor
        case .shieldX: shieldX.fileDescriptor
        case .signals: loop.signalRead
        case .detector: detector?.fileDescriptor ?? -1
        case .clipboard: clipboard?.fileDescriptor ?? -1  // copied-text guard hook
        case .keyboard, .accessibility: -1  // set before each poll
        }
      return pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    }
    while !loop.shuttingDown {
      var timeout = pollTimeout()
      let now = Clock.now()
      // Descriptors read in batches (see batchingUntil/recordBatchingUntil) are left out of
      // this poll; the timeout brings us back when their batch is due.
      for (slot, until) in [(PollSlot.x, batchingUntil(now)), (.detector, recordBatchingUntil(now))] {
        if let until {
          loop.fds[slot].events = 0
          timeout = min(timeout, Int32((until.nanoseconds - now.nanoseconds) / 1_000_000 + 1))
        } else {
          loop.fds[slot].events = Int16(POLLIN)
        }
      }
      loop.fds[.keyboard].fd = keyboard.source?.fileDescriptor ?? -1  // (re)started by `drainKeylog`
      loop.fds[.accessibility].fd = channels.accessibility?.fileDescriptor ?? -1  // (re)started by `syncAccessibility`
      // The command socket and its waiting connections come last (see `serveCommands`).
      loop.fds.removeSubrange(fixedDescriptors...)
      loop.fds += ([tagGuard.watch?.fileDescriptor ?? -1] + (channels.commands?.descriptors ?? [])).map {
        pollfd(fd: $0, events: Int16(POLLIN), revents: 0)
      }
      _ = poll(&loop.fds, nfds_t(loop.fds.count), timeout)
      // The watchdog hears from this loop only: a stopped or stuck loop misses it.
      channels.systemd?.watchdogIfDue(Clock.now())
      if loop.fds[.signals].revents != 0 { handleSignals() }
      serveCommands()
      // RECORD first: a new client under quarantine is shielded against before anything else.
      drainDetector()
      checkLaunchesIfDue()
      drainTagWatch()
      drainKeylog()
      drainEvents()
      if loop.fds[.accessibility].revents != 0 { drainAccessibility() }
      if detector?.hasError == true {
        log.error("capture detection stopped (RECORD context ended); exiting so the service manager restarts us")
        return WatchExit.xServerGone
      }
      if let code = checkOwnConnections() { return code }  // killed by another client (+Reconnect)
      if let d = engine.nextDeadline, Clock.now() >= d { apply(.tick) }
      if capture.pixmapRecordingCheckDue {
        capture.pixmapRecordingCheckDue = false
        updatePixmapRecording()
      }
      resolveExpiredUntags()
      noticesDue()
      drainClipboard()  // copied-text guard hook
      drainEvents(readSockets: false)  // events queued while we waited for replies above
      if let since = tracker.pendingSince, !deferNewWindows || Clock.now() >= since + tuning.batchInterval {
        trackPending()
      }
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
    wake(at: engine.launchCheckDue)  // who is behind a launch (`checkLaunchesIfDue`)
    wake(at: tracker.pendingSince.map { $0 + tuning.batchInterval })
    if detector != nil { wake(at: capture.timing.nextPoke(now, sessionsLive: !engine.sessions.isEmpty)) }
    wake(at: clipboard?.nextDeadline)  // copied-text guard hook
    if loop.stateDirty { wake(at: loop.lastPublish + tuning.publishInterval) }
    wake(at: channels.systemd?.nextWatchdog)  // nil unless the service manager asked for a watchdog
    wake(at: channels.commands?.nextDeadline)  // a connection that sends no command is closed
    wake(at: tagGuard.nextDeadline)  // a removed tag nobody deleted is put back
    wake(at: notices.nextDeadline)  // a capture notice held back by the rate limit
    return Int32(ms)
  }

  /// Sends what is buffered. Shield removals go out here, and with quarantine on only
  /// when every ClientStarted the pump read has been handled: a shield is never taken down
  /// between a new client's connection and our decision about it. Then the pump is armed
  /// with the shields a new client's connection would put up (`Engine.quarantineTargets`).
  ///
  /// The shield connection goes out first, with the registry: a published state that says
  /// "shielded" (main connection) must never reach the server before the registry that
  /// lists the shield, or a daemon killed in between leaves a retained shield the next
  /// one does not adopt (closed mode: a duplicate shield; a clean clone's ShieldTests
  /// caught it). Nothing in that buffer takes a secure window's shield down: unmaps wait
  /// in the table for `commitUnmaps` below.
  func flushAll() {
    driver.writeRegistry()
    shieldX.flush()
    x.flush()
    guard let pump = detector?.pump else {
      driver.commitUnmaps()
      shieldX.flush()
      return
    }
    while true {
      // The engine's answer changes only when it handles an event (it scans every window).
      if queue.quarantineTargets == nil { queue.quarantineTargets = engine.quarantineTargets }
      let arm = driver.armable(queue.quarantineTargets ?? [])
      if pump.commit(
        removesShields: driver.hasPendingUnmaps, arm: (shieldX.conn, arm.shields, arm.targets),
        submit: { driver.commitUnmaps() })
      {
        break
      }
      drainDetector()
      driver.writeRegistry()
      shieldX.flush()
      x.flush()
    }
    shieldX.flush()
  }

  /// Quarantine on: the RECORD pump thread reads records and fires armed shields; off: the
  /// loop reads them itself (no thread, and records can be read in batches). With
  /// `capture.learn` and capturers in the history, the pump runs without quarantine too,
  /// its launch watch on those programs alone: their starts fire the armed shields
  /// (`Engine.learnedLaunchPaths`), a ClientStarted fires nothing.
  func updatePump() {
    guard let d = detector else { return }
    let p = engine.policy
    let quarantine = p.quarantine != nil
    let launches = quarantine && p.quarantineOnLaunch
    let learned = engine.learnedLaunchPaths
    loop.learnedLaunchPaths = learned
    let wanted = quarantine || !learned.isEmpty
    // What runs now, and what should: fires on ClientStarted, watches libxcb and the X
    // client programs, watches the learned capturers only.
    let watch = d.pump?.launchWatch
    let running = (d.pumpFiresOnStart, watch.map { !$0.path.isEmpty } ?? false, watch.map { $0.path.isEmpty } ?? false)
    let wants = (quarantine, launches, !launches && !learned.isEmpty)
    if d.pump != nil, !wanted || running != wants {
      d.stopPump()  // restarted below as the policy wants
    }
    if wanted, d.pump == nil {
      var watch: LaunchWatch? = nil
      do {
        if launches {
          watch = try LaunchWatch()
        } else if !learned.isEmpty {
          watch = try LaunchWatch(onlyPrograms: ())
        }
      } catch {
        log.error(
          launches
            ? "capture.quarantineOnLaunch: cannot watch for X client launches (\(error)); the quarantine starts at each client's connection"
            : "capture.learn: cannot watch learned capturers' starts (\(error)); they are known from their connection"
        )
      }
      d.startPump(launchWatch: watch, firesOnStart: quarantine)
    }
    d.pump?.launchWatch?.watchLearned(learned)
    if loop.fds.has(.detector) { loop.fds[.detector].fd = d.fileDescriptor }
  }

  /// The history changed: the pump's watch follows the programs it marks as capturers.
  func updateLearnedLaunches() {
    guard detector != nil, engine.learnedLaunchPaths != loop.learnedLaunchPaths else { return }
    updatePump()
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
      // Any event that a client sent is a forgery: any client can SendEvent any event to the
      // root's listeners, and a forged DestroyNotify of a secure window would make us forget
      // it. ClientMessages go on to be audited: a command one is `forged-command` (commands
      // come over the command socket, `serveCommands`).
      batch.removeAll { ev in
        guard CXCB_event_sent(ev) != 0, Int32(CXCB_event_type(ev)) != XCB_CLIENT_MESSAGE else { return false }
        dropForged(ev, connection: "main")
        return true
      }
      var shieldEvents = 0
      while let ev = next(shieldX.conn) {
        shieldEvents += 1
        if CXCB_event_sent(ev) != 0 {
          dropForged(ev, connection: "shield")
          continue
        }
        if let event = ShieldEvent(ev, shapeEvent: driver.shapeEvent), let report = driver.handle(event) {
          switch report {
          case .lost(let t, let how): shieldLost(t, how: how)
          }
        }
        free(ev)
      }
      first = false
      if batch.isEmpty && shieldEvents == 0 { return }
      if !batch.isEmpty { loop.lastMainEvents = Clock.now() }
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

  /// Drops (frees) a forged event and audits it, at most once per 5 s with the count in
  /// between (the X server does not say who sent it; RECORD would, in client-side mode).
  func dropForged(_ ev: UnsafeMutablePointer<xcb_generic_event_t>, connection: String) {
    let type = CXCB_event_type(ev)
    let window = UnsafeRawPointer(ev).loadUnaligned(fromByteOffset: 8, as: UInt32.self)
    free(ev)
    if let r = loop.forged.forgedEvent(type: type, window: window, connection: connection, now: Clock.now()) {
      log.write(r)
    }
  }

  /// While the desktop is busy and nothing is at stake, the main connection's events are
  /// read in batches: the socket is not polled until `tuning.batchInterval` after the last batch,
  /// so a burst of window traffic wakes the daemon (and makes the X server wake it) once per
  /// interval instead of once per event (see `deferNewWindows` for when nothing is at
  /// stake). Whatever the main socket holds is read before any capture record is acted on.
  /// Idle desktops are unaffected: the first event after a quiet interval is read at once.
  func batchingUntil(_ now: MonotonicTime) -> MonotonicTime? {
    guard deferNewWindows else { return nil }
    let until = loop.lastMainEvents + tuning.batchInterval
    return now < until ? until : nil
  }

  /// The RECORD stream, likewise, during a burst (`tuning.burstRecords` records, each within
  /// `tuning.batchInterval` of the one before) while nothing is at stake and quarantine is off: a
  /// busy client whose recorded requests all turn out harmless (GetImage of its own pixmaps)
  /// would otherwise wake the daemon, and make the server wake it, for every request. The
  /// price, during such a burst only: a capture that begins is seen up to `tuning.batchInterval`
  /// later, and a client that connects and exits within that time is not identified (so
  /// never allowed) (docs/security.md, Known limitations). Quarantine needs every ClientStarted at
  /// once, so it turns this off; sporadic records are always read at once.
  func recordBatchingUntil(_ now: MonotonicTime) -> MonotonicTime? {
    capture.timing.batchingUntil(now, mayBatch: deferNewWindows && engine.policy.quarantine == nil)
  }

  /// Nothing is at stake: capture detection runs, shields are only wanted while capturing,
  /// and none is up. Then a new top-level is tracked (its event selection and facts: a
  /// round trip) up to `tuning.batchInterval` after its CreateNotify, and not at all if it is
  /// destroyed by then. Everything pending is tracked at once before any capture record,
  /// command or policy change is acted on, so a decision never misses a window.
  ///
  /// Under server enforcement the module protects tagged windows inside each request,
  /// whatever the daemon does; the daemon's own part is the policy tag of windows a rule
  /// makes secure, which a new window then gets up to `tuning.batchInterval` after it
  /// appears (docs/security.md). So new windows are always tracked in batches there.
  var deferNewWindows: Bool {
    if module != nil { return detector != nil }
    return detector != nil && engine.policy.when == .capturing && !engine.shieldsActive
  }

  /// Tracks the windows whose tracking was deferred.
  func trackPending() {
    let windows = tracker.takePending()
    guard !windows.isEmpty else { return }
    track(windows, initial: false)
  }
}

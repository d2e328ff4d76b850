// Signals, policy reload, CLI commands and shutdown.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  func shutdown() -> Int32 {
    channels.systemd?.stopping()
    channels.commands?.shutdown()
    channels.accessibility?.stop()
    for w in engine.passwordViews.keys { effects.secureViews(w, [], atom: atoms.policyViews) }
    detector?.stopPump()
    clipboard?.shutdown()  // copied-text guard hook: nothing secret is left behind
    if let h = setup.history, h.dirty { h.save(engine.history, now: Clock.now()) }
    if engine.policy.failMode == .open {
      driver.removeAll()
      log.info("stopped; shields removed (failMode=open)")
    } else {
      driver.writeRegistry()
      log.info("stopped; \(driver.shields.count) shields left up for the next daemon to adopt (failMode=closed)")
    }
    effects.clearRootProperties([atoms.state, atoms.capturing])
    // a clean stop: the module stops holding new windows (a crash leaves them held: fail
    // closed until a daemon answers)
    if module != nil { effects.announceClassification(false, atom: x.atom(ProtocolAtom.classify)) }
    flushAll()
    return WatchExit.ok
  }

  // MARK: Signals

  func installSignalHandlers() {
    var p: [Int32] = [0, 0]
    _ = pipe(&p)
    _ = fcntl(p[0], F_SETFL, O_NONBLOCK)
    _ = fcntl(p[1], F_SETFL, O_NONBLOCK)
    loop.signalRead = p[0]
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
      let n = read(loop.signalRead, &buf, buf.count)
      if n <= 0 { break }
      for b in buf[..<n] {
        switch Int32(b) {
        case SIGTERM, SIGINT: loop.shuttingDown = true
        case SIGHUP: reload = true
        default: break
        }
      }
    }
    // A storm of SIGHUPs collapses into one reload.
    if reload { reloadPolicy(by: "SIGHUP") }
  }

  /// Another client took the manager selection. A second daemon never does (`watch`
  /// refuses to start while one owns it), so this is a bug or an attack: protection goes
  /// on, the taker is audited, and the selection is taken back (`status` checks who owns
  /// it). Losing the selection never ends protection.
  func managerSelectionTaken() {
    let owner = x.selectionOwner(atoms.manager)
    var fields: [(String, AuditRecord.Value)] = [("owner", .string("0x" + String(owner, radix: 16)))]
    if owner != 0 {
      let base = x.clientBase(of: owner)
      let id = engine.clients[ClientID(base)]?.identity ?? identify(base: base, sample: owner)
      fields += [
        ("client", .string(ClientID(base).description)), ("pid", id.pid.map { .int($0) } ?? "-"),
        ("exe", .string(id.exe ?? "-")),
      ]
    }
    fields.append(("action", "taken back; protection continues"))
    log.write(AuditRecord("manager-selection-taken", fields))
    effects.reclaimManager(window: managerWindow, selection: atoms.manager)
  }

  func reloadPolicy(by: String) {
    trackPending()
    do {
      let paths =
        setup.defaultPolicy
        ? PolicyLoader.defaultPaths(environment: ProcessInfo.processInfo.environment) : setup.policyPaths
      let p = try Watcher.loadPolicy(paths)
      let hadTitles = policyUsesTitle
      if !hadTitles && p.secure.contains(where: { $0.title != nil }) { readAllTitles() }
      apply(.policyReplaced(enginePolicy(p)))
      syncAccessibility()
      updateWindowWatch()
      if p.quarantine != nil {
        for (id, w) in engine.windows where w.reason.isSecure && w.reason != .provisional { driver.prepare(id) }
      }
      updatePixmapRecording()
      updatePump()
      driver.setFailMode(p.failMode)
      driver.input = p.input
      driver.label = p.label
      reloadClipboardGuard(p.clipboard)  // copied-text guard hook
      keyboard.reloaded()  // the keyboard watch may start again (+Keylog)
    } catch {
      apply(.policyRejected("\(error) (reload requested by \(by))"))
    }
  }
  /// How many entries of `fds` are the fixed descriptors (`PollSlot`); the tag watch's (or
  /// -1) and the command socket's follow.
  var fixedDescriptors: Int { PollSlot.allCases.count }

  /// Accepts and answers `shieldctl`'s commands (after `poll`, whose results for the
  /// command socket are `fds[fixedDescriptors...]`). A command from a peer the channel
  /// refuses (`CommandChannel.refusal`) is answered `refused` and audited.
  func serveCommands() {
    let first = fixedDescriptors + 1  // after the tag watch's
    guard let commands = channels.commands, loop.fds.count > first else { return }
    let listenerReady = loop.fds[first].revents != 0
    let ready = Set(loop.fds[(first + 1)...].filter { $0.revents != 0 }.map(\.fd))
    guard listenerReady || !ready.isEmpty || commands.nextDeadline.map({ Clock.now() >= $0 }) == true else { return }
    for outcome in commands.service(listenerReady: listenerReady, ready: ready, now: Clock.now()) {
      switch outcome {
      case .command(.titles, _, let reply):
        // A query: answered, not audited (list and status ask).
        reply(.titles(engine.secureWindowTitles()))
      case .command(let cmd, let peer, let reply):
        handleCommand(cmd, sender: "shieldctl (pid \(peer.pid), uid \(peer.uid))")
        // Buffered requests (a shield, the pong) reach the server before the reply.
        flushAll()
        reply(.ok)
      case .refused(let peer, let why):
        log.write(
          AuditRecord(
            "command-refused",
            [
              ("pid", .int(peer.pid)), ("uid", .int(Int(peer.uid))), ("exe", .string(peer.exe ?? "-")),
              ("reason", .string(why)), ("action", "refused"),
            ]))
      }
    }
  }

  /// A `_CAPTURE_SHIELD_COMMAND` ClientMessage: commands come only over the command socket,
  /// so this one was sent by another X client (any client can). Ignored and audited at most
  /// once per 5 s with the count in between (`ForgedAudit`).
  func dropForgedCommand(_ words: [UInt32]) {
    if let r = loop.forged.forgedCommand(words, now: Clock.now()) { log.write(r) }
  }

  func handleCommand(_ cmd: DaemonCommand, sender: String) {
    // A ping changes nothing: answered at once, not audited (status may ask often).
    if case .ping(let nonce) = cmd {
      effects.answerPing(window: managerWindow, atom: atoms.pong, nonce: nonce)
      return
    }
    trackPending()
    switch cmd {
    case .ping, .titles: break
    case .tag(let w):
      follow(w)
      effects.restoreTag(w, atom: atoms.secure)
      log.info("tag of 0x\(String(w, radix: 16)) requested by \(sender)")
    case .shield(let w):
      follow(w)
      apply(.manualOverride(w, shielded: true, by: sender))
    case .unshield(let w):
      follow(w)
      apply(.manualOverride(w, shielded: false, by: sender))
    case .pause(let d):
      apply(.pause(until: d.map { Clock.now() + $0 }, by: sender))
    case .resume: apply(.resume(by: sender))
    case .reload: reloadPolicy(by: sender)
    case .untag(let w):
      // The daemon removes the tag itself: its own removal stands (`TagGuard`). Expected
      // only while the window has a tag: its PropertyNotify then takes the expectation.
      tagGuard.untagCommand(w, hasTag: tracker.tracked[w]?.tag.asksSecure == true)
      effects.removeTag(w, atom: atoms.secure)
      log.info("untag of 0x\(String(w, radix: 16)) requested by \(sender)")
    case .clipboardClear:  // copied-text guard hook
      if let clipboard {
        clipboard.clear(by: sender)
      } else {
        log.info("clipboard clear requested by \(sender): the copied-text guard is off (clipboard.enabled)")
      }
    }
  }

  /// Records pixmap reads when `recordsPixmapReads` says so now (after a reload, or when a
  /// trusted compositor comes or goes): a new RECORD context when that changes.
  func updatePixmapRecording() {
    guard module == nil, detector != nil else { return }
    let trusted = engine.compositor.map { engine.isTrustedCompositor($0) } ?? false
    let want = Self.recordsPixmapReads(engine.policy, trustedCompositor: trusted)
    if want != capture.readsPixmaps { replaceDetector(pixmapReads: want) }
  }

  /// A new RECORD context with a different catalog (a reload changed whether pixmap reads
  /// are recorded). The new detector is recording before the old one is drained and
  /// dropped, so no request falls between the two (one in the overlap may be reported
  /// twice: a capture counted twice). On failure the old one stays, and the gap is logged.
  func replaceDetector(pixmapReads: Bool) {
    guard let old = detector else { return }
    let new: CaptureDetector
    do {
      new = try CaptureDetector(
        display: setup.display, catalog: Self.recordedCatalog(serverEnforced: false, pixmapReads: pixmapReads),
        startTimeout: .seconds(5), errors: XErrorPolicy(log: log))
    } catch {
      log.error(
        "capture detection: cannot record \(pixmapReads ? "pixmap reads too" : "fewer requests") after the reload (\(error)); restart the daemon to apply it"
      )
      return
    }
    // The daemon's own connections, as they are now: not the old set, which holds the old
    // detector's two connections (their ids go to the next clients that connect).
    new.excludedClients.formUnion(
      [ClientID(x.ownBase), ClientID(shieldX.ownBase)] + (clipboard?.ownBases.map(ClientID.init) ?? [])
        + (tagGuard.watch?.ownBases.map(ClientID.init) ?? []))
    new.watchesOwnWindows = old.watchesOwnWindows
    // What the old detector learnt stays true only if it recorded what the new one does
    // (a client seen from its start under a catalog that did not record its creations
    // must not count as one whose every CreateWindow was seen).
    if old.catalog.recordsCreations == new.catalog.recordsCreations { new.drawableKinds = old.drawableKinds }
    drainDetector()
    old.stopPump()
    detector = new
    capture.readsPixmaps = pixmapReads
    // The loop polls the new detector (or its pump, under quarantine), not the old one's
    // closed descriptor: poll() would report POLLNVAL at once, forever (a busy loop).
    updatePump()
    drainDetector()
  }
}

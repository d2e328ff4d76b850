// Engine events in, effects out: the loop's only way to change what X shows.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  // MARK: Engine

  /// Hands `event` to the engine and carries out its effects. Not re-entrant: an effect
  /// that leads to another event (a shield whose target is gone → `windowGone`) queues it,
  /// and it is handled here after the current one, in order.
  func apply(_ event: Engine.Event) {
    queue.events.append(event)
    guard !queue.applying else { return }
    queue.applying = true
    defer { queue.applying = false }
    while !queue.events.isEmpty { handleOne(queue.events.removeFirst()) }
  }

  private func handleOne(_ event: Engine.Event) {
    let effects = engine.handle(event, now: Clock.now())
    if EffectRouting.leavesEngineAsItWas(event) {
      // A decision of the engine as it stands: carry it out; nothing changed to sync.
      for e in effects { perform(e) }
      return
    }
    queue.quarantineTargets = nil
    if EffectRouting.mayChangeCompositor(event) { capture.pixmapRecordingCheckDue = true }
    // Shields going up first, and on the wire at once (see `EffectRouting.ordered`).
    let (raise, rest) = EffectRouting.ordered(effects)
    for e in raise { perform(e) }
    if !raise.isEmpty { shieldX.flush() }
    for e in rest { perform(e) }
    if let w = EffectRouting.toPrepare(after: event, engine: engine) { driver.prepare(w) }
    if EffectRouting.changesShields(effects) { frames.syncDue = true }
    syncViews(after: event)
    syncFrameShields()
    syncServerEnforcement()
    syncNotifications()
  }

  /// Carries out one effect, through `ShieldDriver` (`EffectRouting.carryOut`) and `XEffects`
  /// (the X writers).
  func perform(_ effect: Engine.Effect) {
    switch EffectRouting.carryOut(effect, driver: driver, serverEnforced: module != nil) {
    case .done: break
    case .targetGone(let w): windowGone(w)
    case .other(.audit(let r)): log.write(r)
    case .other(.publishState): loop.stateDirty = true
    case .other(.notifyCapture(let active, let windows)):
      effects.notifyCapture(
        active: active, windows: windows, capturingAtom: atoms.capturing, changedAtom: atoms.captureChanged)
    case .other(.historyChanged):
      setup.history?.changed(engine.history, now: Clock.now())
      loop.historyChanged = true
    case .other(.secureViews(let w, let rects)): effects.secureViews(w, rects, atom: atoms.policyViews)
    case .other(.shield), .other(.unshield), .other(.shieldAtOnce): break  // carried out above
    }
  }

  func publishIfDue() {
    if loop.historyChanged {
      loop.historyChanged = false
      updateLearnedLaunches()  // a program learned: its next start is watched
    }
    syncHistory()
    guard loop.stateDirty else { return }
    let now = Clock.now()
    guard now >= loop.lastPublish + tuning.publishInterval else { return }
    loop.stateDirty = false
    loop.lastPublish = now
    var snap = engine.snapshot(pid: Int(getpid()), display: x.displayName, startedAt: setup.startedAt)
    snap.clipboard = clipboard?.status()  // copied-text guard hook
    if let w = detector?.pump?.launchWatch, !w.path.isEmpty {
      snap.launchWatch = w.path
      if w.programs != nil, !w.programDirectories.isEmpty {
        snap.launchDirectories = w.programDirectories.values.sorted()
        snap.launchPrograms = w.watchedPrograms
      }
    }
    server.describe(&snap, engine: engine)
    let enc = JSONEncoder()
    enc.outputFormatting = [.sortedKeys]
    guard let data = try? enc.encode(snap) else { return }
    effects.publishState([UInt8](data), atom: atoms.state, utf8: atoms.utf8)
  }

}

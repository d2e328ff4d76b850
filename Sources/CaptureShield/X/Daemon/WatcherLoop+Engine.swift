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
    queuedEvents.append(event)
    guard !applying else { return }
    applying = true
    defer { applying = false }
    while !queuedEvents.isEmpty { handleOne(queuedEvents.removeFirst()) }
  }

  private func handleOne(_ event: Engine.Event) {
    let effects = engine.handle(event, now: Clock.now())
    quarantineTargets = nil
    switch event {
    case .compositorChanged, .clientIdentified, .clientConnected, .clientGone: capture.pixmapRecordingCheckDue = true
    default: break
    }
    // Shields going up first, and on the wire at once: the audit lines (date formatting, a
    // write) and the rest come after. A tool that grabs the server right after connecting
    // leaves quarantine a few hundred microseconds. (Taking shields down is not urgent: it
    // stays in order, after the records that explain it.)
    var raised = false
    for case .shield(let w) in effects {
      perform(.shield(w))
      raised = true
    }
    if raised { shieldX.flush() }
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
    if effects.contains(where: { if case .shield = $0 { true } else if case .unshield = $0 { true } else { false } }) {
      frames.syncDue = true
    }
    syncFrameShields()
    syncServerEnforcement()
    syncNotifications()
  }

  /// Carries out one effect, through `ShieldDriver` and `XEffects` (the X writers).
  func perform(_ effect: Engine.Effect) {
    switch effect {
    case .shield(let w):
      // Under server enforcement the module protects the window: no shield window.
      if module == nil, !driver.shield(w) { windowGone(w) }
    case .unshield(let w):
      if module == nil { driver.unshield(w) }
    case .audit(let r):
      log.write(r)
    case .publishState:
      stateDirty = true
    case .notifyCapture(let active, let windows):
      effects.notifyCapture(
        active: active, windows: windows, capturingAtom: atoms.capturing, changedAtom: atoms.captureChanged)
    }
  }

  func publishIfDue() {
    guard stateDirty else { return }
    let now = Clock.now()
    guard now >= lastPublish + tuning.publishInterval else { return }
    stateDirty = false
    lastPublish = now
    var snap = engine.snapshot(pid: Int(getpid()), display: x.displayName, startedAt: startedAt)
    snap.clipboard = clipboard?.status()  // copied-text guard hook
    if let w = detector?.pump?.launchWatch {
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

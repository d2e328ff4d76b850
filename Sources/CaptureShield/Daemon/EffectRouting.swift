// How the loop carries out the engine's effects on the shields: the part of `WatcherLoop.apply`
// and `perform` that needs no connection of the loop's own, so that a unit test runs it on
// the fake shield connection (`LoopRoutingTests`).

/// The loop's routing of engine effects to the `ShieldDriver`. Runs on the loop's thread.
enum EffectRouting {
  /// What became of an effect handed to `carryOut`.
  enum Routed: Equatable {
    /// Carried out on the driver (or, under server enforcement, nothing to do).
    case done
    /// The shield's target is gone: the loop forgets the window (`windowGone`).
    case targetGone(WindowID)
    /// Not a shield effect: the loop carries it out (`XEffects`, the audit log, the state).
    case other(Engine.Effect)
  }

  /// The effects in the order the loop carries them out: shields going up first (flushed at
  /// once: the audit lines, date formatting and a write, and the rest come after; a tool that
  /// grabs the server right after connecting leaves quarantine a few hundred microseconds),
  /// then the rest in order (taking shields down is not urgent: it stays after the records
  /// that explain it).
  static func ordered(_ effects: [Engine.Effect]) -> (raise: [Engine.Effect], rest: [Engine.Effect]) {
    var raise: [Engine.Effect] = []
    var rest: [Engine.Effect] = []
    for e in effects {
      if case .shield = e { raise.append(e) } else { rest.append(e) }
    }
    return (raise, rest)
  }

  /// Carries out `effect` on `driver` when it is a shield's (under server enforcement the
  /// module protects the window: no shield window).
  static func carryOut(_ effect: Engine.Effect, driver: ShieldDriver, serverEnforced: Bool) -> Routed {
    switch effect {
    case .shield(let w):
      if !serverEnforced, !driver.shield(w) { return .targetGone(w) }
      return .done
    case .unshield(let w):
      if !serverEnforced { driver.unshield(w) }
      return .done
    case .shieldAtOnce(let w):
      if !serverEnforced { driver.shieldAtOnce(w) }
      return .done
    default:
      return .other(effect)
    }
  }

  /// Whether the effects put up or take down shields (then frame shields are synced).
  static func changesShields(_ effects: [Engine.Effect]) -> Bool {
    effects.contains { if case .shield = $0 { true } else if case .unshield = $0 { true } else { false } }
  }

  /// The window whose shield is prepared (created unmapped) after `event`, with quarantine
  /// on: every secure window keeps one ready, so that a new client's quarantine costs one
  /// MapWindow per window and no round trip.
  static func toPrepare(after event: Engine.Event, engine: Engine) -> WindowID? {
    guard engine.policy.quarantine != nil else { return nil }
    switch event {
    case .windowAppeared(let info), .windowChanged(let info):
      if let w = engine.windows[info.id], w.reason.isSecure, w.reason != .provisional { return info.id }
      return nil
    default: return nil
    }
  }

  /// Whether the engine decides `event` as it stands, changing nothing (`topLevelCreated`,
  /// `earlyShieldsUp`): the loop carries out its effects and syncs nothing after it.
  static func leavesEngineAsItWas(_ event: Engine.Event) -> Bool {
    switch event {
    case .topLevelCreated, .earlyShieldsUp: true
    default: false
    }
  }

  /// Whether `event` can change whether a trusted compositor runs (the loop then checks
  /// whether pixmap reads must be recorded, `updatePixmapRecording`).
  static func mayChangeCompositor(_ event: Engine.Event) -> Bool {
    switch event {
    case .compositorChanged, .clientIdentified, .clientConnected, .clientGone: true
    default: false
    }
  }
}

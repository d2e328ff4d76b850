// Window decisions: deciding a window's secure reason, keeping the per-client indexes,
// and reconciling the shields the shell should have up with the decisions; the window events
// (a window seen or gone, a shield lost).

extension Engine {
  // MARK: Window decisions

  func hex(_ id: UInt32) -> String { "0x" + String(id, radix: 16) }

  func decide(_ info: WindowInfo) -> SecureReason {
    let facts = effectiveFacts(info)
    var r = policy.secureReason(facts: facts, tag: info.tag)
    if !r.isSecure, PasswordViews.wholeWindowSecure, policy.passwordFields, passwordViews[info.id] != nil {
      r = .passwordField
    }
    if !r.isSecure, let v = info.viewReason { return v }  // only rectangles of it
    if r.isSecure || info.propertiesKnown || settled.contains(info.id) { return r }
    // While shields are up, a window whose facts are not known yet (created, not mapped)
    // is shielded until they are: it cannot appear unshielded in a live capture.
    if shieldsActive { return .provisional }
    if let c = info.client, !(secureByClient[c]?.subtracting([info.id]).isEmpty ?? true) {
      return .provisional
    }
    if info.client != nil || facts.exe != nil, policy.clientMayOwnSecureWindows(facts) {
      return .provisional
    }
    return .none
  }

  /// Windows that reached `provisionalLimit` without being mapped: their facts count as
  /// known from now on (`settled`); returns those whose decision changed.
  mutating func settleProvisional() -> [WindowID] {
    guard let first = unsettled.earliest, now >= first else { return [] }
    var changed: [WindowID] = []
    for id in unsettled.removeDue(at: now) {
      settled.insert(id)
      guard let w = windows[id] else { continue }
      let r = decide(w.info)
      if r != w.reason {
        setWindow(WindowState(info: w.info, reason: r))
        changed.append(id)
      }
    }
    return changed
  }

  mutating func setWindow(_ w: WindowState) {
    if let old = windows[w.info.id], let c = old.info.client { secureByClient[c]?.remove(w.info.id) }
    windows[w.info.id] = w
    guard let c = w.info.client else { return }
    windowsByClient[c, default: []].insert(w.info.id)
    // Provisional windows do not count: they must not keep each other provisional.
    if w.reason.isSecure && w.reason != .provisional { secureByClient[c, default: []].insert(w.info.id) }
  }

  /// Re-decides a client's windows (its identity or secure set changed); returns the ids
  /// whose decision changed.
  mutating func redecide(client c: ClientID, onlyUnknown: Bool, except: WindowID?) -> [WindowID] {
    var changed: [WindowID] = []
    for id in (windowsByClient[c] ?? []).sorted() where id != except {
      guard let w = windows[id], !onlyUnknown || !w.info.propertiesKnown else { continue }
      let r = decide(w.info)
      if r != w.reason {
        setWindow(WindowState(info: w.info, reason: r))
        changed.append(id)
      }
    }
    return changed
  }

  func baseline(_ w: WindowState) -> Bool { w.reason.isSecure && shieldsActive && !w.info.inputOnly }

  mutating func reconcile(_ ids: [WindowID], fx: inout [Effect], stateChanged: inout Bool) {
    for id in ids {
      guard let w = windows[id] else { continue }
      let base = baseline(w)
      var want = base
      if let o = overrides[id] {
        if o.baseline != base {
          overrides[id] = nil
        } else {
          want = o.forced
        }
      }
      if isPaused || w.info.inputOnly { want = false }
      let have = shielded.contains(id)
      if want && !have {
        shielded.insert(id)
        stateChanged = true
        fx.append(.shield(id))
        fx.append(
          .audit(
            AuditRecord(
              "shield",
              [
                ("window", .string(hex(id))),
                ("reason", .string(overrides[id] != nil ? "manual" : w.reason.description)),
              ] + sessionFields())))
      } else if !want && have {
        shielded.remove(id)
        stateChanged = true
        fx.append(.unshield(id))
        fx.append(.audit(AuditRecord("unshield", [("window", .string(hex(id))), ("reason", .string(unshieldWhy(w)))])))
      }
    }
  }

  func unshieldWhy(_ w: WindowState) -> String {
    if isPaused { return "paused" }
    if overrides[w.info.id] != nil { return "manual" }
    if !w.reason.isSecure { return "not secure" }
    return "no capture session"
  }
}

extension Engine {
  // MARK: Events

  /// `Event.windowAppeared`, `Event.windowChanged`: the window decided again from its new
  /// info; a client's first secure window makes its other unknown windows provisional.
  mutating func windowSeen(_ info: WindowInfo, _ step: inout Step) {
    let old = windows[info.id]
    if info.propertiesKnown {
      unsettled[info.id] = nil
    } else if old == nil, !settled.contains(info.id) {
      unsettled[info.id] = now + Self.provisionalLimit
    }
    let reason = decide(info)
    setWindow(WindowState(info: info, reason: reason))
    let decisionChanged = old.map { $0.reason != reason } ?? reason.isSecure
    if reason.isSecure, let old, old.info.facts != info.facts || old.info.tag != info.tag {
      step.stateChanged = true  // its published row changed
    }
    if decisionChanged {
      step.stateChanged = true
      do {
        step.fx.append(
          .audit(
            AuditRecord(
              "secure-decision",
              [
                ("window", .string(hex(info.id))), ("secure", .bool(reason.isSecure)),
                ("reason", .string(reason.description)),
              ] + factsFields(effectiveFacts(info)))))
      }
    }
    step.touched.append(info.id)
    // A client's first secure window makes its other unknown windows provisional.
    if decisionChanged, reason.isSecure, reason != .provisional, let c = info.client {
      step.touched += redecide(client: c, onlyUnknown: true, except: info.id)
    }
  }

  /// `Event.windowGone`: the window and everything kept for it forgotten.
  mutating func windowGone(_ id: WindowID, _ step: inout Step) {
    if let w = windows.removeValue(forKey: id) {
      if let c = w.info.client {
        secureByClient[c]?.remove(id)
        windowsByClient[c]?.remove(id)
        if windowsByClient[c]?.isEmpty == true { windowsByClient[c] = nil }
      }
      if w.reason.isSecure { step.stateChanged = true }
    }
    overrides[id] = nil
    passwordViews[id] = nil
    passwordFocus.remove(id)
    unsettled[id] = nil
    settled.remove(id)
    if shielded.remove(id) != nil { step.stateChanged = true }
  }

  /// `Event.shieldLost`: a shield taken down by another client is audited and put up again.
  mutating func shieldLost(_ id: WindowID, how: String, _ step: inout Step) {
    if shielded.remove(id) != nil {
      step.fx.append(
        .audit(
          AuditRecord(
            "shield-tampered", [("window", .string(hex(id))), ("how", .string(how)), ("action", "re-created")])))
      step.touched.append(id)
    }
  }

  /// `Event.frameShieldLost`: a frame's shield tampered with (repaired by the shell already).
  func frameShieldLost(frame: WindowID, window id: WindowID, how: String, _ step: inout Step) {
    // Audited like a window's shield while the window in the frame is shielded; a frame
    // the engine shields itself is a window of its own (`shieldLost`).
    if shielded.contains(id), !shielded.contains(frame) {
      step.fx.append(
        .audit(
          AuditRecord(
            "shield-tampered",
            [
              ("window", .string(hex(frame))), ("how", .string(how)), ("action", "re-created"),
              ("frame-of", .string(hex(id))),
            ])))
    }
  }
}

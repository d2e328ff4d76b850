// What the user and the policy ask: pause, resume, a manual override, a new policy or a
// rejected one.

extension Engine {
  // MARK: Events

  /// `Event.pause`: shielding suspended until `until` (nil: until `resume`).
  mutating func pause(until: MonotonicTime?, by: String, _ step: inout Step) {
    pausedUntil = .some(until)
    step.stateChanged = true
    step.all = true
    step.fx.append(
      .audit(
        AuditRecord(
          "pause",
          [
            ("by", .string(by)),
            ("seconds", until.map { .double($0.seconds(since: now)) } ?? .string("until resume")),
          ])))
  }

  /// `Event.resume`: shielding again.
  mutating func resume(by: String, _ step: inout Step) {
    if pausedUntil != nil {
      pausedUntil = nil
      step.stateChanged = true
      step.all = true
      step.fx.append(.audit(AuditRecord("resume", [("by", .string(by))])))
    }
  }

  /// `Event.policyReplaced`: the new policy in force; launches, clients and windows decided
  /// again by it.
  mutating func policyReplaced(_ p: Policy, _ step: inout Step) {
    policy = p
    rehold()
    if p.quarantine == nil || !p.quarantineOnLaunch {
      let (kept, ended) = (launches.filter { isLearnedLaunch($0.program) }, launches)
      for l in ended where !kept.contains(l) { endLaunch(l, why: "quarantine off", client: nil, fx: &step.fx) }
      launches = kept
    }
    step.stateChanged = true
    step.all = true
    step.fx.append(
      .audit(
        AuditRecord(
          "policy-loaded",
          [
            ("files", .int(p.sources.count)), ("rules", .int(p.secure.count)),
            ("when", .string(p.when.rawValue)), ("failMode", .string(p.failMode.rawValue)),
          ])))
    for id in clients.keys.sorted() { reclassify(id, fx: &step.fx) }
    if !p.passwordFields { step.touched += passwordFieldsShown([], frames: [], fx: &step.fx) }
    for (id, w) in windows {
      let r = decide(w.info)
      if r != w.reason { setWindow(WindowState(info: w.info, reason: r)) }
      _ = id
    }
  }

  /// `Event.policyRejected`: audited; the last good policy stays.
  func policyRejected(_ why: String, _ step: inout Step) {
    step.fx.append(.audit(AuditRecord("policy-rejected", [("error", .string(why)), ("kept", "last good policy")])))
  }

  /// `Event.manualOverride`: the window's shield forced until its decision changes.
  mutating func manualOverride(_ id: WindowID, shielded on: Bool, by: String, _ step: inout Step) {
    guard let w = windows[id] else {
      step.fx.append(
        .audit(AuditRecord("override-ignored", [("window", .string(hex(id))), ("why", "window not tracked")])))
      return
    }
    overrides[id] = (forced: on, baseline: baseline(w))
    step.stateChanged = true
    step.touched.append(id)
    step.fx.append(
      .audit(
        AuditRecord(on ? "manual-shield" : "manual-unshield", [("window", .string(hex(id))), ("by", .string(by))])))
  }
}

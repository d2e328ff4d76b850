// Which recorded requests reach the engine as capture requests: the filter the shell applies
// to RECORD's requests before `Event.captureRequest` (the facts it needs come from the shell);
// and the capture events themselves: a request, a prelude, a read the module censored.

extension Engine {
  /// Whether a recorded request of `client` is a capture request the shell hands on
  /// (`Event.captureRequest`). Not: a request that matters only on a secure target
  /// (`ResolvedCaptureCatalog.secureTargetsOnlyKinds`: reparenting) made by the window
  /// manager, which reparents the windows it manages; a request that can only read a
  /// pixmap (a tile, a stipple, ...; recorded while the policy allows some client or a
  /// trusted compositor runs) whose pixmap is not such a client's (`pixmapOwner`, the
  /// target's resource base): anyone else's pixmap holds only what its owner read (itself
  /// a recorded capture) or drew. `isWindowManager` (a round trip) is asked only for the
  /// requests it decides.
  public func countsAsCapture(
    _ req: CaptureRequest, catalog: ResolvedCaptureCatalog, pixmapOwner: ClientID?, isWindowManager: () -> Bool
  ) -> Bool {
    if catalog.secureTargetsOnlyKinds.contains(req.kind), isWindowManager() { return false }
    if CaptureCatalog.standard.readsOnlyPixmaps(kind: req.kind), let owner = pixmapOwner {
      return clients[owner]?.clientClass == .allowed || isTrustedCompositor(owner)
    }
    return true
  }
}

extension Engine {
  // MARK: Events

  /// `Event.captureRequest`: a capture request starts or extends its client's request session.
  mutating func captureRequest(_ id: ClientID, _ req: CaptureRequest, _ step: inout Step) {
    // Its client already went (the record was handled after its end): the session
    // starts detached, for the linger.
    let afterItsEnd = clients[id] == nil && departed.contains(id)
    defer { if afterItsEnd { endSessions(ofGone: id, fx: &step.fx) } }
    if clients[id] == nil {
      clients[id] = ClientState(
        id: id, identity: nil, clientClass: .unidentified, connectedAt: now, firstCaptureAt: nil,
        captureRequests: 0)
    }
    clients[id]!.captureRequests += 1
    let c = clients[id]!
    if c.firstCaptureAt == nil {
      clients[id]!.firstCaptureAt = now
      step.stateChanged = true
      step.fx.append(
        .audit(
          AuditRecord(
            "capture-request",
            [
              ("client", .string(id.description)), ("request", .string(req.kind)),
              ("target", .string(req.target.map(hex) ?? "-")),
              ("class", .string(c.clientClass.rawValue)),
            ] + identityFields(c.identity))))
    }
    if req.bypassesShield {
      step.fx.append(
        .audit(
          AuditRecord(
            "shield-bypass-attempt",
            [
              ("client", .string(id.description)), ("request", .string(req.kind)),
              ("target", .string(req.target.map(hex) ?? "-")),
            ] + identityFields(c.identity))))
    }
    if (c.clientClass == .allowed || isTrustedCompositor(id)) && !req.bypassesShield { return }
    captureActivity(id, kind: req.kind, fx: &step.fx)
    if c.firstCaptureAt == nil, c.clientClass != .allowed { learnCapture(c.identity, fx: &step.fx) }
    let hold = requestHold(after: now)
    if let sid = sessions.first(where: {
      $0.value.client == id && $0.value.kind == .request && !$0.value.detached && $0.value.isLive(at: now)
    })?.key {
      sessions[sid]!.requests += 1
      sessions[sid]!.lastRequestAt = now
      if req.bypassesShield { sessions[sid]!.bypass = true }
      sessions[sid]!.pinned = hold.pinned
      if sessions[sid]!.expires.map({ $0 < hold.expires }) ?? true { sessions[sid]!.expires = hold.expires }
    } else {
      startSession(
        client: id, kind: .request, pinned: hold.pinned, expires: hold.expires, firstRequest: req.kind, fx: &step.fx)
      if req.bypassesShield, let sid = sessions.keys.max() { sessions[sid]!.bypass = true }
      step.stateChanged = true
    }
  }

  /// `Event.capturePrelude`: wakes the client's idle sessions (`capture.idle`).
  mutating func capturePrelude(_ id: ClientID, _ req: CaptureRequest, _ step: inout Step) {
    captureActivity(id, kind: req.kind, fx: &step.fx)
  }

  /// `Event.captureCensored`: the module censored a read of the client's; the engine counts it.
  mutating func captureCensored(_ id: ClientID, _ req: CaptureRequest, _ identity: ClientIdentity?, _ step: inout Step)
  {
    if censored(id, req, identity, fx: &step.fx) { step.stateChanged = true }
  }
}

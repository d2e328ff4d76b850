// Client events: a client connecting, identified late, gone, and the compositor changing.

extension Engine {
  // MARK: Events

  /// `Event.clientConnected`: the client classified; a known one starts its session, an
  /// ordinary one its quarantine.
  mutating func clientConnected(_ id: ClientID, _ identity: ClientIdentity?, _ step: inout Step) {
    step.stateChanged = true
    departed.remove(id)
    let cls = classify(identity)
    let quiet = isLearnedQuiet(identity)
    learnStart(identity, fx: &step.fx)
    clients[id] = ClientState(
      id: id, identity: identity, clientClass: cls, connectedAt: now, firstCaptureAt: nil,
      captureRequests: 0)
    auditAllowRefusal(id, identity, fx: &step.fx)
    step.touched += redecide(client: id, onlyUnknown: false, except: nil)
    matchLaunch(id, identity, fx: &step.fx)
    if cls == .known {
      startKnownSession(id, fx: &step.fx)
    } else if cls != .allowed, !isOwnClient(identity), !quiet, let q = policy.quarantine {
      startSession(client: id, kind: .quarantine, pinned: false, expires: now + q, firstRequest: nil, fx: &step.fx)
    }
  }

  /// `Event.clientIdentified`: the identity that came late; the client classified again.
  mutating func clientIdentified(_ id: ClientID, _ identity: ClientIdentity, _ step: inout Step) {
    step.stateChanged = true
    let quiet = isLearnedQuiet(identity)  // by the starts before this one
    if clients[id] == nil {
      clients[id] = ClientState(
        id: id, identity: nil, clientClass: .unidentified, connectedAt: now, firstCaptureAt: nil,
        captureRequests: 0)
    }
    if clients[id]!.identity?.programFile == nil {
      learnStart(identity, fx: &step.fx)
      if clients[id]!.captureRequests > 0, policy.classify(identity) != .allowed {
        learnCapture(identity, fx: &step.fx)
      }
    }
    clients[id]!.identity = identity
    matchLaunch(id, identity, fx: &step.fx)
    auditAllowRefusal(id, identity, fx: &step.fx)
    reclassify(id, fx: &step.fx)
    if quiet { endQuarantine(of: id, fx: &step.fx) }
    step.touched += redecide(client: id, onlyUnknown: false, except: nil)
  }

  /// `Event.clientGone`: its sessions end (or linger).
  mutating func clientGone(_ id: ClientID, _ step: inout Step) {
    step.stateChanged = clients[id] != nil
    departed.insert(id)
    endSessions(ofGone: id, fx: &step.fx)
    if compositor == id { compositor = nil }
  }

  /// `Event.compositorChanged`: the old compositor's session lingers, the new one's starts
  /// unless it is allowed or trusted.
  mutating func compositorChanged(_ id: ClientID?, ownsSelection: Bool, _ step: inout Step) {
    guard id != compositor || ownsSelection != compositorOwnsSelection else { return }
    step.stateChanged = true
    if let old = compositor {
      for (sid, s) in sessions where s.client == old && s.kind == .compositor {
        sessions[sid]!.pinned = false
        sessions[sid]!.expires = now + policy.linger
      }
    }
    compositor = id
    compositorOwnsSelection = id != nil && ownsSelection
    var fields: [(String, AuditRecord.Value)] = [("client", .string(id?.description ?? "none"))]
    fields += identityFields(id.flatMap { clients[$0]?.identity })
    if let id { fields.append(("trust", .string(compositorTrust(id).description))) }
    step.fx.append(.audit(AuditRecord("compositor", fields)))
    if let id {
      let cls = clients[id]?.clientClass ?? .unidentified
      if cls != .allowed && !isTrustedCompositor(id) {
        startSession(client: id, kind: .compositor, pinned: true, firstRequest: nil, fx: &step.fx)
      }
      endTrustedCompositorSiblingSessions(fx: &step.fx)
    }
    step.all = true
  }
}

// Capture sessions: their kinds and state, starting and ending them, deadlines, and
// what a client's (re)classification does to its sessions.

extension Engine {
  /// Why a session is live.
  public enum SessionKind: String, Sendable, Hashable, Codable {
    /// The client sent a capture request.
    case request
    /// The client matches `capture.known`.
    case known
    /// The client is the (non-allowed) compositor.
    case compositor
    /// `capture.quarantine`: a new, not-yet-allowed client.
    case quarantine
  }

  /// A capture session: shields are up while any session is live.
  public struct Session: Sendable, Hashable {
    public var id: Int
    public var client: ClientID
    public var identity: ClientIdentity?
    public var kind: SessionKind
    public var startedAt: MonotonicTime
    /// Live while pinned (known capturer connected, compositor, a request session under
    /// `capture.hold: "connected"` while its client is connected) or before `expires`.
    public var pinned: Bool
    public var expires: MonotonicTime?
    public var firstRequest: String?
    public var requests: Int
    /// When its client's last capture request came (request sessions).
    public var lastRequestAt: MonotonicTime?
    /// Started by a request that defeats the child shield: never ended by `allow`.
    public var bypass: Bool = false
    /// Its client is gone; the session only lingers. A new client on the same
    /// (reused) resource base never touches it.
    public var detached: Bool = false
    /// A known session of a client known by learning (`Engine.learnedKnownHold`): it ends
    /// with its client (plus `capture.linger`), not `learnedKnownHold` after the connection.
    public var learned: Bool = false
    /// `capture.idle`: its client made no capture request for that long, so it shields
    /// nothing until the client's next sign of capture (`Engine+Idle.swift`).
    public var idle: Bool = false
    /// The client's last sign of capture (request, prelude) or the session's start: when
    /// `capture.idle` counts from.
    public var activeAt: MonotonicTime? = nil

    public func isLive(at now: MonotonicTime) -> Bool {
      !idle && (pinned || (expires.map { now < $0 } ?? false))
    }
  }

  // MARK: Sessions

  mutating func startSession(
    client: ClientID, kind: SessionKind, pinned: Bool, expires: MonotonicTime? = nil,
    firstRequest: String?, fx: inout [Effect]
  ) {
    if sessions.values.contains(where: {
      $0.client == client && $0.kind == kind && !$0.detached && ($0.isLive(at: now) || $0.idle)
    }) {
      return
    }
    let id = nextSessionID
    nextSessionID += 1
    let identity = clients[client]?.identity
    sessions[id] = Session(
      id: id, client: client, identity: identity, kind: kind, startedAt: now, pinned: pinned,
      expires: expires, firstRequest: firstRequest, requests: firstRequest == nil ? 0 : 1,
      lastRequestAt: firstRequest == nil ? nil : now, activeAt: now)
    var f: [(String, AuditRecord.Value)] = [
      ("session", .int(id)), ("kind", .string(kind.rawValue)), ("client", .string(client.description)),
    ]
    if let firstRequest { f.append(("request", .string(firstRequest))) }
    fx.append(.audit(AuditRecord("session-start", f + identityFields(identity))))
  }

  /// A client went: forgotten; its quarantine ends, its other sessions are detached and
  /// end after the linger (or their hold, if later).
  mutating func endSessions(ofGone id: ClientID, fx: inout [Effect]) {
    clients[id] = nil
    let lingerEnd = now + policy.linger
    for (sid, s) in sessions where s.client == id && !s.detached {
      if s.kind == .quarantine {
        endSession(sid, fx: &fx, why: "client exited")
        continue
      }
      if s.idle {  // it shielded nothing: its client's exit does not raise the shields again
        endSession(sid, fx: &fx, why: "client exited while idle")
        continue
      }
      sessions[sid]!.pinned = false
      sessions[sid]!.detached = true
      // A learned one-shot tool's session ends when the tool does, plus the linger.
      if s.learned, let e = s.expires {
        sessions[sid]!.expires = min(e, lingerEnd)
      } else if s.expires.map({ $0 < lingerEnd }) ?? true {
        sessions[sid]!.expires = lingerEnd
      }
    }
  }

  mutating func endSession(_ sid: Int, fx: inout [Effect], why: String) {
    guard let s = sessions.removeValue(forKey: sid) else { return }
    fx.append(
      .audit(
        AuditRecord(
          "session-end",
          [
            ("session", .int(s.id)), ("kind", .string(s.kind.rawValue)), ("client", .string(s.client.description)),
            ("why", .string(why)), ("seconds", .double(now.seconds(since: s.startedAt))),
            ("requests", .int(s.requests)),
          ] + identityFields(s.identity))))
  }

  /// How a connected client's request session is held after a capture request at `last`
  /// (`capture.hold`): pinned while the client stays connected, or until `hold` (at least
  /// `linger`) after that request. Its client's exit unpins it (`clientGone`: `linger` more).
  func requestHold(after last: MonotonicTime) -> (pinned: Bool, expires: MonotonicTime) {
    switch policy.hold {
    case .connected: return (true, last + policy.linger)
    case .duration(let d): return (false, last + max(d, policy.linger))
    }
  }

  /// Re-applies `capture.hold` to the connected clients' request sessions (a new policy).
  mutating func rehold() {
    for (sid, s) in sessions where s.kind == .request && !s.detached {
      let hold = requestHold(after: s.lastRequestAt ?? s.startedAt)
      sessions[sid]!.pinned = hold.pinned
      sessions[sid]!.expires = hold.expires
    }
  }

  mutating func expireDeadlines(fx: inout [Effect], all: inout Bool, stateChanged: inout Bool) {
    if idleSessions(fx: &fx) {
      all = true
      stateChanged = true
    }
    for (sid, s) in sessions.sorted(by: { $0.key < $1.key }) where !s.isLive(at: now) && !s.idle {
      let why: String
      switch s.kind {
      case .quarantine: why = "quarantine over"
      case .request where !s.detached:
        if case .duration(let d) = policy.hold, d > policy.linger {
          why = "hold elapsed"
        } else {
          why = "linger elapsed"
        }
      default: why = "linger elapsed"
      }
      endSession(sid, fx: &fx, why: why)
      all = true
      stateChanged = true
    }
    let expired = launches.filter { now >= $0.until }
    if !expired.isEmpty {
      for l in expired { endLaunch(l, why: "no client connected", client: nil, fx: &fx) }
      launches.removeAll { now >= $0.until }
      all = true
    }
    if case .some(.some(let until)) = pausedUntil, now >= until {
      pausedUntil = nil
      all = true
      stateChanged = true
      fx.append(.audit(AuditRecord("resume", [("by", "pause expired")])))
    }
  }

  mutating func reclassify(_ id: ClientID, fx: inout [Effect]) {
    guard var c = clients[id] else { return }
    let cls = classify(c.identity)
    c.clientClass = cls
    clients[id] = c
    for (sid, s) in sessions.sorted(by: { $0.key < $1.key }) where s.client == id && !s.detached {
      sessions[sid]!.identity = c.identity
      if cls == .allowed && !s.bypass {
        endSession(sid, fx: &fx, why: "client is allowed")
      } else if isTrustedCompositor(id) && !s.bypass {
        endSession(sid, fx: &fx, why: "trusted compositor")
      } else if s.kind == .known && cls != .known {
        endSession(sid, fx: &fx, why: "client no longer known")
      } else if s.kind == .quarantine && isOwnClient(c.identity) {
        endSession(sid, fx: &fx, why: "the daemon's own program")
      } else if s.idle && !idles(s) {
        wake(sid, why: "capture.idle no longer applies", fx: &fx)
      }
    }
    if cls == .known { startKnownSession(id, fx: &fx) }
    if compositor == id && cls != .allowed && !isTrustedCompositor(id) {
      startSession(client: id, kind: .compositor, pinned: true, firstRequest: nil, fx: &fx)
    }
    if compositor == id { endTrustedCompositorSiblingSessions(fx: &fx) }
  }

  /// Whether a client is the daemon's own program (`shieldctl`) running only its own code:
  /// it starts no quarantine (its capture requests still count).
  func isOwnClient(_ identity: ClientIdentity?) -> Bool {
    guard let identity, identity.isKnown else { return false }
    return Engine.isOwnProgram(
      exe: identity.exe, injection: identity.injection ?? identity.loaderPath, ownProgram: ownProgram)
  }

  /// How `capture.compositors` judges `id` as the compositor (whether or not it is now).
  public func compositorTrust(_ id: ClientID) -> CompositorTrust {
    guard compositor == id, compositorOwnsSelection else { return .notSelectionOwner }
    return policy.compositorTrust(clients[id]?.identity)
  }

  /// Whether `id` is the compositor, owns `_NET_WM_CM_Sn` and `capture.compositors` trusts
  /// it, or is another connection of that same process: it reads windows without starting
  /// a capture session, like an allowed client. (mutter talks to X over two connections:
  /// only one owns the selection, the other reads pixmaps with GLX and MIT-SHM.)
  public func isTrustedCompositor(_ id: ClientID) -> Bool {
    if compositorTrust(id).isTrusted { return true }
    guard let c = compositor, c != id else { return false }
    return isSameProcess(id, c) && compositorTrust(c).isTrusted
  }

  /// Whether two clients are connections of one process: the same pid (the compositor's
  /// process is alive while its connection is, so no other process has its pid) and the
  /// same program, both identified.
  func isSameProcess(_ a: ClientID, _ b: ClientID) -> Bool {
    guard let x = clients[a]?.identity, x.isKnown, let y = clients[b]?.identity, y.isKnown, let pid = x.pid,
      pid == y.pid, let exe = x.exe, exe == y.exe
    else { return false }
    return true
  }

  /// The compositor became trusted (or its identity arrived): the sessions of the other
  /// connections of its process end (a connection that read before the selection was
  /// taken, mutter's second one).
  mutating func endTrustedCompositorSiblingSessions(fx: inout [Effect]) {
    guard let c = compositor, compositorTrust(c).isTrusted else { return }
    for (sid, s) in sessions.sorted(by: { $0.key < $1.key })
    where s.client != c && !s.bypass && !s.detached && s.kind != .quarantine && isSameProcess(s.client, c) {
      endSession(sid, fx: &fx, why: "trusted compositor's own process")
    }
  }
}

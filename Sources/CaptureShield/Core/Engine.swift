/// The decision engine: a pure state machine. Events in, effects out; no I/O and no
/// clock of its own (time comes with every event). The X shell feeds it plain values
/// and carries out the effects; tests drive it directly.
///
/// It decides which windows are secure and why, which clients are capturing, when
/// capture sessions start and end (`capture.linger`), and which windows to shield.
public struct Engine: Sendable {
  // MARK: Events and effects

  /// Something the shell observed (or the user asked for).
  public enum Event: Sendable, Hashable {
    /// A window to track appeared (or is seen for the first time).
    case windowAppeared(WindowInfo)
    /// Its facts, tag or mapped state changed; carries the whole new info.
    case windowChanged(WindowInfo)
    case windowGone(WindowID)
    /// A client connected (RECORD ClientStarted, or found at start-up). Identity when
    /// the lookup succeeded at once.
    case clientConnected(ClientID, ClientIdentity?)
    /// A client's identity arrived later (a lookup stalled by a server grab, say).
    case clientIdentified(ClientID, ClientIdentity)
    /// A process started an X client program (`program`, its file name) or loaded the X
    /// client library (`program` nil): a client is probably about to connect
    /// (`capture.quarantineOnLaunch`). No identity: the process is not known yet.
    case clientLaunching(program: String?)
    /// A request that reads pixels the client does not own.
    case captureRequest(ClientID, CaptureRequest)
    case clientGone(ClientID)
    /// The compositor (owner of `_NET_WM_CM_Sn`, or a client found redirecting).
    case compositorChanged(ClientID?)
    /// Time passed (deadlines: linger, quarantine, pause).
    case tick
    /// Suspend shielding until the given time (nil: until `resume`).
    case pause(until: MonotonicTime?, by: String)
    case resume(by: String)
    /// A new policy was loaded and validated.
    case policyReplaced(Policy)
    /// A policy reload failed; the last good policy stays in force.
    case policyRejected(String)
    /// `shieldctl shield/unshield`: force a window's shield until its decision changes.
    case manualOverride(WindowID, shielded: Bool, by: String)
    /// Another client unmapped or destroyed a shield we had up.
    case shieldLost(WindowID, how: String)
  }

  /// What the shell must do. Exactly these, in order.
  public enum Effect: Sendable, Hashable {
    case shield(WindowID)
    case unshield(WindowID)
    case audit(AuditRecord)
    /// Published state changed: rewrite `_CAPTURE_SHIELD_STATE` from `snapshot()`.
    case publishState
    /// Capture started or stopped: tell apps (root property + ClientMessage to these
    /// secure windows).
    case notifyCapture(active: Bool, windows: [WindowID])
  }

  // MARK: State

  /// What the engine knows of a window.
  public struct WindowState: Sendable, Hashable {
    public var info: WindowInfo
    public var reason: SecureReason
  }

  /// What the engine knows of a client.
  public struct ClientState: Sendable, Hashable {
    public var id: ClientID
    public var identity: ClientIdentity?
    public var clientClass: ClientClass
    public var connectedAt: MonotonicTime
    public var firstCaptureAt: MonotonicTime?
    public var captureRequests: Int
  }

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
    /// Live while pinned (known capturer connected, compositor) or before `expires`.
    public var pinned: Bool
    public var expires: MonotonicTime?
    public var firstRequest: String?
    public var requests: Int
    /// Started by a request that defeats the child shield: never ended by `allow`.
    public var bypass: Bool = false
    /// Its client is gone; the session only lingers. A new client on the same
    /// (reused) resource base never touches it.
    public var detached: Bool = false

    public func isLive(at now: MonotonicTime) -> Bool {
      pinned || (expires.map { now < $0 } ?? false)
    }
  }

  public private(set) var policy: Policy
  public private(set) var now = MonotonicTime(nanoseconds: 0)
  public private(set) var windows: [WindowID: WindowState] = [:]
  public private(set) var clients: [ClientID: ClientState] = [:]
  public private(set) var sessions: [Int: Session] = [:]
  /// Windows the engine has told the shell to shield (and not yet to unshield).
  public private(set) var shielded: Set<WindowID> = []
  public private(set) var compositor: ClientID?
  public private(set) var pausedUntil: MonotonicTime?? = nil
  /// A process loaded the X client library (`clientLaunching`) and no client of a process
  /// that young has been identified since: the shields stay up as for a quarantine.
  public struct Launch: Sendable, Hashable {
    public var seen: MonotonicTime
    public var until: MonotonicTime
    /// The program started (its file name), when the launch was seen as a program start.
    public var program: String? = nil
  }
  /// Launches not matched by a client yet, oldest first. Each keeps the shields up until a
  /// client whose process is young enough to have caused it is identified (that client's
  /// own quarantine takes over) or until the quarantine duration ends.
  public private(set) var launches: [Launch] = []
  /// How long after its process started a client can still be the launch's client: a
  /// client whose process is older (a long-running app opening another connection) never
  /// matches a launch, so it cannot end the launch of a tool still loading.
  public static let launchMatchAge = 2.0
  /// Young processes that already had a client identified (PID → when): a process loads
  /// libxcb once, so its later connections (a poller's) never match another launch.
  var launchPIDs: [Int: MonotonicTime] = [:]
  /// Manual overrides: forced state and the decision they were made against.
  var overrides: [WindowID: (forced: Bool, baseline: Bool)] = [:]
  var secureByClient: [ClientID: Set<WindowID>] = [:]
  var windowsByClient: [ClientID: Set<WindowID>] = [:]
  var nextSessionID = 1
  var lastCapturing = false
  var lastActive = false

  public init(policy: Policy) {
    self.policy = policy
  }

  // MARK: Derived state

  /// Whether shielding is suspended.
  public var isPaused: Bool {
    guard let p = pausedUntil else { return false }
    guard let until = p else { return true }
    return now < until
  }

  /// Whether some non-quarantine session is live (someone is capturing).
  public var isCapturing: Bool {
    sessions.values.contains { $0.kind != .quarantine && $0.isLive(at: now) }
  }

  /// Whether secure windows should be shielded now.
  public var shieldsActive: Bool {
    if isPaused { return false }
    if policy.when == .always { return true }
    return sessions.values.contains { $0.isLive(at: now) } || launches.contains { now < $0.until }
  }

  /// The earliest time at which a `.tick` could change something, if any.
  public var nextDeadline: MonotonicTime? {
    var d: MonotonicTime? = nil
    for s in sessions.values where !s.pinned {
      if let e = s.expires, d == nil || e < d! { d = e }
    }
    if case .some(.some(let until)) = pausedUntil, d == nil || until < d! { d = until }
    if let l = launches.map(\.until).min(), d == nil || l < d! { d = l }
    return d
  }

  /// The windows that a new client's connection (`clientConnected` without an identity yet)
  /// would shield right now under `capture.quarantine`: every secure window, while no
  /// shield is up, capture detection decides (`when: capturing`) and nothing is paused;
  /// otherwise none. The shell puts these up the moment it reads a ClientStarted, before
  /// the engine is even told (see `RecordPump`); the engine's own answer to the event then
  /// shields the same windows, plus windows whose facts are not known yet (provisional
  /// while shields are up).
  public var quarantineTargets: [WindowID] {
    guard policy.quarantine != nil, policy.when == .capturing, !isPaused, !shieldsActive else { return [] }
    return windows.values.filter { $0.reason.isSecure }.map(\.info.id).sorted()
  }

  /// Whether RECORD records should be fetched promptly (cheap round trips): while a
  /// session is live or a client is not yet identified. Idle otherwise.
  public var wantsPromptRecords: Bool {
    !sessions.isEmpty || !launches.isEmpty || clients.values.contains { $0.clientClass == .unidentified }
  }

  /// The decision for a window, with merged client facts.
  public func effectiveFacts(_ info: WindowInfo) -> Facts {
    var f = info.facts
    if let c = info.client, let id = clients[c]?.identity {
      if f.exe == nil { f.exe = id.exe }
      if f.comm == nil { f.comm = id.comm }
      if f.pid == nil { f.pid = id.pid }
      if f.uid == nil { f.uid = id.uid }
    }
    return f
  }

  /// Explains a tracked window's decision.
  public func explain(window: WindowID) -> WindowExplanation? {
    guard let w = windows[window] else { return nil }
    var e = policy.explainWindow(facts: effectiveFacts(w.info), tag: w.info.tag)
    e.reason = w.reason
    return e
  }

  // MARK: Handling events

  /// Applies `event` at time `now` and returns what the shell must do.
  public mutating func handle(_ event: Event, now: MonotonicTime) -> [Effect] {
    if now > self.now { self.now = now }
    let now = self.now  // deadlines never go backwards, whatever the event's stamp
    var fx: [Effect] = []
    var stateChanged = false
    var all = false  // reconcile every window
    var touched: [WindowID] = []

    switch event {
    case .windowAppeared(let info), .windowChanged(let info):
      let old = windows[info.id]
      let reason = decide(info)
      setWindow(WindowState(info: info, reason: reason))
      let decisionChanged = old.map { $0.reason != reason } ?? reason.isSecure
      if reason.isSecure, let old, old.info.facts != info.facts || old.info.tag != info.tag {
        stateChanged = true  // its published row changed
      }
      if decisionChanged {
        stateChanged = true
        do {
          fx.append(
            .audit(
              AuditRecord(
                "secure-decision",
                [
                  ("window", .string(hex(info.id))), ("secure", .bool(reason.isSecure)),
                  ("reason", .string(reason.description)),
                ] + factsFields(effectiveFacts(info)))))
        }
      }
      touched.append(info.id)
      // A client's first secure window makes its other unknown windows provisional.
      if decisionChanged, reason.isSecure, reason != .provisional, let c = info.client {
        touched += redecide(client: c, onlyUnknown: true, except: info.id)
      }

    case .windowGone(let id):
      if let w = windows.removeValue(forKey: id) {
        if let c = w.info.client {
          secureByClient[c]?.remove(id)
          windowsByClient[c]?.remove(id)
          if windowsByClient[c]?.isEmpty == true { windowsByClient[c] = nil }
        }
        if w.reason.isSecure { stateChanged = true }
      }
      overrides[id] = nil
      if shielded.remove(id) != nil { stateChanged = true }

    case .clientConnected(let id, let identity):
      stateChanged = true
      let cls = policy.classify(identity)
      clients[id] = ClientState(
        id: id, identity: identity, clientClass: cls, connectedAt: now, firstCaptureAt: nil,
        captureRequests: 0)
      touched += redecide(client: id, onlyUnknown: false, except: nil)
      matchLaunch(id, identity, fx: &fx)
      if cls == .known {
        startSession(client: id, kind: .known, pinned: true, firstRequest: nil, fx: &fx)
      } else if cls != .allowed, let q = policy.quarantine {
        startSession(client: id, kind: .quarantine, pinned: false, expires: now + q, firstRequest: nil, fx: &fx)
      }

    case .clientLaunching(let program):
      if let q = policy.quarantine, policy.quarantineOnLaunch {
        launches.append(Launch(seen: now, until: now + q, program: program))
      }

    case .clientIdentified(let id, let identity):
      stateChanged = true
      if clients[id] == nil {
        clients[id] = ClientState(
          id: id, identity: nil, clientClass: .unidentified, connectedAt: now, firstCaptureAt: nil,
          captureRequests: 0)
      }
      clients[id]!.identity = identity
      matchLaunch(id, identity, fx: &fx)
      reclassify(id, fx: &fx)
      touched += redecide(client: id, onlyUnknown: false, except: nil)

    case .captureRequest(let id, let req):
      if clients[id] == nil {
        clients[id] = ClientState(
          id: id, identity: nil, clientClass: .unidentified, connectedAt: now, firstCaptureAt: nil,
          captureRequests: 0)
      }
      clients[id]!.captureRequests += 1
      let c = clients[id]!
      if c.firstCaptureAt == nil {
        clients[id]!.firstCaptureAt = now
        stateChanged = true
        fx.append(
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
        fx.append(
          .audit(
            AuditRecord(
              "shield-bypass-attempt",
              [
                ("client", .string(id.description)), ("request", .string(req.kind)),
                ("target", .string(req.target.map(hex) ?? "-")),
              ] + identityFields(c.identity))))
      }
      if c.clientClass == .allowed && !req.bypassesShield { break }
      let expires = now + policy.linger
      if let sid = sessions.first(where: {
        $0.value.client == id && $0.value.kind == .request && !$0.value.detached && $0.value.isLive(at: now)
      })?.key {
        sessions[sid]!.requests += 1
        if req.bypassesShield { sessions[sid]!.bypass = true }
        if sessions[sid]!.expires.map({ $0 < expires }) ?? true { sessions[sid]!.expires = expires }
      } else {
        startSession(client: id, kind: .request, pinned: false, expires: expires, firstRequest: req.kind, fx: &fx)
        if req.bypassesShield, let sid = sessions.keys.max() { sessions[sid]!.bypass = true }
        stateChanged = true
      }

    case .clientGone(let id):
      stateChanged = clients[id] != nil
      clients[id] = nil
      let lingerEnd = now + policy.linger
      for (sid, s) in sessions where s.client == id && !s.detached {
        if s.kind == .quarantine {
          endSession(sid, fx: &fx, why: "client exited")
          continue
        }
        sessions[sid]!.pinned = false
        sessions[sid]!.detached = true
        if s.expires.map({ $0 < lingerEnd }) ?? true { sessions[sid]!.expires = lingerEnd }
      }
      if compositor == id { compositor = nil }

    case .compositorChanged(let id):
      guard id != compositor else { break }
      stateChanged = true
      if let old = compositor {
        for (sid, s) in sessions where s.client == old && s.kind == .compositor {
          sessions[sid]!.pinned = false
          sessions[sid]!.expires = now + policy.linger
        }
      }
      compositor = id
      fx.append(
        .audit(
          AuditRecord(
            "compositor",
            [("client", .string(id?.description ?? "none"))] + identityFields(id.flatMap { clients[$0]?.identity }))))
      if let id {
        let cls = clients[id]?.clientClass ?? .unidentified
        if cls != .allowed {
          startSession(client: id, kind: .compositor, pinned: true, firstRequest: nil, fx: &fx)
        }
      }
      all = true

    case .tick:
      all = true

    case .pause(let until, let by):
      pausedUntil = .some(until)
      stateChanged = true
      all = true
      fx.append(
        .audit(
          AuditRecord(
            "pause",
            [
              ("by", .string(by)),
              ("seconds", until.map { .double($0.seconds(since: now)) } ?? .string("until resume")),
            ])))

    case .resume(let by):
      if pausedUntil != nil {
        pausedUntil = nil
        stateChanged = true
        all = true
        fx.append(.audit(AuditRecord("resume", [("by", .string(by))])))
      }

    case .policyReplaced(let p):
      policy = p
      if p.quarantine == nil || !p.quarantineOnLaunch {
        for l in launches { endLaunch(l, why: "quarantine off", client: nil, fx: &fx) }
        launches = []
      }
      stateChanged = true
      all = true
      fx.append(
        .audit(
          AuditRecord(
            "policy-loaded",
            [
              ("files", .int(p.sources.count)), ("rules", .int(p.secure.count)),
              ("when", .string(p.when.rawValue)), ("failMode", .string(p.failMode.rawValue)),
            ])))
      for id in clients.keys.sorted() { reclassify(id, fx: &fx) }
      for (id, w) in windows {
        let r = decide(w.info)
        if r != w.reason { setWindow(WindowState(info: w.info, reason: r)) }
        _ = id
      }

    case .policyRejected(let why):
      fx.append(.audit(AuditRecord("policy-rejected", [("error", .string(why)), ("kept", "last good policy")])))

    case .manualOverride(let id, let on, let by):
      guard let w = windows[id] else {
        fx.append(
          .audit(AuditRecord("override-ignored", [("window", .string(hex(id))), ("why", "window not tracked")])))
        break
      }
      overrides[id] = (forced: on, baseline: baseline(w))
      stateChanged = true
      touched.append(id)
      fx.append(
        .audit(
          AuditRecord(on ? "manual-shield" : "manual-unshield", [("window", .string(hex(id))), ("by", .string(by))])))

    case .shieldLost(let id, let how):
      if shielded.remove(id) != nil {
        fx.append(
          .audit(
            AuditRecord(
              "shield-tampered", [("window", .string(hex(id))), ("how", .string(how)), ("action", "re-created")])))
        touched.append(id)
      }
    }

    expireDeadlines(fx: &fx, all: &all, stateChanged: &stateChanged)

    // Only a change of `shieldsActive` (or of the policy, a tick, a pause) moves every
    // window's baseline; other events re-decide just the windows they touch, so a client
    // connecting or exiting costs nothing per window.
    let active = shieldsActive
    if active != lastActive {
      lastActive = active
      all = true
      stateChanged = true
      // Windows whose facts are not known yet are provisional exactly while shields are up.
      for (_, w) in windows where !w.info.propertiesKnown {
        let r = decide(w.info)
        if r != w.reason { setWindow(WindowState(info: w.info, reason: r)) }
      }
    }
    if all {
      reconcile(Array(windows.keys).sorted(), fx: &fx, stateChanged: &stateChanged)
      // Windows gone but still believed shielded.
      for id in shielded.subtracting(windows.keys).sorted() {
        shielded.remove(id)
        fx.append(.unshield(id))
      }
    } else {
      reconcile(touched, fx: &fx, stateChanged: &stateChanged)
    }

    let capturing = isCapturing
    if capturing != lastCapturing {
      lastCapturing = capturing
      stateChanged = true
      let secure = windows.values.filter { $0.reason.isSecure }.map(\.info.id).sorted()
      fx.append(.notifyCapture(active: capturing, windows: secure))
    }
    if stateChanged { fx.append(.publishState) }
    return fx
  }

  // MARK: Internals

  func hex(_ id: UInt32) -> String { "0x" + String(id, radix: 16) }

  func decide(_ info: WindowInfo) -> SecureReason {
    let facts = effectiveFacts(info)
    let r = policy.secureReason(facts: facts, tag: info.tag)
    if r.isSecure || info.propertiesKnown { return r }
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

  func baseline(_ w: WindowState) -> Bool { w.reason.isSecure && shieldsActive }

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
      if isPaused { want = false }
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

  func sessionFields() -> [(String, AuditRecord.Value)] {
    if policy.when == .always { return [("trigger", "shield.when=always")] }
    let live = sessions.values.filter { $0.isLive(at: now) }.sorted { $0.id < $1.id }
    guard let s = live.first else { return [] }
    return [("trigger", .string(s.kind.rawValue)), ("client", .string(s.client.description))]
      + identityFields(s.identity)
  }

  mutating func startSession(
    client: ClientID, kind: SessionKind, pinned: Bool, expires: MonotonicTime? = nil,
    firstRequest: String?, fx: inout [Effect]
  ) {
    if sessions.values.contains(where: {
      $0.client == client && $0.kind == kind && !$0.detached && $0.isLive(at: now)
    }) {
      return
    }
    let id = nextSessionID
    nextSessionID += 1
    let identity = clients[client]?.identity
    sessions[id] = Session(
      id: id, client: client, identity: identity, kind: kind, startedAt: now, pinned: pinned,
      expires: expires, firstRequest: firstRequest, requests: firstRequest == nil ? 0 : 1)
    var f: [(String, AuditRecord.Value)] = [
      ("session", .int(id)), ("kind", .string(kind.rawValue)), ("client", .string(client.description)),
    ]
    if let firstRequest { f.append(("request", .string(firstRequest))) }
    fx.append(.audit(AuditRecord("session-start", f + identityFields(identity))))
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

  mutating func expireDeadlines(fx: inout [Effect], all: inout Bool, stateChanged: inout Bool) {
    for (sid, s) in sessions.sorted(by: { $0.key < $1.key }) where !s.isLive(at: now) {
      endSession(sid, fx: &fx, why: s.kind == .quarantine ? "quarantine over" : "linger elapsed")
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

  /// A client was identified: the oldest launch its process can have caused (seen after the
  /// process started, the process at most `launchMatchAge` old) is over; the client's own
  /// class decides from now on. A launch that names its program is only the launch of a
  /// client running that program (preferred over a launch without a name); a client
  /// without a known process age matches none: the launch then lasts its full duration
  /// (fail safe).
  mutating func matchLaunch(_ client: ClientID, _ identity: ClientIdentity?, fx: inout [Effect]) {
    // Nothing to match (and no per-client bookkeeping) unless launches are watched.
    guard policy.quarantine != nil, policy.quarantineOnLaunch else { return }
    guard let age = identity?.processAge, age <= Engine.launchMatchAge, let pid = identity?.pid else { return }
    let horizon = PolicyDuration.seconds(Engine.launchMatchAge + 1)
    if launchPIDs.count > 64 { launchPIDs = launchPIDs.filter { now < $0.value + horizon } }
    if let first = launchPIDs[pid], now < first + horizon { return }  // not its first client
    launchPIDs[pid] = now
    guard !launches.isEmpty else { return }
    // /proc gives the start in clock ticks (10 ms): allow one tick and some.
    let startedNs = now.nanoseconds.subtractingReportingOverflow(UInt64((age + 0.02) * 1e9))
    let started = MonotonicTime(nanoseconds: startedNs.overflow ? 0 : startedNs.partialValue)
    let program = identity?.exe.flatMap { $0.split(separator: "/").last.map(String.init) }
    if let i = launches.firstIndex(where: { $0.seen >= started && $0.program != nil && $0.program == program })
      ?? launches.firstIndex(where: { $0.seen >= started && $0.program == nil })
    {
      endLaunch(launches.remove(at: i), why: "client identified", client: client, fx: &fx)
    }
  }

  /// One audit record per launch: how long it held the shields on its own, and why it ended.
  func endLaunch(_ l: Launch, why: String, client: ClientID?, fx: inout [Effect]) {
    var f: [(String, AuditRecord.Value)] = [("why", .string(why)), ("seconds", .double(now.seconds(since: l.seen)))]
    if let program = l.program { f.append(("program", .string(program))) }
    if let client {
      f.append(("client", .string(client.description)))
      f += identityFields(clients[client]?.identity)
    }
    fx.append(.audit(AuditRecord("launch-end", f)))
  }

  mutating func reclassify(_ id: ClientID, fx: inout [Effect]) {
    guard var c = clients[id] else { return }
    let cls = policy.classify(c.identity)
    c.clientClass = cls
    clients[id] = c
    for (sid, s) in sessions.sorted(by: { $0.key < $1.key }) where s.client == id && !s.detached {
      sessions[sid]!.identity = c.identity
      if cls == .allowed && !s.bypass {
        endSession(sid, fx: &fx, why: "client is allowed")
      } else if s.kind == .known && cls != .known {
        endSession(sid, fx: &fx, why: "client no longer known")
      }
    }
    if cls == .known { startSession(client: id, kind: .known, pinned: true, firstRequest: nil, fx: &fx) }
    if compositor == id && cls != .allowed {
      startSession(client: id, kind: .compositor, pinned: true, firstRequest: nil, fx: &fx)
    }
  }

  func identityFields(_ i: ClientIdentity?) -> [(String, AuditRecord.Value)] {
    guard let i else { return [("identity", "unknown")] }
    var f: [(String, AuditRecord.Value)] = []
    if let pid = i.pid { f.append(("pid", .int(pid))) }
    if let exe = i.exe { f.append(("exe", .string(exe))) }
    if let comm = i.comm { f.append(("comm", .string(comm))) }
    if let uid = i.uid { f.append(("uid", .int(uid))) }
    if let failure = i.failure { f.append(("identity", .string(failure))) }
    return f
  }

  func factsFields(_ f: Facts) -> [(String, AuditRecord.Value)] {
    var out: [(String, AuditRecord.Value)] = []
    if let v = f.class { out.append(("class", .string(v))) }
    if let v = f.title { out.append(("title", .string(String(v.prefix(200))))) }
    if let v = f.exe { out.append(("exe", .string(v))) }
    if let v = f.pid { out.append(("pid", .int(v))) }
    return out
  }
}

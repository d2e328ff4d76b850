/// The daemon's published state: versioned JSON in the root window property
/// `_CAPTURE_SHIELD_STATE` (UTF8_STRING). `shieldctl status/list/clients` and apps read it.
public struct DaemonState: Sendable, Codable, Hashable {
  /// Format version of this JSON; bumped on incompatible changes.
  public var version: Int = 1
  public var pid: Int
  public var display: String
  /// Seconds since the Unix epoch when the daemon started.
  public var startedAt: Double
  public var policy: PolicySummary
  public var paused: Bool
  /// Seconds of pause left, when the pause has an end.
  public var pauseRemaining: Double?
  public var capturing: Bool
  public var shieldsActive: Bool
  public var compositor: ClientRow?
  /// Whether `capture.compositors` trusts the compositor, and why (absent without one).
  public var compositorTrust: String? = nil
  public var windows: [WindowRow]
  public var sessions: [SessionRow]
  public var clients: [ClientRow]
  /// The copied-text guard (optional: absent when it is off, and in states written by
  /// daemons without it; `version` stays 1).
  public var clipboard: ClipboardState? = nil
  /// `capture.quarantineOnLaunch`: the library whose opens count as X client launches
  /// (nil: not watching), and the launches holding the shields now.
  public var launchWatch: String? = nil
  public var pendingLaunches: Int? = nil
  /// With `launchWatch`: the program directories whose X client programs' starts count as
  /// launches, and how many such programs the scan found so far.
  public var launchDirectories: [String]? = nil
  public var launchPrograms: Int? = nil
  /// Which enforcement is active (absent in states written by daemons before server
  /// enforcement existed: those used shield windows).
  public var enforcement: Enforcement? = nil
  /// Never published by the daemon: `shieldctl status --json` sets it to true when the
  /// daemon's loop answered its ping (an unresponsive daemon prints `"responding":"false"`
  /// instead of its state).
  public var responding: Bool? = nil

  /// How secure windows are kept out of captures.
  public struct Enforcement: Sendable, Codable, Hashable {
    /// `server`: the CaptureShield Xorg module enforces inside the X server; `client`: the
    /// daemon maps shield windows.
    public var kind: String
    /// The module's version and mode (`censor` or `deny`), under server enforcement.
    public var moduleVersion: String? = nil
    public var moduleMode: String? = nil
    /// The programs the module trusts (its `Trust` list), when it reports them.
    public var trusted: [String]? = nil
    /// Clients the daemon granted (`capture.allow`).
    public var granted: [ClientID]? = nil
    /// Windows the daemon tagged for the module (`_CAPTURE_SHIELD_POLICY`).
    public var policyTagged: Int? = nil
    /// False while paused: the module does not protect tagged windows.
    public var protecting: Bool? = nil
    /// Which windows the daemon follows: `all`, or `tagged` when the policy has no rules
    /// about windows (`ServerEnforcement.WindowWatch`).
    public var follows: ServerEnforcement.WindowWatch? = nil
    /// Why the daemon does not grant the compositor the policy trusts (`CompositorGrant`);
    /// absent when it is granted or there is none.
    public var compositorRefused: String? = nil
    /// Secure input: true when the module keeps the keys typed into a focused secure window
    /// from everyone but that window's own program and trusted ones (module protocol 1.2
    /// and later); false in client-side mode, where nothing stops other clients from
    /// reading them. Absent in states written by daemons before it was published.
    public var inputProtected: Bool? = nil
    /// Under the module: how many `input-refused` records the daemon audited since it
    /// started, and the last one's client ("pid N /path").
    public var inputRefusals: Int? = nil
    public var lastInputRefusal: String? = nil

    public init(kind: String) { self.kind = kind }
  }

  public struct PolicySummary: Sendable, Codable, Hashable {
    public var sources: [String]
    public var when: ShieldWhen
    public var failMode: FailMode
    public var rules: Int
    public var quarantineMs: Int?
    public var lingerMs: Int
    /// `capture.hold`: `connected` or a duration such as `5s` (absent in states written by
    /// daemons before it existed: those held a session for the linger only).
    public var hold: String? = nil
    /// The built-in secure rules in force (`Policy.defaultSecure`; 0 with
    /// `replaceDefaultSecure`; absent in states of daemons before it existed).
    public var builtinRules: Int? = nil
    /// How many of `rules` are remembered ones (`shieldctl tag --remember`).
    public var rememberedRules: Int? = nil
  }
  public struct WindowRow: Sendable, Codable, Hashable {
    public var id: WindowID
    /// Never published (`Engine.snapshot`); `shieldctl` fills it in from the daemon's
    /// `titles` reply for the daemon's own user.
    public var title: String?
    public var `class`: String?
    public var exe: String?
    public var secure: Bool
    public var reason: String
    /// A shield window covers it (client-side enforcement).
    public var shielded: Bool
    /// The X server keeps it out of untrusted captures (server enforcement; absent in
    /// client-side mode).
    public var protected: Bool? = nil
  }
  public struct SessionRow: Sendable, Codable, Hashable {
    public var id: Int
    public var client: ClientID
    public var kind: Engine.SessionKind
    public var pid: Int?
    public var exe: String?
    public var firstRequest: String?
    public var requests: Int
    public var ageSeconds: Double
    /// Seconds until the session ends unless renewed; nil while pinned (a known capturer, the
    /// compositor, or a capture request held while its client stays connected).
    public var endsIn: Double?
    /// A known capturer because its program captured before (`capture.learn`), not by a
    /// `capture.known` rule (absent otherwise).
    public var learned: Bool? = nil
  }
  public struct ClientRow: Sendable, Codable, Hashable {
    public var client: ClientID
    public var pid: Int?
    public var exe: String?
    public var comm: String?
    public var `class`: ClientClass
    public var capturing: Bool
    public var compositor: Bool
    public var captureRequests: Int
    public var identity: String?
    /// Granted by the daemon to read secure windows (server enforcement).
    public var granted: Bool? = nil
  }
}

extension Engine {
  /// Everything the daemon publishes. Windows: the secure or shielded ones only (the
  /// state must stay small on desktops with thousands of windows), without their titles:
  /// any client of the display can read the state, and a secure window's title can be a
  /// secret (an account, a file name). The daemon's user gets them over the command
  /// socket (`secureWindowTitles`).
  public func snapshot(pid: Int, display: String, startedAt: Double) -> DaemonState {
    let live = sessions.values.filter { $0.isLive(at: now) }
    let capturingClients = Set(live.filter { $0.kind != .quarantine && !$0.detached }.map(\.client))
    func row(_ c: ClientState) -> DaemonState.ClientRow {
      .init(
        client: c.id, pid: c.identity?.pid, exe: c.identity?.exe, comm: c.identity?.comm,
        class: c.clientClass, capturing: capturingClients.contains(c.id), compositor: compositor == c.id,
        captureRequests: c.captureRequests, identity: c.identity?.failure)
    }
    let windowRows = windows.values.filter { $0.reason.isSecure || shielded.contains($0.info.id) }
      .sorted { $0.info.id < $1.info.id }
      .map { w in
        DaemonState.WindowRow(
          id: w.info.id, title: nil, class: w.info.facts.class,
          exe: effectiveFacts(w.info).exe, secure: w.reason.isSecure, reason: w.reason.description,
          shielded: shielded.contains(w.info.id))
      }
    let sessionRows = live.sorted { $0.id < $1.id }.map { s in
      DaemonState.SessionRow(
        id: s.id, client: s.client, kind: s.kind, pid: s.identity?.pid, exe: s.identity?.exe,
        firstRequest: s.firstRequest, requests: s.requests, ageSeconds: now.seconds(since: s.startedAt),
        endsIn: s.pinned ? nil : s.expires.map { $0.seconds(since: now) },
        learned: s.kind == .known && isLearnedKnown(s.identity) && policy.classify(s.identity) == .ordinary
          ? true : nil)
    }
    var pauseRemaining: Double? = nil
    if case .some(.some(let until)) = pausedUntil { pauseRemaining = until.seconds(since: now) }
    return DaemonState(
      pid: pid, display: display, startedAt: startedAt,
      policy: .init(
        sources: policy.sources, when: policy.when, failMode: policy.failMode, rules: policy.secure.count,
        quarantineMs: policy.quarantine.map { Int($0.nanoseconds / 1_000_000) },
        lingerMs: Int(policy.linger.nanoseconds / 1_000_000), hold: policy.hold.description,
        builtinRules: policy.builtinSecure.count,
        rememberedRules: policy.secure.filter { $0.name?.hasPrefix(RememberedRules.namePrefix) == true }.count),
      paused: isPaused, pauseRemaining: pauseRemaining, capturing: isCapturing, shieldsActive: shieldsActive,
      compositor: compositor.flatMap { clients[$0] }.map(row),
      compositorTrust: compositor.map { compositorTrust($0).description },
      windows: windowRows, sessions: sessionRows,
      clients: clients.values.sorted { $0.id < $1.id }.map(row),
      pendingLaunches: launches.isEmpty ? nil : launches.count)
  }
}

extension Engine {
  /// The titles of the windows the state lists (secure or shielded), for the daemon's own
  /// user over the command socket.
  public func secureWindowTitles() -> [WindowID: String] {
    var out: [WindowID: String] = [:]
    for (id, w) in windows where w.reason.isSecure || shielded.contains(id) {
      if let t = w.info.facts.title { out[id] = t }
    }
    return out
  }
}

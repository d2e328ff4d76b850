/// The decision engine: a pure state machine. Events in, effects out; no I/O and no
/// clock of its own (time comes with every event). The X shell feeds it plain values
/// and carries out the effects; tests drive it directly.
///
/// It decides which windows are secure and why, which clients are capturing, when
/// capture sessions start and end (`capture.hold`, `capture.linger`), and which windows to
/// shield.
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
    /// The processes that may be behind the pending launches (`Engine.launchCheckDue`), as
    /// `/proc` shows them; `complete`: every process was visible.
    case launchProcesses([LaunchProcess], complete: Bool)
    /// A request that reads pixels the client does not own.
    case captureRequest(ClientID, CaptureRequest)
    /// A request recorders send before capturing on a connection they keep
    /// (`CaptureCatalog.preludeKinds`): wakes its client's idle sessions (`capture.idle`).
    case capturePrelude(ClientID, CaptureRequest)
    /// Under the Xorg module: the module censored or refused a read of this client's
    /// (CaptureNotify); `identity` from the notice, for a client the engine has not
    /// identified. The server protected the windows; the engine counts the capture: the
    /// client's sessions count the request and do not go idle, and `capture.learn` learns
    /// its program.
    case captureCensored(ClientID, CaptureRequest, ClientIdentity?)
    case clientGone(ClientID)
    /// The compositor: the owner of `_NET_WM_CM_Sn` (`ownsSelection`), or a client found
    /// redirecting windows without owning it (never trusted by `capture.compositors`).
    case compositorChanged(ClientID?, ownsSelection: Bool = true)
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
    /// Another client tampered with the shield the shell keeps in `frame`, the window
    /// manager's frame of the shielded `window` (repaired by the shell already: the engine
    /// does not shield frames, see `WatcherLoop.syncFrameShields`).
    case frameShieldLost(frame: WindowID, window: WindowID, how: String)
    /// A top-level window was created (the root's CreateNotify), before its facts are read:
    /// while shields are up it gets a shield at once (`Effect.shieldAtOnce`).
    case topLevelCreated(WindowID)
    /// The RECORD thread put these shields up on a ClientStarted, before the engine heard of
    /// the client (`RecordPump`, quarantine armed): those the engine does not want once the
    /// records are handled come down again (`Effect.unshield`, no audit record: they were
    /// never the engine's).
    case earlyShieldsUp([WindowID])
    /// The password fields the accessibility bus shows now (all of them), and the mapped
    /// top-level windows of their applications (`PasswordViews`).
    case accessibleFields([AccessibleField], frames: [TopLevelFrame])
  }

  /// What the shell must do. Exactly these, in order.
  public enum Effect: Sendable, Hashable {
    case shield(WindowID)
    case unshield(WindowID)
    case audit(AuditRecord)
    /// Published state changed: rewrite `_CAPTURE_SHIELD_STATE` from `snapshot()`.
    case publishState
    /// Capture started or stopped: tell apps (root property + ClientMessage to these
    /// secure windows, the ones that opted in: `sendsCaptureChanged`).
    case notifyCapture(active: Bool, windows: [WindowID])
    /// Shield a new top-level window at once, before its facts are known (no tile yet; the
    /// window's own decision follows when it is tracked: provisional while shields are up).
    /// Under server enforcement the module protects windows: the shell maps nothing.
    case shieldAtOnce(WindowID)
    /// What was learned per program changed (`history`): the shell saves it (batched).
    case historyChanged
    /// Set `_CAPTURE_SHIELD_POLICY_VIEWS` on the window to these areas (empty: delete it).
    case secureViews(WindowID, [ViewRect])
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

  public internal(set) var policy: Policy
  public internal(set) var now = MonotonicTime(nanoseconds: 0)
  public internal(set) var windows: [WindowID: WindowState] = [:]
  public internal(set) var clients: [ClientID: ClientState] = [:]
  /// Clients gone and not connected again since (a resource-id base goes to the next
  /// client, whose connection clears it), oldest first, at most `departedLimit`: a capture
  /// request recorded before a client's end but handled after it starts a session that
  /// is detached at once (its linger), never one pinned to a connection that is over.
  public internal(set) var departed = RecentSet<ClientID>(limit: Engine.departedLimit)
  /// Clients that went kept at most (a record that late is not expected; forgetting one
  /// only means its session is pinned again until the shell's next sign of its end).
  public static let departedLimit = 1_024
  public internal(set) var sessions: [Int: Session] = [:]
  /// Windows the engine has told the shell to shield (and not yet to unshield).
  public internal(set) var shielded: Set<WindowID> = []
  public internal(set) var compositor: ClientID?
  /// Whether `compositor` owns `_NET_WM_CM_Sn` (only then can `capture.compositors` trust it).
  public internal(set) var compositorOwnsSelection = false
  public internal(set) var pausedUntil: MonotonicTime?? = nil
  /// Launches not matched by a client yet, oldest first. Each keeps the shields up until a
  /// client whose process is young enough to have caused it is identified (that client's
  /// own quarantine takes over) or until the quarantine duration ends.
  public internal(set) var launches: [Launch] = []
  /// Young processes that already had a client identified (PID → when): a process loads
  /// libxcb once, so its later connections (a poller's) never match another launch.
  var launchPIDs: [Int: MonotonicTime] = [:]
  /// The daemon's own program (`/proc/self/exe`): its clients (`shieldctl`) start no
  /// quarantine (`Engine.isOwnProgram`). Nil: none is exempt.
  public var ownProgram: String?
  /// The display the daemon protects (`DISPLAY` syntax): launches of processes that name
  /// another display start no quarantine (`Engine.launchOver`). Nil: not known.
  public var display: String?
  /// What was learned per program file (`capture.learn`); the shell loads it at start and
  /// saves it on `historyChanged`.
  public var history = CaptureHistory()
  /// Wall-clock seconds at the engine's time zero (the shell's `Clock`): dates the history.
  public var wallBase: Double = 0
  /// The secure views of password fields, per top-level window (`PasswordViews.views`).
  public internal(set) var passwordViews: [WindowID: [ViewRect]] = [:]
  /// The windows whose password field has the keyboard focus.
  public internal(set) var passwordFocus: Set<WindowID> = []
  /// Manual overrides: forced state and the decision they were made against.
  var overrides: [WindowID: (forced: Bool, baseline: Bool)] = [:]
  var secureByClient: [ClientID: Set<WindowID>] = [:]
  var windowsByClient: [ClientID: Set<WindowID>] = [:]
  /// Windows whose facts are not known yet (created, not mapped), with the time their facts
  /// count as known anyway (`provisionalLimit` after they appeared), the earliest at hand
  /// (`nextDeadline` asks for it on every turn of the loop).
  var unsettled = DeadlineQueue<WindowID>()
  /// Windows never mapped whose facts count as known: `provisionalLimit` passed. Decided by
  /// the facts the shell has followed since (property changes), like a mapped window.
  var settled: Set<WindowID> = []
  /// How long a window that is not mapped may stay provisional (`ProvisionalTests`): the provisional
  /// shield guards the moment between a new window's MapWindow and the daemon reading its
  /// facts; an app sets its class and tag before it maps. After this, a window that never
  /// mapped is decided by the facts it has, and later property changes re-decide it.
  public static let provisionalLimit = PolicyDuration.seconds(1)
  /// The id of the next session: ids are handed out in order and never reused, so a session
  /// started since this was last read when it changed (`CaptureNotifier.sync`).
  var nextSessionID = 1
  var lastCapturing = false
  var lastActive = false

  public init(policy: Policy, ownProgram: String? = nil, display: String? = nil) {
    self.policy = policy
    self.ownProgram = ownProgram
    self.display = display
  }

  // MARK: Handling events

  /// What handling one event has decided so far: the effects in order, whether the
  /// published state changed, and which windows to reconcile (`all`: every one).
  struct Step {
    var fx: [Effect] = []
    var stateChanged = false
    var all = false
    var touched: [WindowID] = []
  }

  /// Applies `event` at time `now` and returns what the shell must do.
  public mutating func handle(_ event: Event, now: MonotonicTime) -> [Effect] {
    // Decisions about what the shell does at once: the engine as it stands decides (no clock
    // step, no deadline handled, nothing changes): a session whose linger ends at this very
    // moment still counts, the safe mistake, until the next event or tick ends it.
    switch event {
    case .topLevelCreated(let w):
      return shieldsActive ? [.shieldAtOnce(w)] : []
    case .earlyShieldsUp(let fired):
      return Set(fired).sorted().filter { !shielded.contains($0) }.map { .unshield($0) }
    default: break
    }
    if now > self.now { self.now = now }  // deadlines never go backwards, whatever the event's stamp
    var step = Step()
    switch event {
    case .windowAppeared(let info), .windowChanged(let info): windowSeen(info, &step)
    case .windowGone(let id): windowGone(id, &step)
    case .shieldLost(let id, let how): shieldLost(id, how: how, &step)
    case .frameShieldLost(let frame, let id, let how): frameShieldLost(frame: frame, window: id, how: how, &step)
    case .clientConnected(let id, let identity): clientConnected(id, identity, &step)
    case .clientIdentified(let id, let identity): clientIdentified(id, identity, &step)
    case .clientGone(let id): clientGone(id, &step)
    case .compositorChanged(let id, let ownsSelection): compositorChanged(id, ownsSelection: ownsSelection, &step)
    case .captureRequest(let id, let req): captureRequest(id, req, &step)
    case .capturePrelude(let id, let req): capturePrelude(id, req, &step)
    case .captureCensored(let id, let req, let identity): captureCensored(id, req, identity, &step)
    case .clientLaunching(let program): clientLaunching(program, &step)
    case .launchProcesses(let processes, let complete): launchProcesses(processes, complete: complete, &step)
    case .pause(let until, let by): pause(until: until, by: by, &step)
    case .resume(let by): resume(by: by, &step)
    case .policyReplaced(let p): policyReplaced(p, &step)
    case .policyRejected(let why): policyRejected(why, &step)
    case .manualOverride(let id, let on, let by): manualOverride(id, shielded: on, by: by, &step)
    case .accessibleFields(let fields, let frames): accessibleFields(fields, frames: frames, &step)
    case .tick: step.all = true
    case .topLevelCreated, .earlyShieldsUp: break  // decided above, as the engine stands
    }
    return finish(&step)
  }

  /// What follows every event's own handling: deadlines passed, provisional windows
  /// settled, the shields reconciled with the decisions, capture's start or end told, the
  /// state published.
  mutating func finish(_ step: inout Step) -> [Effect] {
    expireDeadlines(fx: &step.fx, all: &step.all, stateChanged: &step.stateChanged)
    let settledNow = settleProvisional()
    if !settledNow.isEmpty {
      step.touched += settledNow
      step.stateChanged = true
    }

    // Only a change of `shieldsActive` (or of the policy, a tick, a pause) moves every
    // window's baseline; other events re-decide just the windows they touch, so a client
    // connecting or exiting costs nothing per window.
    let active = shieldsActive
    if active != lastActive {
      lastActive = active
      step.all = true
      step.stateChanged = true
      // Windows whose facts are not known yet are provisional exactly while shields are up.
      for (_, w) in windows where !w.info.propertiesKnown {
        let r = decide(w.info)
        if r != w.reason { setWindow(WindowState(info: w.info, reason: r)) }
      }
    }
    if step.all {
      reconcile(Array(windows.keys).sorted(), fx: &step.fx, stateChanged: &step.stateChanged)
      // Windows gone but still believed shielded.
      for id in shielded.subtracting(windows.keys).sorted() {
        shielded.remove(id)
        step.fx.append(.unshield(id))
      }
    } else {
      reconcile(step.touched, fx: &step.fx, stateChanged: &step.stateChanged)
    }

    let capturing = isCapturing
    if capturing != lastCapturing {
      lastCapturing = capturing
      step.stateChanged = true
      let asked = windows.values.filter(Engine.sendsCaptureChanged).map(\.info.id).sorted()
      step.fx.append(.notifyCapture(active: capturing, windows: asked))
    }
    if step.stateChanged { step.fx.append(.publishState) }
    return step.fx
  }
}

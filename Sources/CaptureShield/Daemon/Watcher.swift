internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Signal numbers written by the handlers into the self-pipe; the loop reads them.
/// Signal handlers only write one byte: nothing else happens in signal context.
nonisolated(unsafe) var signalPipeWriteFD: Int32 = -1

/// `shieldctl watch`: the daemon. One event loop over the X connections; the decision
/// engine decides, `XEffects` and `ShieldDriver` act.
public enum Watcher {
  /// Runs until SIGTERM/SIGINT (exit 0) or a fatal condition (see `WatchExit`).
  public static func run(_ options: WatchOptions) -> Int32 {
    let log = AuditLog(format: options.logFormat, syslog: options.syslog)
    if let why = waylandSession(ProcessInfo.processInfo.environment) {
      // Say so instead of pretending: X11 shields only cover Xwayland windows against X11
      // capture clients; Wayland-native capture (PipeWire portals) is the compositor's call.
      log.error(
        "this is a Wayland session (\(why)): CaptureShield only sees X11 (Xwayland) clients and windows; "
          + "screen capture through the Wayland compositor (xdg-desktop-portal, PipeWire) is not detected or "
          + "blanked. Use your compositor's own rules for Wayland-native windows.")
    }
    let policyPaths = options.policyPaths ?? PolicyLoader.defaultPaths(environment: ProcessInfo.processInfo.environment)
    let policy: Policy
    do {
      // A broken file of remembered rules (shieldctl writes it) does not keep the daemon
      // from protecting with the rest; a reload keeps the last good policy instead.
      let remembered = options.policyPaths == nil ? rememberedPath : nil
      let loaded = try loadPolicy(policyPaths, optional: remembered)
      policy = loaded.policy
      if let skipped = loaded.skipped {
        log.error(
          "the remembered rules are invalid and NOT in force (the rest of the policy is; fix or remove the file):\n\(skipped)"
        )
      }
    } catch {
      log.error("invalid policy; not starting (no last good policy to keep):\n\(error)")
      return WatchExit.badPolicy
    }
    do {
      let w = try WatcherLoop(
        options: options, policy: policy, policyPaths: policyPaths, defaultPolicy: options.policyPaths == nil, log: log)
      return w.run()
    } catch {
      log.error("\(error)")
      if case .alreadyRunning = error { return WatchExit.alreadyRunning }
      if case .cannotConnect = error { return WatchExit.xServerGone }
      return WatchExit.failure
    }
  }

  /// Why the environment looks like a Wayland session, or nil.
  public static func waylandSession(_ env: [String: String]) -> String? {
    if env["XDG_SESSION_TYPE"] == "wayland" { return "XDG_SESSION_TYPE=wayland" }
    if let w = env["WAYLAND_DISPLAY"], !w.isEmpty { return "WAYLAND_DISPLAY=\(w)" }
    return nil
  }

  static func loadPolicy(_ paths: [String]) throws -> Policy {
    try loadPolicy(paths, optional: nil).policy
  }

  /// The policy of `paths`; a broken `optional` file is left out (see `PolicyLoader`).
  static func loadPolicy(_ paths: [String], optional: String?) throws -> (policy: Policy, skipped: PolicyError?) {
    if paths.isEmpty {
      var p = Policy()
      p.sources = []
      return (p, nil)
    }
    return try PolicyLoader.load(paths: paths, optional: optional)
  }

  /// The remembered rules' file (`shieldctl tag --remember`), if the environment names one.
  static var rememberedPath: String? { RememberedRules.path(environment: ProcessInfo.processInfo.environment) }
}

/// The daemon's timing constants, in one place (each is explained where it is used).
struct WatcherTuning {
  /// How often the published state (`_CAPTURE_SHIELD_STATE`) is rewritten at most.
  let publishInterval = PolicyDuration.milliseconds(50)
  /// How often the server is poked (a round trip) so it flushes pending RECORD records,
  /// while a session is live or shortly after a client connected.
  let pokeInterval = PolicyDuration.milliseconds(20)
  /// How long after a client connects the server is poked.
  let promptRecordsAfterConnect = PolicyDuration.seconds(2)
  /// Batches of window events and of RECORD records while nothing is at stake.
  let batchInterval = PolicyDuration.milliseconds(10)
  /// Records in one run that make a burst (a busy client's harmless requests).
  let burstRecords = 32
}

/// The daemon's main connection and what the daemon owns on it.
struct MainSide {
  let x: XConnection
  /// The daemon's writes on `x` (see `XEffects`).
  let effects: XEffects
  /// The atoms the loop reads and writes (`DaemonAtoms`).
  let atoms: DaemonAtoms
  /// The window that owns the manager selection (and answers pings).
  let managerWindow: UInt32
}

/// The shields' side: the driver and its own connection (see `ShieldDriver`), both replaced
/// when another client kills that connection (`WatcherLoop.replaceShieldConnection`).
struct ShieldSide {
  var driver: ShieldDriver
  var connection: XConnection
}

/// What the daemon was started with.
struct DaemonSetup {
  let log: AuditLog
  let policyPaths: [String]
  /// No `--policy`: each reload looks for the default files again (a user's policy or
  /// remembered rules written since the start).
  let defaultPolicy: Bool
  /// The display the daemon watches (for a new RECORD connection after a reload).
  let display: String?
  let startedAt = Date().timeIntervalSince1970
  /// The loop's timing constants.
  let tuning = WatcherTuning()
  /// The learned history's file (`capture.learn`; nil: no state directory).
  let history: HistoryStore?
}

/// The fixed entries of the loop's poll descriptors (`LoopState.fds`), in order; the tag
/// watch's descriptor (or -1) and the command socket's follow them
/// (`WatcherLoop.fixedDescriptors`).
enum PollSlot: Int, CaseIterable {
  /// The main connection (read in batches: `WatcherLoop.batchingUntil`).
  case x
  /// The shield connection.
  case shieldX
  /// The signal pipe's read end.
  case signals
  /// The RECORD detector's (read in batches: `WatcherLoop.recordBatchingUntil`).
  case detector
  /// The copied-text guard's connection (-1: none).
  case clipboard
  /// The keyboard watch's (+Keylog; -1: none).
  case keyboard
  /// The accessibility bus's (+Accessibility; -1: none).
  case accessibility
}

extension [pollfd] {
  /// The entry of a fixed slot.
  subscript(slot: PollSlot) -> pollfd {
    get { self[slot.rawValue] }
    set { self[slot.rawValue] = newValue }
  }

  /// Whether the fixed slots are there yet (`WatcherLoop.run` sets them before its first poll).
  func has(_ slot: PollSlot) -> Bool { count > slot.rawValue }
}

/// The loop's own bookkeeping: its poll descriptors, the signal pipe, batching, publishing
/// and the forged-event audits.
struct LoopState {
  var fds: [pollfd] = []
  var signalRead: Int32 = -1
  var shuttingDown = false
  /// See `WatcherLoop.batchingUntil`.
  var lastMainEvents = MonotonicTime(nanoseconds: 0)
  /// The published state is due to be rewritten (at most every `tuning.publishInterval`).
  var stateDirty = true
  var lastPublish = MonotonicTime(nanoseconds: 0)
  /// Forged events and commands: how many since their last audit record (`ForgedAudit`).
  var forged = ForgedAudit()
  /// The learned capturers whose starts the pump's launch watch follows (`updatePump`).
  var learnedLaunchPaths: [String] = []
  /// The engine said the history changed since the loop last looked (`publishIfDue`).
  var historyChanged = false
}

/// Engine events waiting to be handled: `apply` is not re-entrant. An effect that reveals
/// something new (a shield's target is gone) queues a follow-up event here, and `apply`
/// handles it after the event it is handling now.
struct EngineQueue {
  var events: [Engine.Event] = []
  var applying = false
  /// `engine.quarantineTargets` since the engine last handled an event (nil: ask again).
  var quarantineTargets: [WindowID]?
}

/// The copied-text guard's hook: the guard (own connection; nil when `clipboard.enabled` is
/// false or it could not start; its failures are logged, never fatal), and its resource base
/// while it runs (`checkOwnConnections` replaces a guard whose connection another client killed).
struct ClipboardHook {
  var guardian: ClipboardGuard?
  var base: UInt32?
}

/// The daemon's channels to the outside other than X: `shieldctl`'s command socket
/// (`CommandServer`; nil when it could not be created: then no command is accepted, and
/// protection goes on) and the service manager's notification socket (`Type=notify`,
/// `WatchdogSec=`; nil when not started by one that listens, see `SystemdNotify`).
struct ServiceChannels {
  var commands: CommandServer?
  let systemd: SystemdNotify?
  /// The accessibility bus's password fields (`accessibility.passwordFields`; nil when off).
  var accessibility: AccessibilityWatch? = nil
}

/// The daemon's loop: it polls and routes; the components own their state. Its routing
/// lives in files of their own: `+Loop` (poll, batching, flushing), `+Windows` (window
/// events, `WindowTracker`), `+Detector` (capture records, `CaptureBridge`), `+Engine`
/// (events in, effects out, `EffectRouting`), `+Frames` (`FrameShields`), `+Server`
/// (`ServerEnforcer`), `+Tags` (`SecureTagGuard`), `+Keylog` (`KeyboardWatch`), `+Notify`
/// (`DesktopNotices`), `+Signals` (signals, reload, commands, shutdown), `+Reconnect` (own
/// connections killed) and `+Clipboard` (the copied-text guard). docs/architecture.md,
/// "Components of the loop".
final class WatcherLoop {
  /// The main connection, its writer, atoms and manager window (`x`, `effects`, `atoms`, `managerWindow`).
  let main: MainSide
  /// The shield driver and its connection (`driver`, `shieldX`).
  var shielding: ShieldSide
  var engine: Engine
  /// The log, the policy files, the display and the timing constants (`log`, `tuning`).
  let setup: DaemonSetup
  var loop = LoopState()
  var queue = EngineQueue()
  /// The windows followed and what is known of them (`WindowTracker`).
  let tracker: WindowTracker
  /// The RECORD context, its timing and the identities looked up (`CaptureBridge`).
  let capture: CaptureBridge
  /// The shields in shielded windows' window-manager frames (`FrameShields`).
  let frames: FrameShields
  /// The Xorg module when it enforces, what it was told, which windows are followed
  /// (`ServerEnforcer`; `module` is its module).
  let server: ServerEnforcer
  /// The tag guard (`SecureTagGuard`: who may lift a secure tag; its RECORD source is nil
  /// without RECORD or under server enforcement, where the module decides who may).
  let tagGuard: SecureTagGuard
  /// Who listens to the keyboard (`KeyboardWatch`, client-side mode: its RECORD source is
  /// nil under the Xorg module, with `keyloggers.enabled` false, or when it could not start).
  let keyboard: KeyboardWatch
  /// The capture notices (`DesktopNotices`: when to tell the user that a capture started,
  /// and the session bus's sender while `notify.enabled`).
  let notices: DesktopNotices
  /// The copied-text guard (`clipboard`) and its resource base.
  var clipboardHook = ClipboardHook()
  /// The command socket and the service manager's socket.
  var channels: ServiceChannels

  var x: XConnection { main.x }
  var effects: XEffects { main.effects }
  var atoms: DaemonAtoms { main.atoms }
  var managerWindow: UInt32 { main.managerWindow }
  var driver: ShieldDriver {
    get { shielding.driver }
    set {
      newValue.viewsOf = { [unowned self] in self.viewRects($0) }
      shielding.driver = newValue
    }
  }
  var shieldX: XConnection {
    get { shielding.connection }
    set { shielding.connection = newValue }
  }
  var log: AuditLog { setup.log }
  var tuning: WatcherTuning { setup.tuning }
  var clipboard: ClipboardGuard? {
    get { clipboardHook.guardian }
    set { clipboardHook.guardian = newValue }
  }

  init(options: WatchOptions, policy: Policy, policyPaths: [String], defaultPolicy: Bool, log: AuditLog)
    throws(XError)
  {
    let x = try XConnection(display: options.display)
    setup = DaemonSetup(
      log: log, policyPaths: policyPaths, defaultPolicy: defaultPolicy, display: options.display,
      history: CaptureHistory.path(environment: ProcessInfo.processInfo.environment).map {
        HistoryStore(path: $0, log: log)
      })
    x.errors = XErrorPolicy(log: log)
    let effects = XEffects(x: x, root: x.root)
    frames = FrameShields(connection: x)
    let shieldConn = try XConnection(display: options.display)
    shieldConn.errors = XErrorPolicy(log: log)
    // The daemon's own log: its lock keeps the notification queue's records and the loop's whole.
    notices = DesktopNotices(
      makeSender: { DesktopNotifier(environment: ProcessInfo.processInfo.environment, log: log) },
      audit: { log.write($0) })
    engine = Engine(policy: policy)
    for ext in ["X-Resource", "SHAPE"] where !x.hasExtension(ext) { throw .missingExtension(ext) }
    let atoms = DaemonAtoms(interned: x.atoms(DaemonAtoms.names(screen: Int(x.screenNumber))))
    tracker = WindowTracker(connection: x, atoms: atoms)
    keyboard = KeyboardWatch(
      connection: x,
      makeSource: { [display = options.display] in try KeyloggerRecorder(display: display, unrecorded: $0) },
      audit: { log.write($0) })
    tagGuard = SecureTagGuard(connection: x, secureAtom: atoms.secure, watch: nil) { [log] in log.write($0) }

    // One daemon per display: own the manager selection, as window managers do.
    let owner = x.selectionOwner(atoms.manager)
    if owner != 0 {
      let pid = x.property(owner, atoms.netWMPID).flatMap {
        PropertyDecoding.cardinal(format: $0.format, bytes: $0.bytes)
      }
      throw .alreadyRunning(pid: pid.map(Int.init))
    }
    let managerWindow = x.generateID()
    effects.claimManager(
      window: managerWindow, selection: atoms.manager, pidAtom: atoms.netWMPID, pid: UInt32(getpid()))
    guard x.selectionOwner(atoms.manager) == managerWindow else {
      // Nobody owns it, yet the claim did not take: the Xorg module refuses the selection to
      // a program it does not trust (rule "daemon"), so that no other client can pose as the
      // daemon. Say so rather than "already runs".
      if let m = ServerModule.probe(x), m.callerTrust == .none {
        throw .failed(
          Self.untrustedByModule(m)
            + "; it refuses this program the daemon's selection (_CAPTURE_SHIELD_S\(x.screenNumber)), so it cannot run here"
        )
      }
      throw .alreadyRunning(pid: nil)
    }
    main = MainSide(x: x, effects: effects, atoms: atoms, managerWindow: managerWindow)
    var commands: CommandServer?
    // Commands come over a socket whose peer the kernel names (ClientMessages can be forged).
    do {
      commands = try CommandServer(path: daemonCommandSocketPath(display: x.displayName, screen: x.screenNumber))
    } catch {
      log.error(
        "no command socket (\(error)): shieldctl pause, resume, shield, unshield, reload and the status ping cannot reach this daemon; protection goes on"
      )
    }

    channels = ServiceChannels(commands: commands, systemd: SystemdNotify.fromEnvironment(now: Clock.now()))
    let driver = ShieldDriver(
      connection: shieldConn, failMode: policy.failMode, input: policy.input, label: policy.label,
      registryFile: ShieldRegistryFile.forDisplay(x.displayName, environment: ProcessInfo.processInfo.environment))
    driver.errors = XErrorPolicy(log: log)
    shielding = ShieldSide(driver: driver, connection: shieldConn)
    // Server enforcement when the Xorg module is loaded and trusts us.
    var module: ServerModule?
    if let m = ServerModule.probe(x) {
      if m.callerTrust == .none {
        log.error(Self.untrustedByModule(m) + "; using client-side shields")
      } else {
        module = m
        engine = Engine(policy: Self.effectivePolicy(policy, serverEnforced: true))
      }
    }
    server = ServerEnforcer(
      channel: module.map { XModuleChannel(module: $0, x: x, effects: effects) }, daemonUID: Int(geteuid()))
    do {
      // Only requests that start a session are recorded (indicators such as GrabServer or
      // MIT-SHM Attach would cost records without changing a decision). Under server
      // enforcement only connections and disconnections are recorded: the module decides
      // inside each request, and the daemon needs to know when a client to grant connects.
      let pixmaps = module == nil && !policy.captureAllow.isEmpty
      let d = try CaptureDetector(
        display: options.display, catalog: Self.recordedCatalog(serverEnforced: module != nil, pixmapReads: pixmaps),
        startTimeout: .seconds(5), errors: XErrorPolicy(log: log))
      d.excludedClients.formUnion([ClientID(x.ownBase), ClientID(shieldConn.ownBase)])
      capture = CaptureBridge(detector: d, readsPixmaps: pixmaps, tuning: setup.tuning)
    } catch {
      capture = CaptureBridge(detector: nil, readsPixmaps: false, tuning: setup.tuning)
      log.error(
        "capture detection unavailable (\(error)); shield.when=capturing falls back to shielding secure windows always"
      )
      var p = Self.effectivePolicy(policy, serverEnforced: module != nil)
      if p.when == .capturing { p.when = .always }
      engine = Engine(policy: p)
    }
    // shieldctl's own connections and launches start no quarantine; launches of processes of
    // other displays neither (`Engine.isOwnProgram`, `Engine.launchOver`).
    engine.ownProgram = ProcessInfoReader.readLink("/proc/self/exe")
    engine.display = x.displayName
    loadHistory()
    if policy.clipboard.enabled { startClipboardGuard(policy.clipboard) }  // copied-text guard hook
    if module == nil {
      do {
        let watch = try TagWatch(display: options.display, property: atoms.secure, errors: XErrorPolicy(log: log))
        for b in watch.ownBases { detector?.excludeNewConnection(b) }
        tagGuard.watch = watch
      } catch {
        log.error("cannot tell who removes secure tags (\(error)): any client's removal of a tag lifts it")
      }
    }
    shielding.driver.viewsOf = { [unowned self] in self.viewRects($0) }
  }

  /// What RECORD records. Under server enforcement: only connections and disconnections
  /// (the module decides inside each request). Otherwise the requests that start a session
  /// and can read a window; with `pixmapReads`, also those that can only read a pixmap
  /// (GC tiles and stipples, window backgrounds, cursors, regions and shapes from
  /// bitmaps): recording those costs every client records (CreateGC, ChangeGC and
  /// CreateWindow are among the most frequent requests), so only when a pixmap may hold a
  /// secure window's pixels that its reader did not copy itself (`recordsPixmapReads`).
  static func recordedCatalog(serverEnforced: Bool, pixmapReads: Bool) -> CaptureCatalog {
    if serverEnforced { return CaptureCatalog(entries: []) }
    let starters = CaptureCatalog.standard.sessionStartersOnly
    let preludes = CaptureCatalog.standard.preludesOnly.entries  // capture.idle: wake an idle session
    return CaptureCatalog(entries: (pixmapReads ? starters : starters.windowReaders).entries + preludes)
  }

  /// Whether pixmap reads must be recorded: when the policy allows some client, or a
  /// trusted compositor runs. Such a client names window pixmaps without starting a
  /// session, and any other client can then use such a pixmap as a tile or stipple and read
  /// its own drawable (`AllowedPixmapTests`). Without one, a secure window's pixels reach a
  /// pixmap only through a recorded request of the pixmap's owner.
  static func recordsPixmapReads(_ policy: Policy, trustedCompositor: Bool) -> Bool {
    !policy.captureAllow.isEmpty || trustedCompositor
  }
}

extension WatcherLoop {
  /// Why the loaded Xorg module does not trust this daemon, and what the admin does about it.
  static func untrustedByModule(_ m: ServerModule) -> String {
    "the CaptureShield Xorg module \(m.versionString) is loaded but does not trust this daemon (\(ProcessInfoReader.readLink("/proc/self/exe") ?? "shieldctl"), uid \(geteuid())): name this program in Option \"Daemon\" of SubSection \"captureshield\" in xorg.conf, with this user in Option \"DaemonUsers\" (default: root and the seat's user), keep it and every directory above it root's and writable by root alone, and run it from a clean environment (no LD_PRELOAD, no tracer; docs/install.md)"
  }
}

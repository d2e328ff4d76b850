// Launches (`capture.quarantineOnLaunch`): a process starting an X client program or
// loading the X client library keeps the shields up until its client is identified.

extension Engine {
  /// A process loaded the X client library (`clientLaunching`) and no client of a process
  /// that young has been identified since: the shields stay up as for a quarantine.
  public struct Launch: Sendable, Hashable {
    public var seen: MonotonicTime
    public var until: MonotonicTime
    /// The program started (its file name), when the launch was seen as a program start.
    public var program: String? = nil
    /// When the shell should look at the processes that can be behind it (`launchCheckDue`;
    /// nil: not again).
    public var nextCheck: MonotonicTime? = nil
  }

  /// How long after its process started a client can still be the launch's client: a
  /// client whose process is older (a long-running app opening another connection) never
  /// matches a launch, so it cannot end the launch of a tool still loading.
  public static let launchMatchAge = 2.0

  // MARK: Launches

  /// A client was identified: the oldest launch its process can have caused (seen after the
  /// process started, the process at most `launchMatchAge` old) is over; the client's own
  /// class decides from now on. A launch that names its program is only the launch of a
  /// client running that program (preferred over a launch without a name); a client
  /// without a known process age matches none: the launch then lasts its full duration
  /// (fail safe).
  mutating func matchLaunch(_ client: ClientID, _ identity: ClientIdentity?, fx: inout [Effect]) {
    // Nothing to match (and no per-client bookkeeping) unless launches are watched.
    guard (policy.quarantine != nil && policy.quarantineOnLaunch) || watchesLearnedLaunches else { return }
    guard let age = identity?.processAge, age <= Engine.launchMatchAge, let pid = identity?.pid else { return }
    let horizon = PolicyDuration.seconds(Engine.launchMatchAge + 1)
    if launchPIDs.count > 64 { launchPIDs = launchPIDs.filter { now < $0.value + horizon } }
    if let first = launchPIDs[pid], now < first + horizon { return }  // not its first client
    launchPIDs[pid] = now
    guard !launches.isEmpty else { return }
    // /proc gives the start in clock ticks (10 ms): allow one tick and some.
    let startedNs = now.nanoseconds.subtractingReportingOverflow(UInt64((age + 0.02) * 1e9))
    let started = MonotonicTime(nanoseconds: startedNs.overflow ? 0 : startedNs.partialValue)
    // Its program: the executable, or the script an interpreter runs (the kernel's exec
    // and the interpreter both open a script: two launches of one start).
    let names = Set([identity?.exe, identity?.script].compactMap { $0?.split(separator: "/").last.map(String.init) })
    if let i = launches.firstIndex(where: { $0.seen >= started && $0.program.map(names.contains) == true }) {
      let program = launches[i].program
      for l in launches where l.seen >= started && l.program == program {
        endLaunch(l, why: "client identified", client: client, fx: &fx)
      }
      launches.removeAll { $0.seen >= started && $0.program == program }
    } else if let i = launches.firstIndex(where: { $0.seen >= started && $0.program == nil }) {
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
}

// MARK: Launches that cannot be this display's clients

/// A process the shell found that may be behind a pending launch (`launchProcesses`): one
/// started shortly before or after a launch was seen, as `/proc` shows it.
public struct LaunchProcess: Sendable, Hashable {
  public var pid: Int
  /// When it started (fork; `/proc`'s start time, 10 ms ticks), on the engine's clock.
  public var started: MonotonicTime
  /// `/proc/PID/exe` (nil: unreadable, another user's process).
  public var exe: String?
  /// `/proc/PID/comm` (the program's first 15 characters unless the process renamed itself).
  public var comm: String?
  /// Whether libxcb is among its mapped files (nil: `/proc/PID/maps` unreadable).
  public var loadsXCB: Bool?
  /// `DISPLAY` in its initial environment: nil = unreadable, `""` = unset.
  public var display: String?
  /// Why it may run code that is not its program's (`ClientIdentity.injection`), or
  /// `LD_LIBRARY_PATH=...` (a library of another directory in place of libxcb); nil: none.
  public var injection: String?
  /// The first words of its command line (`/proc/PID/cmdline`): an interpreter running a
  /// script names it there (`python3 tool.py`), not in `exe` or `comm`. Nil: unreadable.
  public var arguments: [String]? = nil

  public init(
    pid: Int, started: MonotonicTime, exe: String? = nil, comm: String? = nil, loadsXCB: Bool? = nil,
    display: String? = nil, injection: String? = nil
  ) {
    self.pid = pid
    self.started = started
    self.exe = exe
    self.comm = comm
    self.loadsXCB = loadsXCB
    self.display = display
    self.injection = injection
  }
}

extension Engine {
  /// How long before a launch was seen its process can have started (its fork: a launcher
  /// forks, then execs; longer, and the launch is not matched to it).
  public static let launchForkWindow = 5.0
  /// How long a launch waits before "no process found" counts as "it exited": an exec
  /// switches the process's program, and the loader maps libxcb, microseconds to a few
  /// milliseconds after the open the watch reports.
  public static let launchSettle = 0.025
  /// How long after a launch the shell first looks at its processes: a client of this
  /// display connects within milliseconds of loading libxcb (xwd, xdpyinfo: 2 ms), and its
  /// identification ends the launch (`matchLaunch`) before a scan could; a scan first would
  /// delay that identification until a short-lived client had exited (then its launch lasts
  /// until it is found gone).
  public static let launchFirstCheck = 0.005

  /// The display number in a `DISPLAY` value (`[host]:N[.S]`, or a path ending in
  /// `:N[.S]`); nil when there is none.
  public static func displayNumber(_ display: String) -> Int? {
    guard let colon = display.lastIndex(of: ":") else { return nil }
    let rest = display[display.index(after: colon)...]
    let digits = rest.prefix { $0.isNumber }
    guard !digits.isEmpty, rest.dropFirst(digits.count).allSatisfy({ $0 == "." || $0.isNumber }) else { return nil }
    return Int(digits)
  }

  /// Whether a process with this `DISPLAY` connects to another display than `ours` (or to
  /// none) by default: unset, no display number, or another number. A host part is not
  /// compared (`localhost:0` may be ours). Unreadable (nil) is not known to be another.
  public static func namesAnotherDisplay(_ display: String?, ours: String?) -> Bool {
    guard let display else { return false }
    guard let n = displayNumber(display) else { return true }  // unset or no display: xcb_connect fails
    guard let ours, let mine = displayNumber(ours) else { return false }
    return n != mine
  }

  /// Whether `exe` with `injection` is the daemon's own program (`ownProgram`) running only
  /// its own code: `shieldctl` itself. Exec'ing it gives a process nothing but shieldctl's
  /// behaviour; code put in by the loader (`LD_PRELOAD`, `LD_AUDIT`, `LD_LIBRARY_PATH`) or a
  /// tracer (`injection`) is not shieldctl's, so such a process is not counted as ours.
  public static func isOwnProgram(exe: String?, injection: String?, ownProgram: String?) -> Bool {
    guard let ownProgram, let exe, injection == nil else { return false }
    return exe == ownProgram
  }

  /// Whether `p` can be the process behind launch `l`: it started at most
  /// `launchForkWindow` before the launch was seen and no later than one clock tick after
  /// it, and it runs the launched program (a program start) or maps libxcb (an open of the
  /// library; unreadable maps count).
  public static func launchCouldBe(_ l: Launch, _ p: LaunchProcess) -> Bool {
    guard p.started <= l.seen + .milliseconds(20), l.seen.seconds(since: p.started) <= launchForkWindow else {
      return false
    }
    guard let program = l.program else { return p.loadsXCB != false }
    return runs(p, program)
  }

  /// Whether `p` runs `program` (a file name): its executable, or a script an interpreter
  /// runs under the script's name (`comm`, when the script was exec'd) or with it among its
  /// first arguments (`python3 tool.py`).
  public static func runs(_ p: LaunchProcess, _ program: String) -> Bool {
    func name(_ path: String) -> String? { path.split(separator: "/").last.map(String.init) }
    if let exe = p.exe, name(exe) == program { return true }
    if p.comm == String(program.prefix(15)) { return true }
    return p.arguments?.prefix(3).contains { name($0) == program } ?? false
  }

  /// Why launch `l` is over before any client of it connected, given the young processes
  /// the shell found (`complete`: it could see every process), or nil while it may still
  /// be the start of a client of this display:
  /// - "process exited": no process can be its (after `launchSettle`: an exec settles);
  /// - "the daemon's own program": every process that can be its is `shieldctl`, running
  ///   only its own code (`isOwnProgram`);
  /// - "another display": every such process names another display, or none, in `DISPLAY`
  ///   (readable environment only).
  /// A launch ended here keeps every other protection: the process's ClientStarted, if it
  /// connects after all, starts its own quarantine as for a client that loads no watched
  /// library (the watch's head start is all it loses; see docs/security.md).
  public static func launchOver(
    _ l: Launch, processes: [LaunchProcess], complete: Bool, now: MonotonicTime, ownProgram: String?,
    display: String?
  ) -> String? {
    let candidates = processes.filter { launchCouldBe(l, $0) }
    if candidates.isEmpty {
      return complete && now.seconds(since: l.seen) >= launchSettle ? "process exited" : nil
    }
    var why: Set<String> = []
    for p in candidates {
      if isOwnProgram(exe: p.exe, injection: p.injection, ownProgram: ownProgram) {
        why.insert("the daemon's own program")
      } else if namesAnotherDisplay(p.display, ours: display) {
        why.insert("another display")
      } else {
        return nil
      }
    }
    return why.sorted().joined(separator: " and ")
  }

  /// The shell looked at the processes behind the pending launches (`launchProcesses`):
  /// each launch that cannot be a client of this display ends (`launchOver`); the others
  /// are looked at again once, when `launchSettle` has passed (`launchCheckDue`; the first
  /// look is `launchFirstCheck` after the launch).
  mutating func checkLaunches(_ processes: [LaunchProcess], complete: Bool, fx: inout [Effect]) -> Bool {
    var ended = false
    var kept: [Launch] = []
    for var l in launches {
      if let why = Engine.launchOver(
        l, processes: processes, complete: complete, now: now, ownProgram: ownProgram, display: display)
      {
        endLaunch(l, why: why, client: nil, fx: &fx)
        ended = true
        continue
      }
      let settled = l.seen + .seconds(Engine.launchSettle)
      l.nextCheck = now < settled ? settled : nil
      kept.append(l)
    }
    launches = kept
    return ended
  }

  /// When the shell should look at the processes behind the pending launches next.
  public var launchCheckDue: MonotonicTime? {
    launches.compactMap(\.nextCheck).min()
  }
}

extension Engine {
  // MARK: Events

  /// `Event.clientLaunching`: a launch that holds the shields up (`capture.quarantineOnLaunch`,
  /// or a learned capturer's start).
  mutating func clientLaunching(_ program: String?, _ step: inout Step) {
    // A learned capturer's start (`capture.learn`) holds the shields until its client is
    // identified (its own known session takes over), at most `learnedKnownHold`.
    let learned = isLearnedLaunch(program) ? Engine.learnedKnownHold : nil
    let q = policy.quarantineOnLaunch ? policy.quarantine : nil
    if let hold = [q, learned].compactMap({ $0 }).max() {
      launches.append(
        Launch(seen: now, until: now + hold, program: program, nextCheck: now + .seconds(Engine.launchFirstCheck)))
    }
  }

  /// `Event.launchProcesses`: the processes behind the pending launches (`checkLaunches`).
  mutating func launchProcesses(_ processes: [LaunchProcess], complete: Bool, _ step: inout Step) {
    if checkLaunches(processes, complete: complete, fx: &step.fx) { step.all = true }
  }
}

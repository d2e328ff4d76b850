// Desktop notifications of capture (`notify.enabled`): when a capture starts and secure
// windows are hidden (shields) or censored (the Xorg module), the user is told who captures
// and how many windows are protected. This pure state machine decides when and what; the
// shell (`DBus/DesktopNotifier`) sends it on the session bus from a thread of its own.

/// Decides the desktop notices of capture. No I/O: the shell calls `sync(engine:)` after
/// every engine event (it walks the sessions only when one started: O(1) otherwise) and
/// `censored(...)` for every read the Xorg module censored, carries the notices out, and
/// wakes for `nextDeadline` (then calls `due(now:)`). One notifier follows one engine.
///
/// - **When.** A capture session starts (`Engine.Session`, kinds `request`, `known`,
///   `compositor`; never `quarantine`, which is a precaution, not a capture) or, under
///   server enforcement, the module censors a read. Only when at least one secure window
///   is mapped and protected: nothing is said when nothing is hidden.
/// - **Not spam.** One notice per capturing program (its executable) per `repeatInterval`:
///   a script running xwd every second gives one notice a minute, not sixty. At most one
///   notice per `minInterval`: a capture that starts sooner waits (the latest one; the
///   others are counted in its text) until the interval is over. The shell replaces the
///   previous notification (`replaces_id`) instead of stacking a new one.
public struct CaptureNotifier: Sendable {
  /// How the secure windows are kept out of the capture.
  public enum Protection: String, Sendable, Hashable {
    /// Shield windows (client-side mode).
    case hidden
    /// The Xorg module censors the reads (server enforcement).
    case censored
  }

  /// One desktop notification.
  public struct Notice: Sendable, Hashable {
    /// The capturing program, as shown (executable's file name, else its process name).
    public var program: String
    public var pid: Int?
    /// The secure windows protected when the capture started.
    public var windows: Int
    public var protection: Protection
    /// Why the capture counts (`request`, `known`, `compositor`, `censored`).
    public var trigger: String
    /// Other captures folded into this notice by the rate limit.
    public var others: Int
    /// Text of its own instead of a capture's (the keyboard watch's, `KeyloggerNotice`).
    public var ownSummary: String?
    public var ownBody: String?

    public init(
      program: String, pid: Int?, windows: Int, protection: Protection, trigger: String, others: Int = 0
    ) {
      self.program = program
      self.pid = pid
      self.windows = windows
      self.protection = protection
      self.trigger = trigger
      self.others = others
    }

    /// The notification's summary (one line, no markup).
    public var summary: String {
      if let ownSummary { return ownSummary }
      return "Screen capture: \(windows) secure window\(windows == 1 ? "" : "s") \(protection.rawValue)"
    }

    /// The notification's body, plain text (the shell escapes it for servers that read
    /// markup).
    public var body: String {
      if let ownBody { return ownBody }
      let who = pid.map { "\(program) (pid \($0))" } ?? program
      let what: String
      switch trigger {
      case "known": what = "is a known screen recorder and is connected"
      case "compositor": what = "composites the screen and is not a trusted compositor"
      case "censored": what = "tried to read the screen"
      default: what = "is capturing the screen"
      }
      let verb = protection == .hidden ? "hides" : "censors"
      var s =
        "\(who) \(what). CaptureShield \(verb) \(windows) secure window\(windows == 1 ? "" : "s") from it."
      if others > 0 { s += " \(others) other capture\(others == 1 ? "" : "s") since the last notice." }
      return s
    }

    /// The audit record the shell writes for it.
    public var audit: AuditRecord {
      var f: [(String, AuditRecord.Value)] = [("program", .string(program))]
      if let pid { f.append(("pid", .int(pid))) }
      f += [
        ("windows", .int(windows)), ("protection", .string(protection.rawValue)), ("trigger", .string(trigger)),
        ("others", .int(others)),
      ]
      return AuditRecord("capture-notice", f)
    }
  }

  /// At most one notice this often.
  public var minInterval = PolicyDuration.seconds(5)
  /// The same program is named again only after this long.
  public var repeatInterval = PolicyDuration.seconds(60)

  /// Sessions already considered (their ids are never reused).
  private var seenSessions: Set<Int> = []
  /// The engine's next session id when `sync` last walked the sessions: while it is the
  /// same, no session started since (ids are handed out in order), and nothing is new.
  private var walkedBefore: Int?
  /// How often `sync` walked the sessions (for tests).
  private(set) var walks = 0
  private var lastShown: MonotonicTime?
  private var lastByProgram: [String: MonotonicTime] = [:]
  /// A notice waiting for `minInterval` to pass, and the program key it names.
  private var pending: (notice: Notice, key: String)?
  /// Captures not shown since the last notice.
  private var folded = 0

  public init() {}

  /// When `due(now:)` must be called (a notice waits for the rate limit).
  public var nextDeadline: MonotonicTime? {
    guard pending != nil, let lastShown else { return nil }
    return lastShown + minInterval
  }

  /// The notices for the capture sessions that started since the last call. Under server
  /// enforcement (`serverEnforced`) the windows count as censored. What is protected counts
  /// only when a session starts (nothing is said about a session that started while
  /// nothing was protected), so the sessions are walked only when one started.
  public mutating func sync(engine: Engine, serverEnforced: Bool) -> [Notice] {
    let now = engine.now
    guard engine.nextSessionID != walkedBefore else { return due(now: now) }
    walkedBefore = engine.nextSessionID
    walks += 1
    var out: [Notice] = []
    let fresh = engine.sessions.values.filter { !seenSessions.contains($0.id) }.sorted { $0.id < $1.id }
    guard !fresh.isEmpty else { return due(now: now) }
    // Forget sessions that ended (their ids are never reused).
    seenSessions.formIntersection(engine.sessions.keys)
    for s in fresh {
      seenSessions.insert(s.id)
      guard s.kind != .quarantine, s.isLive(at: now) else { continue }
      let windows = Self.protectedWindows(engine: engine, serverEnforced: serverEnforced)
      out += consider(
        identity: s.identity, client: s.client, windows: windows,
        protection: serverEnforced ? .censored : .hidden, trigger: s.kind.rawValue, now: now)
    }
    return out + due(now: now)
  }

  /// A read of `reader` the Xorg module censored (or refused).
  public mutating func censored(reader: ClientID, identity: ClientIdentity?, engine: Engine, now: MonotonicTime)
    -> [Notice]
  {
    let windows = Self.protectedWindows(engine: engine, serverEnforced: true)
    return consider(
      identity: identity, client: reader, windows: windows, protection: .censored, trigger: "censored", now: now)
  }

  /// The waiting notice, once `minInterval` has passed.
  public mutating func due(now: MonotonicTime) -> [Notice] {
    guard let p = pending, let lastShown, now >= lastShown + minInterval else { return [] }
    pending = nil
    return [show(p.notice, key: p.key, now: now)]
  }

  private mutating func consider(
    identity: ClientIdentity?, client: ClientID, windows: Int, protection: Protection, trigger: String,
    now: MonotonicTime
  ) -> [Notice] {
    guard windows > 0 else { return [] }
    let program = Self.programName(identity, client: client)
    let key = identity?.script ?? identity?.exe ?? program
    if let last = lastByProgram[key], now < last + repeatInterval { return [] }
    let notice = Notice(
      program: program, pid: identity?.pid, windows: windows, protection: protection, trigger: trigger)
    if let lastShown, now < lastShown + minInterval {
      // Wait; the newest capture is named, the earlier waiting one is counted.
      if let p = pending, p.key != key { folded += 1 }
      pending = (notice, key)
      return []
    }
    if let p = pending, p.key != key { folded += 1 }
    pending = nil
    return [show(notice, key: key, now: now)]
  }

  private mutating func show(_ notice: Notice, key: String, now: MonotonicTime) -> Notice {
    var n = notice
    n.others = folded
    folded = 0
    lastShown = now
    lastByProgram[key] = now
    if lastByProgram.count > 256 { lastByProgram = lastByProgram.filter { now < $0.value + repeatInterval } }
    return n
  }

  /// The secure windows a capture cannot read now: mapped, secure by a rule or tag (not
  /// provisional) and shielded, or under server enforcement protected by the module (not
  /// while paused).
  public static func protectedWindows(engine: Engine, serverEnforced: Bool) -> Int {
    if serverEnforced && engine.isPaused { return 0 }
    return engine.windows.values.filter { w in
      w.info.mapped && w.reason.isSecure && w.reason != .provisional
        && (serverEnforced || engine.shielded.contains(w.info.id))
    }.count
  }

  /// How a notice names a client: the file name of its script when an interpreter runs one
  /// (`ClientIdentity.script`), else of its executable, else its process name,
  /// else its X client; characters that could forge or reorder text are replaced, and the
  /// name is cut at 64 characters.
  public static func programName(_ identity: ClientIdentity?, client: ClientID) -> String {
    let raw: String
    if let script = identity?.script, let base = script.split(separator: "/").last {
      raw = String(base)  // an interpreter's script: the tool, not "python3.11"
    } else if let exe = identity?.exe, let base = exe.split(separator: "/").last {
      raw = String(base)
    } else if let comm = identity?.comm, !comm.isEmpty {
      raw = comm
    } else {
      return "an unidentified client (\(client))"
    }
    var s = ""
    for c in raw.unicodeScalars.prefix(64) {
      s.unicodeScalars.append(Escaping.mustEscape(c) ? "?" : c)
    }
    return s
  }

  /// `text` for a server that reads markup in bodies (`body-markup`): `&`, `<`, `>` escaped.
  public static func escapeMarkup(_ text: String) -> String {
    var s = ""
    for c in text {
      switch c {
      case "&": s += "&amp;"
      case "<": s += "&lt;"
      case ">": s += "&gt;"
      default: s.append(c)
      }
    }
    return s
  }
}

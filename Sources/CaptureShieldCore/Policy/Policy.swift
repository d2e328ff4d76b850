import Foundation

/// A position in a policy file, 1-based, as shown in diagnostics (`path:line:col`).
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
  /// The file the position is in (as given by the user, not canonicalised).
  public var file: String
  /// 1-based line.
  public var line: Int
  /// 1-based column, counted in Unicode scalars.
  public var column: Int

  public init(file: String, line: Int, column: Int) {
    self.file = file
    self.line = line
    self.column = column
  }

  public var description: String { "\(file):\(line):\(column)" }
}

/// A string criterion: a glob (`*`, `?`, `[...]`) or, when written `/.../`, a regular
/// expression. Globs and regexes match the whole value.
public struct Pattern: Sendable, Hashable, CustomStringConvertible {
  /// What the user wrote, e.g. `"firefox*"` or `"/^Bank.*$/"`.
  public let source: String
  /// The compiled form.
  let compiled: Compiled

  enum Compiled: Sendable, Hashable {
    case literal(String)
    case glob(Glob)
    case regex(RegexPattern)
  }

  init(source: String, compiled: Compiled) {
    self.source = source
    self.compiled = compiled
  }

  /// Whether `value` matches. `nil` (the fact is unknown) never matches.
  public func matches(_ value: String?) -> Bool {
    guard let value else { return false }
    switch compiled {
    case .literal(let s): return s == value
    case .glob(let g): return g.matches(value)
    case .regex(let r): return r.matches(value)
    }
  }

  public var description: String { source }
}

/// What is known about a window or the client behind it. Every field is optional: an
/// unknown fact never matches a criterion that needs it.
public struct Facts: Sendable, Hashable, Codable {
  /// WM_CLASS class part.
  public var `class`: String?
  /// WM_CLASS instance part.
  public var instance: String?
  /// `_NET_WM_NAME` or `WM_NAME`.
  public var title: String?
  /// Executable path of the owning client (`/proc/PID/exe`, from the X-Resource PID).
  public var exe: String?
  /// Process name (`/proc/PID/comm`).
  public var comm: String?
  /// PID of the owning client as the X server knows it (X-Resource), not `_NET_WM_PID`.
  public var pid: Int?
  /// Real uid of the owning process.
  public var uid: Int?

  public init(
    class: String? = nil, instance: String? = nil, title: String? = nil, exe: String? = nil,
    comm: String? = nil, pid: Int? = nil, uid: Int? = nil
  ) {
    self.class = `class`
    self.instance = instance
    self.title = title
    self.exe = exe
    self.comm = comm
    self.pid = pid
    self.uid = uid
  }
}

/// One criterion of a matcher, for explanations.
public enum Criterion: String, Sendable, CaseIterable, Codable {
  case `class`, instance, title, exe, comm, pid, uid
}

/// A set of criteria, all optional and AND-ed. An empty matcher is rejected by the parser.
public struct Matcher: Sendable, Hashable {
  public var `class`: Pattern?
  public var instance: Pattern?
  public var title: Pattern?
  public var exe: Pattern?
  public var comm: Pattern?
  public var pid: Int?
  public var uid: Int?
  /// Optional label shown in explanations and audit records.
  public var name: String?
  /// Where the matcher was written.
  public var location: SourceLocation?

  public init(
    class: Pattern? = nil, instance: Pattern? = nil, title: Pattern? = nil, exe: Pattern? = nil,
    comm: Pattern? = nil, pid: Int? = nil, uid: Int? = nil, name: String? = nil,
    location: SourceLocation? = nil
  ) {
    self.class = `class`
    self.instance = instance
    self.title = title
    self.exe = exe
    self.comm = comm
    self.pid = pid
    self.uid = uid
    self.name = name
    self.location = location
  }

  /// The outcome of one criterion against the facts.
  public struct CriterionResult: Sendable, Hashable {
    public var criterion: Criterion
    public var expected: String
    public var actual: String?
    public var matched: Bool
  }

  /// Every criterion this matcher has, evaluated (no short-circuit), for `explain`.
  public func evaluate(_ f: Facts) -> [CriterionResult] {
    var out: [CriterionResult] = []
    func str(_ c: Criterion, _ p: Pattern?, _ v: String?) {
      guard let p else { return }
      out.append(.init(criterion: c, expected: p.source, actual: v, matched: p.matches(v)))
    }
    str(.class, self.class, f.class)
    str(.instance, instance, f.instance)
    str(.title, title, f.title)
    str(.exe, exe, f.exe)
    str(.comm, comm, f.comm)
    if let pid {
      out.append(.init(criterion: .pid, expected: String(pid), actual: f.pid.map(String.init), matched: f.pid == pid))
    }
    if let uid {
      out.append(.init(criterion: .uid, expected: String(uid), actual: f.uid.map(String.init), matched: f.uid == uid))
    }
    return out
  }

  /// Whether every criterion matches (short-circuits; the hot path).
  public func matches(_ f: Facts) -> Bool {
    if let pid, f.pid != pid { return false }
    if let uid, f.uid != uid { return false }
    if let p = self.class, !p.matches(f.class) { return false }
    if let p = instance, !p.matches(f.instance) { return false }
    if let p = comm, !p.matches(f.comm) { return false }
    if let p = exe, !p.matches(f.exe) { return false }
    if let p = title, !p.matches(f.title) { return false }
    return true
  }

  /// Criteria that depend only on the client, not on the window (for new windows whose
  /// properties are not known yet).
  public var isClientOnly: Bool {
    self.class == nil && instance == nil && title == nil
  }

  /// A short human description, e.g. `name "bank" (policy.json5:4:5)`.
  public var label: String {
    var s = name.map { "\"\($0)\"" } ?? "rule"
    if let location { s += " (\(location))" }
    return s
  }
}

/// Whether secure windows are shielded always, or only while someone captures.
public enum ShieldWhen: String, Sendable, Hashable, Codable {
  case always, capturing
}

/// What happens to shields when the daemon dies.
public enum FailMode: String, Sendable, Hashable, Codable {
  /// Shields vanish with the daemon's connection.
  case open
  /// Shields outlive the daemon (RetainPermanent) until a new daemon adopts them.
  case closed
}

/// Whether a shield takes input (blocks clicks to the window) or lets it through.
public enum ShieldInput: String, Sendable, Hashable, Codable {
  /// Input-transparent: the user can still type and click in the blanked window.
  case passthrough
  /// The shield swallows pointer input.
  case block
}

/// A duration in policy files: `"250ms"`, `"2s"`, `"1.5m"`, `"1h"`.
public struct PolicyDuration: Sendable, Hashable, Comparable, CustomStringConvertible {
  public var nanoseconds: UInt64
  public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
  public static func seconds(_ s: Double) -> PolicyDuration { .init(nanoseconds: UInt64(s * 1e9)) }
  public static func milliseconds(_ ms: UInt64) -> PolicyDuration { .init(nanoseconds: ms * 1_000_000) }
  public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }
  public var seconds: Double { Double(nanoseconds) / 1e9 }
  public var description: String {
    if nanoseconds % 1_000_000_000 == 0 { return "\(nanoseconds / 1_000_000_000)s" }
    if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000)ms" }
    return "\(seconds)s"
  }

  /// Parses `N(ms|s|m|h)` with an optional fraction; nil when malformed.
  public init?(parsing text: String) {
    let units: [(String, Double)] = [("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9)]
    for (suffix, scale) in units where text.hasSuffix(suffix) {
      let number = text.dropLast(suffix.count)
      guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
        number.first != ".", number.filter({ $0 == "." }).count <= 1,
        let v = Double(number), v.isFinite, v >= 0, v * scale < 1e18
      else { return nil }
      self.nanoseconds = UInt64(v * scale)
      return
    }
    return nil
  }
}

/// How long a client that sent a capture request keeps its capture session while it stays
/// connected (`capture.hold`).
public enum CaptureHold: Sendable, Hashable, CustomStringConvertible {
  /// Until the client disconnects (then `capture.linger` more): a patient capturer that
  /// waits longer than the linger between frames never finds the shields down.
  case connected
  /// Until this long after its last capture request (`capture.linger` if that is longer);
  /// `"0s"` is the linger alone.
  case duration(PolicyDuration)

  public var description: String {
    switch self {
    case .connected: return "connected"
    case .duration(let d): return d.description
    }
  }
}

/// Policy for the copied-text guard (docs/clipboard.md). Parsed and validated here.
public struct ClipboardPolicy: Sendable, Hashable {
  public var enabled: Bool = true
  public var sources: [Matcher] = []
  public var readers: ReaderMode = .focused
  public var allow: [Matcher] = []
  public var deny: [Matcher] = []
  public var clearAfter: PolicyDuration = .seconds(30)
  public var maxReads: Int? = nil
  public var selections: [String] = ["CLIPBOARD", "PRIMARY"]

  public enum ReaderMode: String, Sendable, Hashable, Codable {
    /// Only the client owning the input focus window gets the text.
    case focused
    /// Only readers matched by `allow` get it.
    case allowList = "allowlist"
  }
  public init() {}
}

/// A complete, validated policy: the merge of every loaded file.
public struct Policy: Sendable, Hashable {
  public var version: Int = 1
  /// Window rules, first match wins.
  public var secure: [Matcher] = []
  /// The built-in secure rules (`defaultSecure`: password managers and credential prompts),
  /// tried after `secure`; empty when a file sets `replaceDefaultSecure: true`.
  public var builtinSecure: [Matcher] = Policy.defaultSecure
  /// Clients that may read pixels without starting a capture session.
  public var captureAllow: [Matcher] = []
  /// Clients that start a capture session as soon as they connect.
  public var captureKnown: [Matcher] = Policy.defaultKnownCapturers
  /// How long a session lasts after its client's exit (and, with a `hold` duration, at
  /// least how long after its last capture request).
  public var linger: PolicyDuration = .seconds(2)
  /// How long a connected client's capture-request session lasts: while it stays connected
  /// (the default), or a duration after its last capture request.
  public var hold: CaptureHold = .connected
  /// `capture.idle`: a known capturer's sessions shield nothing after this long without a
  /// capture request, until its next sign of capture (nil: never idle).
  public var idle: PolicyDuration? = Policy.defaultIdle
  /// The default `capture.idle` (docs/performance.md, "Recorders that sit open").
  public static let defaultIdle: PolicyDuration? = .seconds(5)
  /// Shield every non-allowed new client's screen for this long (off when nil).
  public var quarantine: PolicyDuration? = nil
  /// With `quarantine` on: start it when an X client program starts or a process loads the
  /// X client library (libxcb), a few milliseconds before that process can connect,
  /// instead of at its connection.
  public var quarantineOnLaunch: Bool = true
  /// Whether `captureAllow` still trusts a program whose process may run code that is not
  /// its own: started with `LD_PRELOAD` or `LD_AUDIT`, with `LD_LIBRARY_PATH` naming a
  /// directory others than root can write, or traced (ptrace) by another process
  /// (`ClientIdentity.injection`). Off by default: such a client is not allowed.
  public var allowInjected: Bool = false
  /// `capture.learn`: whether the daemon learns per program file (`CaptureHistory`): a
  /// program that made a capture request is known from its next connection, and one seen
  /// starting `CaptureHistory.quietAfter` times without capturing starts no quarantine.
  public var learn: Bool = true
  /// Compositing managers trusted as the compositor (`capture.compositors`, appended to
  /// `defaultCompositors` unless `capture.replaceDefaultCompositors`): see `compositorTrust`.
  public var compositors: [Matcher] = Policy.defaultCompositors
  public var when: ShieldWhen = .capturing
  /// Closed by default: a same-user process that kills the daemon (or a crash) leaves the
  /// shields up until the next daemon adopts them; open, every frame until the restart
  /// showed the secret (shieldbench row 12: 68 of 95 frames over 2.3 s under the systemd
  /// unit's 2 s restart; closed: 0, for 0.1 s more dark after the capture ended).
  public var failMode: FailMode = .closed
  public var input: ShieldInput = .passthrough
  /// Text drawn on shields so users see why the window went dark.
  public var label: String = "Hidden by CaptureShield"
  public var clipboard = ClipboardPolicy()
  /// `notify.enabled`: a desktop notification (org.freedesktop.Notifications) when a
  /// capture starts and secure windows are hidden or censored (`CaptureNotifier`).
  public var notify: Bool = true
  /// `accessibility.passwordFields`: the daemon follows the session's accessibility bus
  /// (AT-SPI), turns accessibility on for apps that wait for an assistive client, and makes
  /// a showing password text field's area (and, for now, its whole window) secure.
  public var passwordFields: Bool = true
  /// `keyloggers.*`: the client-side keyboard watch (`KeyloggerPolicy`).
  public var keyloggers = KeyloggerPolicy()
  /// The files this policy was built from, in load order.
  public var sources: [String] = []

  public init() {}

  /// The standard X11 compositing managers, trusted out of the box as the owner of
  /// `_NET_WM_CM_Sn` when they run a root-owned program from a system directory.
  public static let defaultCompositors: [Matcher] = defaultCompositorNames.map { n in
    Matcher(exe: try! Pattern.parse("*/" + n), name: "default compositor: \(n)")
  }

  /// The programs of `defaultCompositors`. Under the Xorg module the daemon grants the one
  /// running (`CompositorGrant`); the installed snippet lists none.
  public static let defaultCompositorNames = [
    "xfwm4", "mutter", "gnome-shell", "muffin", "cinnamon", "marco", "metacity", "kwin_x11", "picom", "compton",
    "compiz",
  ]

  /// Where a trusted compositor's program must be (prefixes of its executable's path).
  public static let systemDirectories = [
    "/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/", "/usr/lib/", "/usr/libexec/", "/usr/local/bin/", "/usr/local/lib/",
  ]

  /// Screen recorders and screen-share apps treated as capturing from the moment they
  /// connect. A file's `capture.known` list is appended to this unless it sets
  /// `capture.replaceDefaultKnown: true`.
  public static let defaultKnownCapturers: [Matcher] = {
    let names = [
      "ffmpeg", "obs", "simplescreenrecorder", "vokoscreen*", "kazam", "peek", "recordmydesktop",
      "gpu-screen-recorder", "zoom", "ZoomWebinar", "teams*", "skypeforlinux", "Discord",
      "slack", "vlc", "gst-launch-1.0", "x11vnc", "x0vncserver", "xrdp*", "anydesk", "teamviewer*",
      "rustdesk", "byzanz-record", "ssr-glinject", "wf-recorder",
      // xpra (shadow, screenshot) is a python script: matched by its script
      // (`ClientIdentity.script`); Debian's x0vncserver is a wrapper around X0tigervnc.
      "xpra", "X0tigervnc",
    ]
    return names.map { n in
      Matcher(exe: try! Pattern.parse("*/" + n), name: "default: \(n)")
    }
  }()
}

/// An X window id. Plain integers so the core needs no X types.
public typealias WindowID = UInt32

/// An X client, named by its resource-id base (what RECORD records carry and what
/// X-Resource accepts as a client spec). Bases are reused after a client dies, so the
/// core never keeps per-client state past `clientGone`.
public struct ClientID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
  public var base: UInt32
  public init(_ base: UInt32) { self.base = base }
  public static func < (a: Self, b: Self) -> Bool { a.base < b.base }
  public var description: String { "0x" + String(base, radix: 16) }
}

/// Monotonic time in nanoseconds. The core has no clock: every event comes with one.
public struct MonotonicTime: Sendable, Hashable, Comparable, Codable {
  public var nanoseconds: UInt64
  public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
  public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }
  public static func + (a: Self, d: PolicyDuration) -> Self {
    .init(nanoseconds: a.nanoseconds &+ d.nanoseconds)
  }
  /// Seconds since `earlier` (0 when `earlier` is later).
  public func seconds(since earlier: Self) -> Double {
    nanoseconds >= earlier.nanoseconds ? Double(nanoseconds - earlier.nanoseconds) / 1e9 : 0
  }
  public static func seconds(_ s: Double) -> Self { .init(nanoseconds: UInt64(s * 1e9)) }
}

/// The value of the `_CAPTURE_SHIELD_SECURE` property on a window, decoded.
public enum TagState: Sendable, Hashable, Codable {
  /// No property.
  case absent
  /// CARDINAL/32 value 1: the window asks to be secure.
  case secure
  /// CARDINAL/32 value 0: explicitly not tagged (policy rules still apply).
  case notSecure
  /// Anything else (wrong type, format or value). Treated as secure: fail safe.
  case malformed

  /// Decodes a property reply. `type` is true when the property type is CARDINAL.
  public static func decode(isCardinal: Bool, format: UInt8, bytes: [UInt8]) -> TagState {
    if !isCardinal && format == 0 && bytes.isEmpty { return .absent }
    guard isCardinal, format == 32, bytes.count == 4 else { return .malformed }
    let v = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    switch v {
    case 1: return .secure
    case 0: return .notSecure
    default: return .malformed
    }
  }
}

/// What the shell knows of a window.
public struct WindowInfo: Sendable, Hashable {
  public var id: WindowID
  /// The client that created the window.
  public var client: ClientID?
  /// Window and client facts for policy matching.
  public var facts: Facts
  public var tag: TagState
  /// Whether WM_CLASS / title have been read after the window was mapped (or seen set).
  /// Until then the window may be shielded provisionally (see `Engine`).
  public var propertiesKnown: Bool
  public var mapped: Bool
  /// Which notices the app asked for with `_CAPTURE_SHIELD_NOTIFY` (none unless it did).
  public var notices: CaptureNotices
  /// An InputOnly window: it has no pixels, and neither can any window inside it (X allows
  /// only InputOnly children), so it is never shielded (a shield there fails, BadMatch).
  public var inputOnly: Bool
  /// The app's secure views (`_CAPTURE_SHIELD_VIEWS`) and the daemon's
  /// (`_CAPTURE_SHIELD_POLICY_VIEWS`); see `viewReason`.
  public var appViews: ViewState = .none
  public var policyViews: ViewState = .none

  public init(
    id: WindowID, client: ClientID? = nil, facts: Facts = Facts(), tag: TagState = .absent,
    propertiesKnown: Bool = true, mapped: Bool = true, notices: CaptureNotices = [], inputOnly: Bool = false
  ) {
    self.inputOnly = inputOnly
    self.id = id
    self.client = client
    self.facts = facts
    self.tag = tag
    self.propertiesKnown = propertiesKnown
    self.mapped = mapped
    self.notices = notices
  }
}

/// The value of the `_CAPTURE_SHIELD_NOTIFY` property on a window, decoded: the
/// ClientMessages its app opted in to (PROTOCOL.md section 2). Apps that never set it get
/// none (a toolkit logs every ClientMessage it does not know).
public struct CaptureNotices: OptionSet, Sendable, Hashable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }
  /// Bit 0: `_CAPTURE_SHIELD_CAPTURE_CHANGED` when capture starts or stops.
  public static let captureChanged = CaptureNotices(rawValue: 1)

  /// Decodes a property reply (`isCardinal`: the type is CARDINAL): CARDINAL/32, the first
  /// item a bit mask. Anything else (absent, another type or format) asks for nothing.
  public static func decode(isCardinal: Bool, format: UInt8, bytes: [UInt8]) -> CaptureNotices {
    guard isCardinal, format == 32, bytes.count >= 4 else { return [] }
    let v = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    return CaptureNotices(rawValue: v).intersection(.captureChanged)
  }
}

/// What is known about an X client's process.
public struct ClientIdentity: Sendable, Hashable, Codable {
  public var pid: Int?
  public var exe: String?
  public var comm: String?
  public var uid: Int?
  public var cmdline: [String]?
  /// Why identification failed, when it did (TCP client, process gone, ...).
  public var failure: String?
  /// How long the process had been running when it was identified, in seconds (10 ms
  /// resolution: /proc's start time is in clock ticks).
  public var processAge: Double?
  /// Why the process may run code that is not its program's: `LD_PRELOAD=...` or
  /// `LD_AUDIT=...` in its environment, `LD_LIBRARY_PATH names DIR` (a directory others
  /// than root can write), `traced by PID n`, or `environment unreadable` (nil: none of
  /// these). An allow rule on `exe` trusts whatever runs inside that
  /// program; `capture.allowInjected` decides whether it still does then.
  public var injection: String?
  /// Whether the program file (`/proc/PID/exe`) is owned by root and writable by nobody
  /// else (nil: not known). With its path in a system directory, what lets a compositor be
  /// trusted by name (`Policy.compositorTrust`).
  public var exeRootOwned: Bool?
  /// `LD_LIBRARY_PATH=...` from its initial environment, when set: the loader may take a
  /// library (libxcb, say) from another directory. Only the exemption of the daemon's own
  /// program looks at it (`Engine.isOwnProgram`).
  public var loaderPath: String?
  /// The script the process runs when its executable is an interpreter (python, perl,
  /// ruby, a shell): an absolute path, resolved against its working directory
  /// (`InterpretedProgram`). Names the program in audits and notices, and `capture.known`
  /// rules match it as they match `exe`; allow rules never do.
  public var script: String?
  /// The program file's identity (`stat` of `/proc/PID/exe`, or of `script` when there is
  /// one): what `capture.learn` keys its history by (`CaptureHistory`).
  public var programFile: CaptureHistory.ProgramFile?

  public init(
    pid: Int? = nil, exe: String? = nil, comm: String? = nil, uid: Int? = nil,
    cmdline: [String]? = nil, failure: String? = nil, processAge: Double? = nil,
    injection: String? = nil, exeRootOwned: Bool? = nil
  ) {
    self.injection = injection
    self.exeRootOwned = exeRootOwned
    self.pid = pid
    self.exe = exe
    self.comm = comm
    self.uid = uid
    self.cmdline = cmdline
    self.failure = failure
    self.processAge = processAge
  }

  /// Facts for matching `capture.*` rules (no window facts).
  public var facts: Facts { Facts(exe: exe, comm: comm, pid: pid, uid: uid) }
  /// The same with the script in place of the executable (nil: no script).
  public var scriptFacts: Facts? { script.map { Facts(exe: $0, comm: comm, pid: pid, uid: uid) } }
  public var isKnown: Bool { pid != nil }
  /// The path `programFile` was read from: the script, else the executable.
  public var programPath: String? { script ?? exe }
}

/// A request by which a client can read pixels it does not own.
public struct CaptureRequest: Sendable, Hashable, Codable {
  /// e.g. "GetImage", "MIT-SHM ShmGetImage", "Composite RedirectSubwindows(Manual)".
  public var kind: String
  /// The drawable (or window) it targets, when known.
  public var target: UInt32?
  /// A request that defeats the child shield itself (manual redirection of a secure
  /// window): always treated as capture and flagged in the audit log.
  public var bypassesShield: Bool

  public init(kind: String, target: UInt32? = nil, bypassesShield: Bool = false) {
    self.kind = kind
    self.target = target
    self.bypassesShield = bypassesShield
  }
}

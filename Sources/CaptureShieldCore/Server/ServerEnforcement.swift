// Server enforcement (the CaptureShield Xorg module is loaded): the daemon decides, the
// server enforces. This pure state machine turns the engine's decisions into what the
// module must be told: policy tags, grants, whether protection is on, and audit records of
// the reads the module censored.

/// What the daemon tells the Xorg module, derived from the engine's state. No I/O: the
/// shell calls `sync(engine:)` after every engine event and `censored(...)` for every
/// CaptureNotify, and carries out the effects.
///
/// - **Policy tags.** A window the engine wants protected whose app did not tag it itself
///   (a `secure` rule, a malformed tag, `shieldctl shield`, a provisional window) gets
///   `_CAPTURE_SHIELD_POLICY` from the daemon; the module protects it like a tagged one.
///   Only trusted clients may write that property, so an app (or anyone else) cannot
///   remove it. An app's own `_CAPTURE_SHIELD_SECURE` is the app's call: the module honours
///   it whatever the daemon says.
/// - **Grants.** Clients that `capture.allow` names are granted as soon as they are
///   identified (never before); a policy change that no longer allows one revokes it. The
///   module ends a grant when its client disconnects. The compositor the policy trusts
///   (`capture.compositors`) is granted too, per connection, once `CompositorGrant.decide`
///   accepts who runs and started it (`learned(_:)` gives the facts); a refused one is
///   audited once (`compositor-refused`) and draws secure windows black.
/// - **Pause.** While paused, protection is off in the module (tagged windows are not
///   censored) and nobody new is granted; `resume` turns it back on.
/// - **Audit.** Each censored or refused read is audited with the reader's identity, at
///   most once per reader (client and process) and drawable per `auditInterval`; the repeats are counted in the
///   next record.
public struct ServerEnforcement: Sendable {
  /// What the shell must send to the module (or write to the audit log).
  public enum Effect: Sendable, Hashable {
    case tag(WindowID)
    case untag(WindowID)
    /// `_CAPTURE_SHIELD_POLICY` = 0: the window is classified, not secure. The module holds a
    /// new top-level of an untrusted client secure until the daemon classifies it (while
    /// `classifies`); `tag` and `untag` classify too.
    case classify(WindowID)
    case grant(ClientID)
    case revoke(ClientID)
    /// Protection of secure windows on (true) or off (paused).
    case protect(Bool)
    case audit(AuditRecord)
  }

  /// Windows the daemon tagged with `_CAPTURE_SHIELD_POLICY`.
  public private(set) var tagged: Set<WindowID> = []
  /// Whether the daemon classifies every window for the module (it follows every window:
  /// `WindowWatch.all`); the shell says so to the module (`_CAPTURE_SHIELD_CLASSIFY`).
  public var classifies = false
  /// Windows classified since they were mapped with their facts read (a `classify`, or
  /// their `tag`).
  public private(set) var classified: Set<WindowID> = []
  /// Clients granted by the daemon.
  public private(set) var granted: Set<ClientID> = []
  /// Whether the module's protection is on.
  public private(set) var protecting = true
  /// How often one reader's reads of one drawable are audited at most.
  public var auditInterval = PolicyDuration.seconds(5)
  /// The daemon's user: only a compositor of this user is granted.
  public var daemonUID: Int
  /// Compositors the policy trusts but the daemon does not grant, and why.
  public private(set) var refusedCompositors: [ClientID: String] = [:]
  /// Clients whose grant the module refused (it re-checks the grantee's kernel identity:
  /// injected code, a handed-over connection): never granted again.
  public private(set) var grantRefused: Set<ClientID> = []
  /// Who started each compositor process (by PID), as the shell found it.
  private var origins: [Int: CompositorOrigin] = [:]
  private var lastAudit: [AuditKey: (at: MonotonicTime, suppressed: Int)] = [:]

  /// One reader (its resource base is reused by the next client once it exits, so the
  /// process too) and what it read.
  struct AuditKey: Hashable, Sendable {
    var reader: ClientID
    var pid: Int?
    var drawable: UInt32
  }

  public init(daemonUID: Int = 0) { self.daemonUID = daemonUID }

  /// The PIDs of compositor connections whose origin the shell must find (`learned(_:)`)
  /// before the next `sync`.
  public func originsNeeded(engine: Engine) -> [Int] {
    let pids = engine.clients.values.filter { $0.clientClass != .allowed && engine.isTrustedCompositor($0.id) }
      .compactMap { $0.identity?.pid }
    return Set(pids).subtracting(origins.keys).sorted()
  }

  /// The module refused the grant of `client` (BadAccess; GetClientTrust says none).
  public mutating func moduleRefusedGrant(_ client: ClientID) {
    granted.remove(client)
    grantRefused.insert(client)
  }

  /// Who started the compositor process `origin.pid` (kept while it is a compositor).
  public mutating func learned(_ origin: CompositorOrigin) { origins[origin.pid] = origin }

  /// Which windows the daemon follows under server enforcement.
  public enum WindowWatch: String, Sendable, Codable, Hashable {
    /// Every window: the X server delivers every top-level's structure events to the
    /// daemon, which reads each new window's facts for the policy's rules.
    case all
    /// Only windows whose tag was written (the module reports each, protocol 1.2) and
    /// windows named by `shieldctl shield`/`unshield`: no event per new window.
    case tagged
  }

  /// `.all` when a rule looks at windows (`secure`, the built-in secure rules unless
  /// `replaceDefaultSecure`, `clipboard.sources`: their facts are
  /// needed for every window; `accessibility.passwordFields`: a field's window is any window) or the module cannot report tags (older than 1.2); else
  /// `.tagged`. Nothing is lost then: the module protects an app's tag by itself, and the
  /// daemon's own part (policy tags) needs rules about windows.
  public static func windowWatch(policy: Policy, moduleReportsTags: Bool) -> WindowWatch {
    moduleReportsTags && policy.secure.isEmpty && policy.builtinSecure.isEmpty && policy.clipboard.sources.isEmpty
      && !policy.passwordFields  // a password field's window is found among all windows
      ? .tagged : .all
  }

  /// A window the module holds until the daemon answers is answered once it is mapped and
  /// its facts are read (the engine decided with them): its tag when the engine protects
  /// it, else `classify` (not secure). Windows that are gone are forgotten.
  mutating func classify(engine: Engine) -> [Effect] {
    guard classifies else { return [] }
    var fx: [Effect] = []
    for (w, s) in engine.windows.sorted(by: { $0.key < $1.key })
    where s.info.mapped && s.info.propertiesKnown && !s.info.inputOnly && !classified.contains(w) {
      classified.insert(w)
      if !tagged.contains(w) { fx.append(.classify(w)) }
    }
    classified = classified.filter { engine.windows[$0] != nil }
    return fx
  }

  /// What changed since the last call, given the engine's state now. The engine runs with
  /// `shield.when: always` in this mode, so `engine.shielded` is "protected".
  public mutating func sync(engine: Engine) -> [Effect] {
    var fx: [Effect] = []
    let paused = engine.isPaused
    if protecting == paused {
      protecting = !paused
      fx.append(.protect(protecting))
    }
    // The app's own tag protects its window already; everything else the engine protects
    // gets the daemon's policy tag.
    // Secure views: the module reads the view properties itself (a policy tag would make
    // the whole window secret).
    let want = Set(
      engine.shielded.filter {
        engine.windows[$0].map { $0.info.tag != .secure && !$0.reason.isViews && $0.reason != .malformedViews }
          ?? false
      })
    for w in tagged.subtracting(want).sorted() {
      tagged.remove(w)
      // A window that is gone needs nothing (its properties went with it).
      if engine.windows[w] != nil { fx.append(.untag(w)) }
    }
    for w in want.subtracting(tagged).sorted() {
      tagged.insert(w)
      fx.append(.tag(w))
    }
    fx += classify(engine: engine)
    var allowed = Set<ClientID>()
    var refusals: [ClientID: String] = [:]
    for c in engine.clients.values where c.identity != nil {
      if c.clientClass == .allowed {
        allowed.insert(c.id)
      } else if engine.isTrustedCompositor(c.id) {
        let origin = c.identity?.pid.flatMap { origins[$0] }
        switch CompositorGrant.decide(identity: c.identity, origin: origin, daemonUID: daemonUID) {
        case .grant: allowed.insert(c.id)
        case .refuse(let why): refusals[c.id] = why
        }
      }
    }
    for (c, why) in refusals.sorted(by: { $0.key.base < $1.key.base }) where refusedCompositors[c] != why {
      let id = engine.clients[c]?.identity
      fx.append(
        .audit(
          AuditRecord(
            "compositor-refused",
            [
              ("client", .string(c.description)), ("pid", id?.pid.map { .int($0) } ?? "-"),
              ("exe", .string(id?.exe ?? "-")), ("reason", .string(why)),
            ])))
    }
    refusedCompositors = refusals
    // Only the compositors' origins are kept: a PID used again by another process later
    // starts from nothing.
    let compositors = Set(
      engine.clients.values.filter { engine.isTrustedCompositor($0.id) }.compactMap { $0.identity?.pid })
    origins = origins.filter { compositors.contains($0.key) }
    grantRefused = grantRefused.filter { engine.clients[$0] != nil }
    allowed.subtract(grantRefused)
    for c in granted.subtracting(allowed).sorted(by: { $0.base < $1.base }) {
      granted.remove(c)
      // A client that is gone lost its grant with its connection.
      if engine.clients[c] != nil { fx.append(.revoke(c)) }
    }
    if !paused {
      for c in allowed.subtracting(granted).sorted(by: { $0.base < $1.base }) {
        granted.insert(c)
        fx.append(.grant(c))
      }
    }
    return fx
  }

  /// The module censored (`denied`: refused) a read by `reader` of `drawable`.
  public mutating func censored(
    reader: ClientID, drawable: UInt32, request: String, denied: Bool, identity: ClientIdentity?,
    now: MonotonicTime
  ) -> [Effect] {
    let key = AuditKey(reader: reader, pid: identity?.pid, drawable: drawable)
    if let last = lastAudit[key], now < last.at + auditInterval {
      lastAudit[key]!.suppressed += 1
      return []
    }
    let repeats = lastAudit[key]?.suppressed ?? 0
    lastAudit[key] = (now, 0)
    // Old entries go (a recorder reading every frame keeps one entry).
    if lastAudit.count > 4096 { lastAudit = lastAudit.filter { now < $0.value.at + auditInterval } }
    var fields: [(String, AuditRecord.Value)] = [
      ("client", .string(reader.description)), ("drawable", .string("0x" + String(drawable, radix: 16))),
      ("request", .string(request)), ("action", .string(denied ? "denied" : "censored")),
      ("repeats", .int(repeats)),
    ]
    if let identity {
      fields += [("pid", identity.pid.map { .int($0) } ?? "-"), ("exe", .string(identity.exe ?? "-"))]
    } else {
      fields.append(("exe", "unidentified"))
    }
    return [.audit(AuditRecord("capture-censored", fields))]
  }
}

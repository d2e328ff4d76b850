// The keyboard watch's state machine (client-side mode of secure input): which
// clients listen to the keyboard and how, when each is audited, and when the user is told.
// Pure (see KeylogDecoder.swift for the decoding and the overview).

/// Which clients listen to the keyboard, audited once per client and kind, and the notice
/// due when a secure window has the keyboard focus while such a client is connected: once
/// per client per focus period (a focus period starts when a secure window gets the focus
/// and ends when the focus leaves it).
///
/// The shell feeds it: `decide` for each client it identified (allowed by
/// `keyloggers.allow` or not), `observe` for each listening request, `keymapQueried` for
/// each QueryKeymap, `clientGone` at ClientDied, and `focusChanged` whenever it learns
/// where the focus is.
public struct KeyloggerWatch: Sendable {
  /// QueryKeymap this many times within `keymapPollWindowMs` counts as polling: 4 per
  /// second or faster. (A poller every 200 ms saw 2 of 13 keys held 100 ms each; one every
  /// 100 ms, 12 of 13; see docs/security.md, "Known limitations".)
  public var keymapPollCount = 5
  public var keymapPollWindowMs: UInt32 = 1000

  /// A client's first request of one kind: the audit record.
  public struct Finding: Sendable, Hashable {
    public var client: ClientID
    public var signal: KeyListenSignal
    public init(client: ClientID, signal: KeyListenSignal) {
      self.client = client
      self.signal = signal
    }

    /// `keylogger-suspected`, with the client's identity fields (as capture records have
    /// them: pid, exe, comm, uid).
    public func audit(identity: [(String, AuditRecord.Value)]) -> AuditRecord {
      var f: [(String, AuditRecord.Value)] = [
        ("client", .string(client.description)), ("kind", .string(signal.kind.rawValue)),
        ("request", .string(signal.request)),
        ("target", .string(signal.window.map { "0x" + String($0, radix: 16) } ?? "-")),
        ("what", .string(signal.detail)),
      ]
      f += identity
      return AuditRecord("keylogger-suspected", f)
    }
  }

  /// The kinds each connected, not allowed client was found doing (the first of each).
  public private(set) var suspects: [ClientID: [KeyListenKind: KeyListenSignal]] = [:]
  /// Clients decided: true when `keyloggers.allow` allows them.
  public private(set) var decided: [ClientID: Bool] = [:]
  /// The QueryKeymap times (ms, server time) of each client, the last `keymapPollCount`.
  private var keymapTimes: [ClientID: [UInt32]] = [:]
  /// The secure window that has the focus (the focus period's), nil when none has it.
  public private(set) var secureFocus: UInt32?
  /// The suspects told about in the current focus period.
  public private(set) var told: Set<ClientID> = []

  public init() {}

  /// Whether the client still needs `decide` (its identity checked against the policy).
  public func needsDecision(_ client: ClientID) -> Bool { decided[client] == nil }

  /// The policy's decision for `client`: an allowed one is never audited nor named.
  public mutating func decide(_ client: ClientID, allowed: Bool) {
    decided[client] = allowed
    if allowed {
      suspects[client] = nil
      keymapTimes[client] = nil
    }
  }

  /// A listening request: a finding when it is the client's first of this kind and the
  /// client is not allowed (an undecided client counts as not allowed).
  public mutating func observe(_ client: ClientID, _ signal: KeyListenSignal) -> Finding? {
    guard decided[client] != true, suspects[client]?[signal.kind] == nil else { return nil }
    suspects[client, default: [:]][signal.kind] = signal
    return Finding(client: client, signal: signal)
  }

  /// A QueryKeymap at server time `ms`: a `keymapPolling` finding when it is the
  /// `keymapPollCount`-th within `keymapPollWindowMs` (once per client).
  public mutating func keymapQueried(_ client: ClientID, atMs ms: UInt32) -> Finding? {
    guard decided[client] != true, suspects[client]?[.keymapPolling] == nil else { return nil }
    var times = keymapTimes[client] ?? []
    times.append(ms)
    if times.count > keymapPollCount { times.removeFirst(times.count - keymapPollCount) }
    keymapTimes[client] = times
    guard times.count == keymapPollCount, ms &- times[0] <= keymapPollWindowMs else { return nil }
    keymapTimes[client] = nil
    let hz = Double(keymapPollCount - 1) * 1000 / Double(max(1, ms &- times[0]))
    let rate = hz > 1000 ? "more than 1000" : String(Int(hz.rounded()))
    return observe(
      client,
      KeyListenSignal(
        kind: .keymapPolling, request: "QueryKeymap", window: nil,
        detail: "\(keymapPollCount) QueryKeymap within \(ms &- times[0]) ms (\(rate) per second)"))
  }

  /// The client disconnected: forgotten (its id may be reused by another client).
  public mutating func clientGone(_ client: ClientID) {
    suspects[client] = nil
    decided[client] = nil
    keymapTimes[client] = nil
    told.remove(client)
  }

  /// Where the focus is: `secureWindow` is the secure window that has it (or whose
  /// descendant has it), nil when no secure window has it. A new focus period starts
  /// when a secure window gets the focus (or another secure window does).
  public mutating func focusChanged(secureWindow: UInt32?) {
    guard secureWindow != secureFocus else { return }
    secureFocus = secureWindow
    told = []
  }

  /// The suspects the user must be told about now: while a secure window has the focus,
  /// those not told in this focus period (then marked told). Empty otherwise.
  public mutating func noticeDue() -> [ClientID] {
    guard secureFocus != nil else { return [] }
    let due = suspects.keys.filter { !told.contains($0) && !(suspects[$0]?.isEmpty ?? true) }.sorted()
    told.formUnion(due)
    return due
  }

  /// The notice naming the suspects connected now (`due` first: those not told before),
  /// each with its program name and what it did; `names` gives a client's program name
  /// and pid (`CaptureNotifier.programName`).
  public func notice(due: [ClientID], names: (ClientID) -> (program: String, pid: Int?)) -> KeyloggerNotice {
    let others = suspects.keys.filter { !due.contains($0) }.sorted()
    let entries = (due + others).map { c -> KeyloggerNotice.Entry in
      let n = names(c)
      let kinds = (suspects[c] ?? [:]).keys.sorted()
      return KeyloggerNotice.Entry(program: n.program, pid: n.pid, client: c, kinds: kinds)
    }
    return KeyloggerNotice(window: secureFocus ?? 0, entries: entries, newCount: due.count)
  }
}

/// The user notice: a secure window has the focus while programs that listen to the
/// keyboard are connected.
public struct KeyloggerNotice: Sendable, Hashable {
  public struct Entry: Sendable, Hashable {
    public var program: String
    public var pid: Int?
    public var client: ClientID
    public var kinds: [KeyListenKind]
  }
  /// The focused secure window.
  public var window: UInt32
  /// Every suspect connected, those not told before first.
  public var entries: [Entry]
  /// How many of `entries` are news.
  public var newCount: Int

  public var summary: String {
    "Keyboard: \(entries.count == 1 ? "a program" : "\(entries.count) programs") may read what you type"
  }

  public var body: String {
    let who = entries.map { e -> String in
      let name = e.pid.map { "\(e.program) (pid \($0))" } ?? e.program
      return name + " " + e.kinds.map(\.phrase).joined(separator: " and ")
    }
    return who.joined(separator: "; ")
      + ". A secure window has the keyboard focus: X lets \(entries.count == 1 ? "this program" : "these programs") see the keys typed into it (no CaptureShield Xorg module to stop \(entries.count == 1 ? "it" : "them"))."
  }

  /// `keylogger-notice`.
  public var audit: AuditRecord {
    AuditRecord(
      "keylogger-notice",
      [
        ("window", .string("0x" + String(window, radix: 16))),
        (
          "programs",
          .string(entries.map { e in e.pid.map { "\(e.program) (pid \($0))" } ?? e.program }.joined(separator: ", "))
        ),
        ("clients", .string(entries.map(\.client.description).joined(separator: ", "))),
        ("new", .int(newCount)),
      ])
  }
}

extension CaptureNotifier.Notice {
  /// The keyboard watch's notice, sent through the capture notices' path.
  public init(keylogger n: KeyloggerNotice) {
    self.init(
      program: n.entries.first?.program ?? "-", pid: n.entries.first?.pid, windows: 1, protection: .hidden,
      trigger: "keylogger")
    ownSummary = n.summary
    ownBody = n.body
  }
}

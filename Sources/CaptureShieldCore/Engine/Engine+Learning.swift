// Learning per program file (`capture.learn`, `CaptureHistory`): programs that captured
// before are known from their next connection; programs seen starting often without
// capturing skip `capture.quarantine`.

extension Engine {
  /// How a client counts: `Policy.classify`, and with `capture.learn` an ordinary client
  /// whose program captured before counts as known (`known=learned`). Learning only ever
  /// turns `ordinary` into `known`: an allowed client stays allowed, an unidentified one
  /// has no program file.
  public func classify(_ identity: ClientIdentity?) -> ClientClass {
    let cls = policy.classify(identity)
    return cls == .ordinary && isLearnedKnown(identity) ? .known : cls
  }

  /// Whether `identity`'s program made a capture request before, `capture.learn` is on, and
  /// the process is young (at most `launchMatchAge` old when identified, or of unknown age):
  /// learning pre-empts a tool's *start*. A long-running process that captured once (a
  /// browser that shared a screen, a test runner reading back its own windows) connecting
  /// again later is an ordinary client, not one that hides secure windows at each connection.
  public func isLearnedKnown(_ identity: ClientIdentity?) -> Bool {
    guard policy.learn, let i = identity, i.isKnown, (i.processAge ?? 0) <= Engine.launchMatchAge else { return false }
    return history.standing(i.programFile) == .captured
  }

  /// Whether `identity`'s program was seen starting `CaptureHistory.quietAfter` times and
  /// never captured, with `capture.learn` on: its start skips the quarantine.
  public func isLearnedQuiet(_ identity: ClientIdentity?) -> Bool {
    guard policy.learn, let i = identity, i.isKnown else { return false }
    return history.standing(i.programFile) == .quiet
  }

  /// Wall-clock seconds now (`wallBase` plus the engine's clock): when a program was seen.
  var wallNow: Double { wallBase + Double(now.nanoseconds) / 1e9 }

  /// The paths of the programs the history marks as capturers (`capture.learn`, with
  /// `shield.when: "capturing"`): the shell watches these files for opens (an exec, or an
  /// interpreter reading its script), so that a learned tool's start fires the armed
  /// shields before it can connect (`LaunchWatch`, `RecordPump`). Ordinary programs are
  /// not watched: their starts cost nothing.
  public var learnedLaunchPaths: [String] {
    guard watchesLearnedLaunches else { return [] }
    return Set(history.entries.values.filter(\.captured).map(\.path)).sorted()
  }

  /// Whether some program's start is watched as a learned capturer's (`learnedLaunchPaths`).
  public var watchesLearnedLaunches: Bool {
    policy.learn && policy.when == .capturing && history.entries.values.contains { $0.captured }
  }

  /// Whether a launch of `program` (a file name, as the launch watch reports it) is the
  /// start of a program the history marks as a capturer.
  func isLearnedLaunch(_ program: String?) -> Bool {
    guard let program, watchesLearnedLaunches else { return false }
    return history.entries.values.contains {
      $0.captured && $0.path.split(separator: "/").last.map(String.init) == program
    }
  }

  /// A client of a known program file connected: one more start of it. Before the start
  /// is counted, so a program's own start decides by what was learned until then.
  mutating func learnStart(_ identity: ClientIdentity?, fx: inout [Effect]) {
    guard policy.learn, let i = identity, i.isKnown, let file = i.programFile, let path = i.programPath else { return }
    if history.noteStart(file, path: path, at: wallNow) { historyChanged(fx: &fx) }
  }

  /// A client that is not allowed made a capture request: its program captured.
  mutating func learnCapture(_ identity: ClientIdentity?, fx: inout [Effect]) {
    guard policy.learn, let i = identity, i.isKnown, let file = i.programFile, let path = i.programPath else { return }
    let new = history.noteCapture(file, path: path, at: wallNow)
    if new {
      var f: [(String, AuditRecord.Value)] = [("program", .string(path))]
      f += identityFields(identity)
      fx.append(.audit(AuditRecord("learned", f)))
    }
    historyChanged(fx: &fx)
  }

  /// How long a session of a client known by learning lasts from its connection: long
  /// enough to pre-empt a one-shot tool's first request, and not pinned while it stays
  /// connected (a long-running program that captured once, a browser sharing a screen
  /// once, would otherwise hide secure windows for as long as it runs), and over with its
  /// client (then `capture.linger` more, as a request session: `endSessions(ofGone:)`).
  /// Its capture requests start request sessions as any client's do.
  public static let learnedKnownHold = PolicyDuration.seconds(5)

  /// A known client's session: pinned while connected for a `capture.known` match, for
  /// `learnedKnownHold` when known by learning.
  mutating func startKnownSession(_ id: ClientID, fx: inout [Effect]) {
    let identity = clients[id]?.identity
    if policy.classify(identity) == .ordinary, isLearnedKnown(identity) {
      startSession(
        client: id, kind: .known, pinned: false, expires: now + Engine.learnedKnownHold, firstRequest: nil, fx: &fx)
      if let sid = sessions.first(where: { $0.value.client == id && $0.value.kind == .known && !$0.value.detached })?
        .key
      {
        sessions[sid]!.learned = true
      }
    } else {
      startSession(client: id, kind: .known, pinned: true, firstRequest: nil, fx: &fx)
    }
  }

  /// A client identified as a quiet program: the quarantine it got at its connection
  /// (started before it was identified: `capture.quarantine` at ClientStarted) ends, as if
  /// it had been identified at its connection.
  mutating func endQuarantine(of id: ClientID, fx: inout [Effect]) {
    for (sid, s) in sessions.sorted(by: { $0.key < $1.key })
    where s.client == id && s.kind == .quarantine && !s.detached {
      endSession(sid, fx: &fx, why: "quiet program (capture.learn)")
    }
  }

  mutating func historyChanged(fx: inout [Effect]) {
    if !fx.contains(.historyChanged) { fx.append(.historyChanged) }
  }

  /// A read the Xorg module censored (`Event.captureCensored`): the client's live sessions
  /// count it and stay awake (`capture.idle`); its first one marks the client capturing and
  /// teaches the history (`learnCapture`: a tool used under the module is not "quiet").
  /// Returns whether the published state changed.
  mutating func censored(_ id: ClientID, _ req: CaptureRequest, _ identity: ClientIdentity?, fx: inout [Effect])
    -> Bool
  {
    captureActivity(id, kind: req.kind, fx: &fx)
    for (sid, s) in sessions where s.client == id && !s.detached {
      sessions[sid]!.requests += 1
      sessions[sid]!.lastRequestAt = now
    }
    guard var c = clients[id] else {
      if policy.classify(identity) != .allowed { learnCapture(identity, fx: &fx) }
      return false
    }
    c.captureRequests += 1
    let first = c.firstCaptureAt == nil
    if first { c.firstCaptureAt = now }
    clients[id] = c
    // The notice's identity (the module read its PID at once) when the client's own lookup
    // failed: a short-lived tool can be gone before it.
    let known = c.identity?.isKnown == true ? c.identity : identity
    if first, c.clientClass != .allowed, policy.classify(known) != .allowed { learnCapture(known, fx: &fx) }
    return first
  }
}

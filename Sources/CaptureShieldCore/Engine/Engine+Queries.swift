// What the engine's state means: whether shields are up, capture is live, the next
// deadline, and explanations. Read-only.

extension Engine {
  // MARK: Derived state

  /// Whether shielding is suspended.
  public var isPaused: Bool {
    guard let p = pausedUntil else { return false }
    guard let until = p else { return true }
    return now < until
  }

  /// Whether some non-quarantine session is live (someone is capturing).
  public var isCapturing: Bool {
    sessions.values.contains { $0.kind != .quarantine && $0.isLive(at: now) }
  }

  /// Whether secure windows should be shielded now.
  public var shieldsActive: Bool {
    if isPaused { return false }
    if policy.when == .always { return true }
    return sessions.values.contains { $0.isLive(at: now) } || launches.contains { now < $0.until }
  }

  /// The earliest time at which a `.tick` could change something, if any.
  public var nextDeadline: MonotonicTime? {
    var d: MonotonicTime? = nil
    for s in sessions.values where !s.pinned {
      if let e = s.expires, d == nil || e < d! { d = e }
    }
    if case .some(.some(let until)) = pausedUntil, d == nil || until < d! { d = until }
    if let l = launches.map(\.until).min(), d == nil || l < d! { d = l }
    if let u = unsettled.earliest, d == nil || u < d! { d = u }
    if let i = idleDeadline, d == nil || i < d! { d = i }
    return d
  }

  /// The windows that a new client's connection (`clientConnected` without an identity yet)
  /// would shield right now under `capture.quarantine`: every secure window, while no
  /// shield is up, capture detection decides (`when: capturing`) and nothing is paused;
  /// otherwise none. The shell puts these up the moment it reads a ClientStarted, before
  /// the engine is even told (see `RecordPump`), and at a learned capturer's start
  /// (`learnedLaunchPaths`; without quarantine only there); the engine's own answer then
  /// shields the same windows, plus windows whose facts are not known yet (provisional
  /// while shields are up).
  public var quarantineTargets: [WindowID] {
    guard policy.quarantine != nil || watchesLearnedLaunches, policy.when == .capturing, !isPaused, !shieldsActive
    else { return [] }
    return windows.values.filter { $0.reason.isSecure }.map(\.info.id).sorted()
  }

  /// Whether RECORD records should be fetched promptly (cheap round trips): while a
  /// session is live or a client is not yet identified. Idle otherwise.
  public var wantsPromptRecords: Bool {
    !sessions.isEmpty || !launches.isEmpty || clients.values.contains { $0.clientClass == .unidentified }
  }

  /// The decision for a window, with merged client facts.
  public func effectiveFacts(_ info: WindowInfo) -> Facts {
    var f = info.facts
    if let c = info.client, let id = clients[c]?.identity {
      if f.exe == nil { f.exe = id.exe }
      if f.comm == nil { f.comm = id.comm }
      if f.pid == nil { f.pid = id.pid }
      if f.uid == nil { f.uid = id.uid }
    }
    return f
  }

  /// Explains a tracked window's decision.
  public func explain(window: WindowID) -> WindowExplanation? {
    guard let w = windows[window] else { return nil }
    var e = policy.explainWindow(facts: effectiveFacts(w.info), tag: w.info.tag)
    e.reason = w.reason
    return e
  }
}

extension Engine {
  /// Whether a window gets the `_CAPTURE_SHIELD_CAPTURE_CHANGED` ClientMessage when capture
  /// starts or stops: a secure window whose app asked for it (`_CAPTURE_SHIELD_NOTIFY`).
  /// Everyone else learns of capture from the root's `_CAPTURE_SHIELD_CAPTURING`. Another
  /// client can set the opt-in on a window it does not own: that window then receives a
  /// message of two words, which a toolkit ignores (and may log); nothing else changes.
  public static func sendsCaptureChanged(_ w: WindowState) -> Bool {
    w.reason.isSecure && w.info.notices.contains(.captureChanged)
  }

  /// Whether some window the engine knows is secure (own reads matter then).
  public var hasSecureWindow: Bool { windows.values.contains { $0.reason.isSecure } }

  /// Whether `c` is neither connected as far as the engine knows nor gone already: a client
  /// that connected before the daemon started or whose ClientStarted was missed.
  public func isUnheardOf(_ c: ClientID) -> Bool { clients[c] == nil && !departed.contains(c) }
}

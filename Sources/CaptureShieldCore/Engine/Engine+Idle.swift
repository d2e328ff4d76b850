// `capture.idle`: a recorder that sits open (bench row 10). A known capturer's session
// is pinned while it is connected, so OBS open with no source, or x11vnc with no viewer, hid
// the secure windows for their whole life. A session of a known client whose client makes
// no capture request for `capture.idle` goes idle (it shields nothing) until the client's
// next sign of capture:
// - a capture request (in client-side mode the server has run it already: its frame is the
//   one that may leak, see docs/security.md);
// - a prelude: a request recorders send before capturing again on a connection they keep
//   (`CaptureCatalog.preludeKinds`: attaching shared memory, redirecting, DAMAGE on a
//   foreign drawable, GrabServer), recorded so the shields go up before the capture;
// - a new connection of the same program needs nothing here: it is a new known client, whose
//   session starts at its connection as before (OBS opens one per screen-capture source).
// Request sessions of clients that are not known keep `capture.hold` (a patient capturer
// would otherwise get one frame per idle period). Compositor and quarantine
// sessions never go idle.

extension Engine {
  /// Whether `s` goes idle after `capture.idle` without a sign of capture from its client.
  func idles(_ s: Session) -> Bool {
    guard policy.idle != nil, !s.detached, !s.bypass else { return false }
    switch s.kind {
    case .known: return true
    case .request: return clients[s.client]?.clientClass == .known
    case .compositor, .quarantine: return false
    }
  }

  /// When `s` goes idle, if it can (a pinned session of a known client that is not idle yet).
  func idleAt(_ s: Session) -> MonotonicTime? {
    guard !s.idle, s.pinned, let idle = policy.idle, idles(s) else { return nil }
    return (s.activeAt ?? s.startedAt) + idle
  }

  /// The earliest time a session goes idle (`nextDeadline`).
  public var idleDeadline: MonotonicTime? {
    sessions.values.compactMap(idleAt).min()
  }

  /// Sessions whose idle time passed go idle (audited `session-idle`). Whether any did.
  mutating func idleSessions(fx: inout [Effect]) -> Bool {
    var changed = false
    for (sid, s) in sessions.sorted(by: { $0.key < $1.key }) {
      guard let at = idleAt(s), now >= at else { continue }
      sessions[sid]!.idle = true
      changed = true
      fx.append(
        .audit(
          AuditRecord(
            "session-idle",
            [
              ("session", .int(sid)), ("kind", .string(s.kind.rawValue)), ("client", .string(s.client.description)),
              ("seconds", .double(now.seconds(since: s.activeAt ?? s.startedAt))),
            ] + identityFields(s.identity))))
    }
    return changed
  }

  /// An idle session is live again (audited `session-resume`, with why).
  mutating func wake(_ sid: Int, why: String, fx: inout [Effect]) {
    guard let s = sessions[sid], s.idle else { return }
    sessions[sid]!.idle = false
    sessions[sid]!.activeAt = now
    if s.kind == .request {
      let hold = requestHold(after: now)
      sessions[sid]!.pinned = hold.pinned
      sessions[sid]!.expires = hold.expires
    } else {
      sessions[sid]!.pinned = true
    }
    fx.append(
      .audit(
        AuditRecord(
          "session-resume",
          [
            ("session", .int(sid)), ("kind", .string(s.kind.rawValue)), ("client", .string(s.client.description)),
            ("why", .string(why)),
          ] + identityFields(s.identity))))
  }

  /// A sign of capture from `id` (a capture request or a prelude, `kind`): its idle sessions
  /// are live again, and its sessions' idle time counts from now.
  mutating func captureActivity(_ id: ClientID, kind: String, fx: inout [Effect]) {
    for (sid, s) in sessions.sorted(by: { $0.key < $1.key }) where s.client == id && !s.detached {
      if s.idle { wake(sid, why: kind, fx: &fx) } else { sessions[sid]!.activeAt = now }
    }
  }
}

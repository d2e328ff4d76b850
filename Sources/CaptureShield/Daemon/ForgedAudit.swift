// Forged events and forged commands: ignored, and audited at most once per 5 s each with the
// count in between (a client that floods SendEvent must not flood the audit log).

/// What the loop audits of events another client forged (SendEvent): any event on the main
/// or shield connection whose `sent` flag is set (dropped), and `_CAPTURE_SHIELD_COMMAND`
/// ClientMessages (commands come only over the command socket). Pure: the loop hands it
/// what it dropped and writes the record it returns. Runs on the loop's thread.
struct ForgedAudit {
  /// How often each kind is audited at most.
  static let interval = PolicyDuration.seconds(5)

  /// A count of ignored things, audited at most once per `interval`.
  struct RateLimited {
    private(set) var count = 0
    private(set) var last: MonotonicTime?

    /// One more at `now`: the count to audit when a record is due (then the count starts
    /// again), nil while the last record is younger than `interval`.
    mutating func note(now: MonotonicTime) -> Int? {
      count += 1
      if let last, now < last + ForgedAudit.interval { return nil }
      last = now
      defer { count = 0 }
      return count
    }
  }

  private(set) var events = RateLimited()
  private(set) var commands = RateLimited()

  /// A forged event of `type` about `window` dropped on `connection` ("main", "shield"):
  /// its `forged-event` record when one is due.
  mutating func forgedEvent(type: UInt8, window: UInt32, connection: String, now: MonotonicTime) -> AuditRecord? {
    guard let n = events.note(now: now) else { return nil }
    return AuditRecord(
      "forged-event",
      [
        ("type", .int(Int(type))), ("window", .string("0x" + String(window, radix: 16))),
        ("connection", .string(connection)), ("count", .int(n)),
        ("action", "ignored (sent by another client with SendEvent)"),
      ])
  }

  /// A `_CAPTURE_SHIELD_COMMAND` ClientMessage with these data words: its `forged-command`
  /// record when one is due. X does not say who sent an event, so the record has what the
  /// message claims (its command and pid), marked as claimed.
  mutating func forgedCommand(_ words: [UInt32], now: MonotonicTime) -> AuditRecord? {
    guard let n = commands.note(now: now) else { return nil }
    let claimed = CommandCode(rawValue: words.first ?? 0).map { "\($0)" } ?? "unknown (\(words.first ?? 0))"
    return AuditRecord(
      "forged-command",
      [
        ("command", .string(claimed)), ("claimed-pid", .int(Int(words.count > 3 ? words[3] : 0))),
        ("count", .int(n)),
        ("action", "ignored (a ClientMessage from an X client; commands come only over the command socket)"),
      ])
  }
}

// The daemon's own X connections as the RECORD stream sees them: which resource bases are
// ours (their records are dropped), and when a base stops being ours.
//
// Another client can KillClient one of our connections. The X server then hands that
// connection's resource base to the next client that connects. RECORD reports the two in
// order, ClientDied of our connection before ClientStarted of the next holder, so the exact
// moment a base stops being ours is its ClientDied record: from then on its records are a
// stranger's (docs/security.md, "Known limitations": a killed daemon connection).

/// The self-exclusion of the RECORD stream (pure, no X): the bases of our connections, and
/// the decisions on ClientStarted and ClientDied records of those bases.
public struct OwnConnections: Sendable, Equatable {
  /// Bases whose records are dropped: our live connections.
  public private(set) var excluded: Set<UInt32>
  /// Our connections opened after the RECORD context was created, whose ClientStarted is
  /// still to come: a ClientDied of such a base before it belongs to the client that held
  /// the base before.
  private(set) var awaitingStart: Set<UInt32> = []
  /// Our connections that died (the owner noticed it first), ClientDied not read yet: that
  /// record is ours, not a stranger's.
  private(set) var awaitingDeath: Set<UInt32> = []

  /// What a ClientStarted or ClientDied record means.
  public enum Verdict: Sendable, Equatable {
    /// A client not ours: report it.
    case foreign
    /// Ours: drop the record.
    case ours
    /// Our connection with this base died (KillClient, or closed): the base is no longer
    /// excluded, and the next client that gets it is a stranger. Drop the record.
    case ourConnectionDied
  }

  public init(_ bases: Set<UInt32> = []) { excluded = bases }

  /// A connection of ours that existed before the RECORD context (no ClientStarted comes).
  public mutating func insert(_ base: UInt32) { excluded.insert(base) }

  /// A connection of ours opened after the RECORD context: its ClientStarted is to come.
  public mutating func insertNew(_ base: UInt32) {
    excluded.insert(base)
    awaitingStart.insert(base)
  }

  /// Our connection `base` is gone and we know it before its ClientDied is read: the record
  /// stays ours, and the base stops being excluded when it is read (or stays excluded when
  /// a new connection of ours took the same base, `insertNew`).
  public mutating func closed(_ base: UInt32) {
    guard excluded.contains(base), !awaitingStart.contains(base) else { return }
    awaitingDeath.insert(base)
  }

  /// A ClientStarted record of `base`.
  public mutating func started(_ base: UInt32) -> Verdict {
    if awaitingStart.remove(base) != nil { return .ours }
    return excluded.contains(base) ? .ours : .foreign
  }

  /// A ClientDied record of `base`.
  public mutating func died(_ base: UInt32) -> Verdict {
    if awaitingDeath.remove(base) != nil {
      // Our dead connection's record. Unless a new connection of ours took the base again,
      // the base is free: the next holder is a stranger.
      if awaitingStart.contains(base) { return .ours }
      excluded.remove(base)
      return .ourConnectionDied
    }
    // A new connection of ours took a base whose earlier holder (not ours) died just
    // before: that death is a stranger's.
    if awaitingStart.contains(base) { return .foreign }
    guard excluded.remove(base) != nil else { return .foreign }
    return .ourConnectionDied
  }
}

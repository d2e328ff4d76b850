// Launches (`capture.quarantineOnLaunch`): a process starting an X client program or
// loading the X client library keeps the shields up until its client is identified.

extension Engine {
  /// A process loaded the X client library (`clientLaunching`) and no client of a process
  /// that young has been identified since: the shields stay up as for a quarantine.
  public struct Launch: Sendable, Hashable {
    public var seen: MonotonicTime
    public var until: MonotonicTime
    /// The program started (its file name), when the launch was seen as a program start.
    public var program: String? = nil
  }

  /// How long after its process started a client can still be the launch's client: a
  /// client whose process is older (a long-running app opening another connection) never
  /// matches a launch, so it cannot end the launch of a tool still loading.
  public static let launchMatchAge = 2.0

  // MARK: Launches

  /// A client was identified: the oldest launch its process can have caused (seen after the
  /// process started, the process at most `launchMatchAge` old) is over; the client's own
  /// class decides from now on. A launch that names its program is only the launch of a
  /// client running that program (preferred over a launch without a name); a client
  /// without a known process age matches none: the launch then lasts its full duration
  /// (fail safe).
  mutating func matchLaunch(_ client: ClientID, _ identity: ClientIdentity?, fx: inout [Effect]) {
    // Nothing to match (and no per-client bookkeeping) unless launches are watched.
    guard policy.quarantine != nil, policy.quarantineOnLaunch else { return }
    guard let age = identity?.processAge, age <= Engine.launchMatchAge, let pid = identity?.pid else { return }
    let horizon = PolicyDuration.seconds(Engine.launchMatchAge + 1)
    if launchPIDs.count > 64 { launchPIDs = launchPIDs.filter { now < $0.value + horizon } }
    if let first = launchPIDs[pid], now < first + horizon { return }  // not its first client
    launchPIDs[pid] = now
    guard !launches.isEmpty else { return }
    // /proc gives the start in clock ticks (10 ms): allow one tick and some.
    let startedNs = now.nanoseconds.subtractingReportingOverflow(UInt64((age + 0.02) * 1e9))
    let started = MonotonicTime(nanoseconds: startedNs.overflow ? 0 : startedNs.partialValue)
    let program = identity?.exe.flatMap { $0.split(separator: "/").last.map(String.init) }
    if let i = launches.firstIndex(where: { $0.seen >= started && $0.program != nil && $0.program == program })
      ?? launches.firstIndex(where: { $0.seen >= started && $0.program == nil })
    {
      endLaunch(launches.remove(at: i), why: "client identified", client: client, fx: &fx)
    }
  }

  /// One audit record per launch: how long it held the shields on its own, and why it ended.
  func endLaunch(_ l: Launch, why: String, client: ClientID?, fx: inout [Effect]) {
    var f: [(String, AuditRecord.Value)] = [("why", .string(why)), ("seconds", .double(now.seconds(since: l.seen)))]
    if let program = l.program { f.append(("program", .string(program))) }
    if let client {
      f.append(("client", .string(client.description)))
      f += identityFields(clients[client]?.identity)
    }
    fx.append(.audit(AuditRecord("launch-end", f)))
  }
}

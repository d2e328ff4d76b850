// Fields of audit records: the live session, a client's identity, a window's facts.

extension Engine {
  func sessionFields() -> [(String, AuditRecord.Value)] {
    if policy.when == .always { return [("trigger", "shield.when=always")] }
    let live = sessions.values.filter { $0.isLive(at: now) }.sorted { $0.id < $1.id }
    guard let s = live.first else { return [] }
    return [("trigger", .string(s.kind.rawValue)), ("client", .string(s.client.description))]
      + identityFields(s.identity)
  }

  /// A client's identity as audit fields (pid, exe, comm, uid; `identity: unknown` when
  /// nil), the same in every record that names a client.
  public func identityFields(_ i: ClientIdentity?) -> [(String, AuditRecord.Value)] {
    guard let i else { return [("identity", "unknown")] }
    var f: [(String, AuditRecord.Value)] = []
    if let pid = i.pid { f.append(("pid", .int(pid))) }
    if let exe = i.exe { f.append(("exe", .string(exe))) }
    if let script = i.script { f.append(("script", .string(script))) }
    if let comm = i.comm { f.append(("comm", .string(comm))) }
    if let uid = i.uid { f.append(("uid", .int(uid))) }
    if let failure = i.failure { f.append(("identity", .string(failure))) }
    if isLearnedKnown(i), policy.classify(i) == .ordinary { f.append(("known", "learned")) }
    return f
  }

  func factsFields(_ f: Facts) -> [(String, AuditRecord.Value)] {
    var out: [(String, AuditRecord.Value)] = []
    if let v = f.class { out.append(("class", .string(v))) }
    if let v = f.title { out.append(("title", .string(String(v.prefix(200))))) }
    if let v = f.exe { out.append(("exe", .string(v))) }
    if let v = f.pid { out.append(("pid", .int(v))) }
    return out
  }

  /// An `allow-refused` record when an allow rule matches the client but does not allow it
  /// (`Policy.allowRefusal`: its process may run injected code).
  func auditAllowRefusal(_ id: ClientID, _ identity: ClientIdentity?, fx: inout [Effect]) {
    guard let why = policy.allowRefusal(identity) else { return }
    fx.append(
      .audit(
        AuditRecord(
          "allow-refused", [("client", .string(id.description)), ("why", .string(why))] + identityFields(identity))
      ))
  }
}

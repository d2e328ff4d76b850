/// Why a window is (or is not) secure.
public enum SecureReason: Sendable, Hashable, Codable, CustomStringConvertible {
  /// `_CAPTURE_SHIELD_SECURE` = 1 (set by `shieldctl tag` or by the app itself).
  case tag
  /// The tag property holds something other than CARDINAL 0 or 1: secure, fail safe.
  case malformedTag
  /// A `secure` rule matched (its index and label).
  case rule(index: Int, label: String)
  /// A built-in secure rule matched (`Policy.defaultSecure`): the program's name.
  case builtin(name: String)
  /// Properties not known yet, and the owning client owns a secure window or matches a
  /// secure rule's client criteria: shielded until the facts arrive.
  case provisional
  /// Secure views (`_CAPTURE_SHIELD_VIEWS`, `_CAPTURE_SHIELD_POLICY_VIEWS`): only these
  /// rectangles of the window (`by`: "app", "daemon" or both) are shielded.
  case views([ViewRect], by: String)
  /// A view property holds something else: the whole window is secure, fail safe.
  case malformedViews
  /// A password text field of its application is showing in it (the accessibility bus,
  /// `accessibility.passwordFields`; `PasswordViews.wholeWindowSecure`).
  case passwordField
  /// Nothing made it secure.
  case none

  public var isSecure: Bool { self != .none }
  /// Only rectangles of the window are secure (the shield is shaped to them).
  public var isViews: Bool {
    if case .views = self { return true }
    return false
  }

  public var description: String {
    switch self {
    case .tag: return "tag"
    case .malformedTag: return "malformed tag (treated as secure)"
    case .rule(let i, let label): return "rule #\(i + 1) \(label)"
    case .builtin(let name): return "built-in: \(name)"
    case .provisional: return "provisional (facts not known yet)"
    case .views(let r, let by): return "views (\(by)): " + r.map(\.description).joined(separator: ", ")
    case .malformedViews: return "malformed views (treated as secure)"
    case .passwordField: return "password field (accessibility)"
    case .none: return "not secure"
    }
  }
}

/// How `capture.*` rules classify a client.
public enum ClientClass: String, Sendable, Hashable, Codable {
  /// Matches `capture.allow`: may read pixels without starting a session.
  case allowed
  /// Matches `capture.known`: capturing from the moment it connects.
  case known
  /// Neither: a session starts at its first capture request.
  case ordinary
  /// Identity unknown (no PID, exited, TCP): never allowed.
  case unidentified
}

/// Whether a compositor is trusted (`Policy.compositorTrust`).
public enum CompositorTrust: Sendable, Hashable {
  /// Trusted, by this `compositors` rule.
  case trusted(rule: String)
  /// No `compositors` rule names it.
  case notListed
  /// Named, but its program is not a root-owned file in a system directory (a copy in
  /// /tmp named like a compositor, say).
  case notASystemProgram(String)
  /// Named, but its process may run injected code (the reason).
  case injected(String)
  /// Its identity is not known.
  case unidentified
  /// It redirects windows but does not own `_NET_WM_CM_Sn` (or is not the compositor).
  case notSelectionOwner

  public var isTrusted: Bool {
    if case .trusted = self { return true }
    return false
  }

  /// In words, for `status` and the audit log.
  public var description: String {
    switch self {
    case .trusted(let rule):
      return "trusted (\(rule); owner of the compositor selection, a root-owned program in a system directory)"
    case .notListed: return "not trusted: no capture.compositors or capture.allow rule names it"
    case .notASystemProgram(let exe): return "not trusted: \(exe) is not a root-owned program in a system directory"
    case .injected(let why): return "not trusted: its process may run injected code (\(why))"
    case .unidentified: return "not trusted: its program is not known"
    case .notSelectionOwner: return "not trusted: it does not own the compositor selection"
    }
  }
}

/// One rule's evaluation, for `explain`.
public struct RuleExplanation: Sendable, Hashable {
  public var index: Int
  public var label: String
  public var criteria: [Matcher.CriterionResult]
  public var matched: Bool
}

/// Why a window got its decision, rule by rule.
public struct WindowExplanation: Sendable, Hashable {
  public var tag: TagState
  public var rules: [RuleExplanation]
  /// The built-in rules that match (`Policy.builtinSecure`), and how many were tried.
  public var builtin: [RuleExplanation] = []
  public var builtinCount = 0
  public var reason: SecureReason

  /// Human-readable lines, one per rule, then the decision.
  public var lines: [String] {
    var out: [String] = []
    switch tag {
    case .secure: out.append("tag: _CAPTURE_SHIELD_SECURE=1 -> secure")
    case .malformed: out.append("tag: _CAPTURE_SHIELD_SECURE is malformed -> secure (fail safe)")
    case .notSecure: out.append("tag: _CAPTURE_SHIELD_SECURE=0 (rules still apply)")
    case .absent: out.append("tag: none")
    }
    if rules.isEmpty { out.append("rules: none") }
    var decided = false
    for r in rules {
      let parts = r.criteria.map { c in
        "\(c.criterion.rawValue) \(c.matched ? "=" : "!=") \(c.expected.debugDescription) (is \(c.actual.map { $0.debugDescription } ?? "unknown"))"
      }
      let verdict: String
      if decided {
        verdict = r.matched ? "matches, but an earlier rule already decided" : "no match"
      } else {
        verdict = r.matched ? "MATCH -> secure (first match wins)" : "no match"
      }
      if r.matched { decided = true }
      out.append("rule #\(r.index + 1) \(r.label): \(parts.joined(separator: ", ")) -> \(verdict)")
    }
    if builtinCount > 0 && builtin.isEmpty {
      out.append("built-in rules: \(builtinCount) (password managers and credential prompts), none matches")
    }
    for r in builtin {
      let parts = r.criteria.map { c in
        "\(c.criterion.rawValue) = \(c.expected.debugDescription) (is \(c.actual.map { $0.debugDescription } ?? "unknown"))"
      }
      let verdict = decided ? "matches, but an earlier rule already decided" : "MATCH -> secure"
      decided = true
      out.append(
        "built-in: \(r.label) (built-in rule \(r.index + 1) of \(builtinCount)): \(parts.joined(separator: ", ")) -> \(verdict)"
      )
    }
    out.append("decision: \(reason.isSecure ? "SECURE" : "not secure") (\(reason))")
    return out
  }
}

extension Policy {
  /// Index of the first `secure` rule matching `facts`, if any (the hot path).
  public func firstSecureRule(_ facts: Facts) -> Int? {
    secure.firstIndex { $0.matches(facts) }
  }

  /// The decision for a window with these facts and tag, ignoring provisional state.
  public func secureReason(facts: Facts, tag: TagState) -> SecureReason {
    switch tag {
    case .secure: return .tag
    case .malformed: return .malformedTag
    case .absent, .notSecure: break
    }
    if let i = firstSecureRule(facts) { return .rule(index: i, label: secure[i].label) }
    if let m = builtinSecure.first(where: { $0.matches(facts) }) { return .builtin(name: m.name ?? "?") }
    return .none
  }

  /// Every rule evaluated against the facts, with the final decision.
  public func explainWindow(facts: Facts, tag: TagState) -> WindowExplanation {
    let rules = secure.enumerated().map { i, m in
      let c = m.evaluate(facts)
      return RuleExplanation(index: i, label: m.label, criteria: c, matched: c.allSatisfy(\.matched))
    }
    let builtin = builtinSecure.enumerated().compactMap { i, m -> RuleExplanation? in
      guard m.matches(facts) else { return nil }
      return RuleExplanation(index: i, label: m.name ?? "?", criteria: m.evaluate(facts), matched: true)
    }
    return WindowExplanation(
      tag: tag, rules: rules, builtin: builtin, builtinCount: builtinSecure.count,
      reason: secureReason(facts: facts, tag: tag))
  }

  /// Whether some `secure` rule could still match a window of a client with these facts
  /// once its window properties are known (its client criteria match).
  public func clientMayOwnSecureWindows(_ client: Facts) -> Bool {
    (secure + builtinSecure).contains { m in
      guard m.exe != nil || m.comm != nil || m.pid != nil || m.uid != nil else { return false }
      var probe = m
      probe.class = nil
      probe.instance = nil
      probe.title = nil
      return probe.matches(client)
    }
  }

  /// Whether the client with `identity`, as the owner of `_NET_WM_CM_Sn`, is trusted as the
  /// compositor: a `compositors` entry matches it, its program is a root-owned file (not
  /// writable by others) in a system directory (`Policy.systemDirectories`), and it runs no
  /// injected code (`capture.allowInjected`). A trusted compositor reads windows without
  /// starting a capture session, like an allowed client, for as long as it owns the
  /// selection. `.trusted` carries the rule's name; the other cases say why not.
  public func compositorTrust(_ identity: ClientIdentity?) -> CompositorTrust {
    guard let identity, identity.isKnown, let exe = identity.exe else { return .unidentified }
    guard let rule = compositors.first(where: { $0.matches(identity.facts) }) else { return .notListed }
    guard Self.systemDirectories.contains(where: { exe.hasPrefix($0) }), identity.exeRootOwned == true else {
      return .notASystemProgram(exe)
    }
    if !allowInjected, let why = identity.injection { return .injected(why) }
    return .trusted(rule: rule.location == nil ? (rule.name ?? "capture.compositors") : rule.label)
  }

  /// Why an allow rule matches `identity` but does not allow it (the process may run code
  /// that is not its program's and `capture.allowInjected` is off), or nil.
  public func allowRefusal(_ identity: ClientIdentity?) -> String? {
    guard !allowInjected, let identity, identity.isKnown, let why = identity.injection else { return nil }
    let f = identity.facts
    return captureAllow.contains(where: { $0.matches(f) }) ? why : nil
  }

  /// How `capture.allow` / `capture.known` classify a client (allow is checked first; an
  /// allow rule does not count for a process that may run injected code, unless
  /// `capture.allowInjected`).
  public func classify(_ identity: ClientIdentity?) -> ClientClass {
    guard let identity, identity.isKnown else { return .unidentified }
    let f = identity.facts
    if captureAllow.contains(where: { $0.matches(f) }), allowInjected || identity.injection == nil {
      return .allowed
    }
    // A known capturer by its executable, or by its script (`ClientIdentity.script`: the
    // name only makes the daemon stricter, so an interpreter's argument may give it).
    let sf = identity.scriptFacts
    if captureKnown.contains(where: { $0.matches(f) || sf.map($0.matches) == true }) { return .known }
    return .ordinary
  }
}

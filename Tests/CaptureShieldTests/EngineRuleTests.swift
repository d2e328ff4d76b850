import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension EngineTests {

  /// The secure tag (`_CAPTURE_SHIELD_SECURE`) decides.
  @Suite struct Tags {
    struct TagCase: Sendable, CustomTestStringConvertible {
      var tag: TagState
      var reason: SecureReason
      var firstLine: String
      var testDescription: String { "\(tag)" }
    }

    static let tagCases: [TagCase] = [
      TagCase(tag: .secure, reason: .tag, firstLine: "tag: _CAPTURE_SHIELD_SECURE=1 -> secure"),
      TagCase(
        tag: .malformed, reason: .malformedTag,
        firstLine: "tag: _CAPTURE_SHIELD_SECURE is malformed -> secure (fail safe)"),
      TagCase(tag: .notSecure, reason: .none, firstLine: "tag: _CAPTURE_SHIELD_SECURE=0 (rules still apply)"),
      TagCase(tag: .absent, reason: .none, firstLine: "tag: none"),
    ]

    @Test("tag decides (malformed is secure)", arguments: tagCases)
    func tagDecides(_ c: TagCase) throws {
      var e = Engine(policy: policy(when: .always))
      let fx = e.handle(.windowAppeared(window(w1, tag: c.tag)), now: t(1))
      #expect(e.windows[w1]?.reason == c.reason)
      if c.reason.isSecure {
        #expect(
          describe(fx) == [
            "audit secure-decision window=0x100 secure=true reason=\(show(.string(c.reason.description)))",
            "shield 0x100",
            "audit shield window=0x100 reason=\(show(.string(c.reason.description))) trigger=shield.when=always",
            "publish",
          ])
        #expect(e.shielded == [w1])
      } else {
        // No audit and no shield (whether state is published is `nonSecureWindowDoesNotPublish`).
        #expect(describe(fx).filter { $0 != "publish" } == [])
        #expect(e.shielded.isEmpty)
      }
      let lines = try #require(e.explain(window: w1)).lines
      #expect(
        lines == [
          c.firstLine, "rules: none",
          "decision: \(c.reason.isSecure ? "SECURE" : "not secure") (\(c.reason.description))",
        ])
    }

    struct TagChange: Sendable, CustomTestStringConvertible {
      var from: TagState
      var to: TagState
      var effects: [String]
      var testDescription: String { "\(from) -> \(to)" }
    }

    static let tagChanges: [TagChange] = [
      TagChange(
        from: .secure, to: .absent,
        effects: [
          "audit secure-decision window=0x100 secure=false reason='not secure'", "unshield 0x100",
          "audit unshield window=0x100 reason='not secure'", "publish",
        ]),
      TagChange(
        from: .secure, to: .notSecure,
        effects: [
          "audit secure-decision window=0x100 secure=false reason='not secure'", "unshield 0x100",
          "audit unshield window=0x100 reason='not secure'", "publish",
        ]),
      TagChange(
        from: .malformed, to: .notSecure,
        effects: [
          "audit secure-decision window=0x100 secure=false reason='not secure'", "unshield 0x100",
          "audit unshield window=0x100 reason='not secure'", "publish",
        ]),
      TagChange(
        from: .absent, to: .secure,
        effects: [
          "audit secure-decision window=0x100 secure=true reason=tag", "shield 0x100",
          "audit shield window=0x100 reason=tag trigger=shield.when=always", "publish",
        ]),
      TagChange(
        from: .notSecure, to: .malformed,
        effects: [
          "audit secure-decision window=0x100 secure=true reason='malformed tag (treated as secure)'", "shield 0x100",
          "audit shield window=0x100 reason='malformed tag (treated as secure)' trigger=shield.when=always", "publish",
        ]),
      // Secure either way: the reason changes, the shield stays.
      TagChange(
        from: .secure, to: .malformed,
        effects: [
          "audit secure-decision window=0x100 secure=true reason='malformed tag (treated as secure)'", "publish",
        ]),
      TagChange(from: .absent, to: .notSecure, effects: []),
    ]

    @Test("tag changes in when: always", arguments: tagChanges)
    func tagChange(_ c: TagChange) throws {
      var e = Engine(policy: policy(when: .always))
      _ = e.handle(.windowAppeared(window(w1, tag: c.from)), now: t(1))
      let fx = e.handle(.windowChanged(window(w1, tag: c.to)), now: t(2))
      #expect(describe(fx) == c.effects)
      #expect(e.shielded == (c.to == .secure || c.to == .malformed ? [w1] : []))
      let lines = try #require(e.explain(window: w1)).lines
      #expect(
        lines.last == "decision: \(e.windows[w1]!.reason.isSecure ? "SECURE" : "not secure") (\(e.windows[w1]!.reason))"
      )
    }

    @Test func secureDecisionAuditCarriesFacts() {
      var e = Engine(policy: policy(when: .always))
      _ = e.handle(.clientConnected(app, keepassID), now: t(0))
      let fx = e.handle(.windowAppeared(secureWindow), now: t(1))
      let r = audits(fx, "secure-decision")
      #expect(r.count == 1)
      #expect(r.first?["window"] == "0x100")
      #expect(r.first?["secure"] == .bool(true))
      #expect(r.first?["class"] == "KeePassXC")
      #expect(r.first?["title"] == "Passwords")
      #expect(r.first?["exe"] == "/usr/bin/keepassxc")
      #expect(r.first?["pid"] == .int(100))
    }

    @Test func tagsInCapturingModeAreDecidedButNotShielded() {
      var e = Engine(policy: policy())
      let fx = e.handle(.windowAppeared(window(w1, tag: .malformed)), now: t(1))
      #expect(
        describe(fx) == [
          "audit secure-decision window=0x100 secure=true reason='malformed tag (treated as secure)'", "publish",
        ])
      #expect(e.shielded.isEmpty)
      #expect(!e.shieldsActive)
    }
  }

  /// `secure` rules decide: first match wins, criteria AND-ed; `explain`.
  @Suite struct Rules {
    static let rules: [Matcher] = [
      Matcher(class: pat("KeePassXC"), exe: pat("*/keepassxc"), name: "keepass"),
      bankRule,
      Matcher(class: pat("KeePassXC"), name: "any keepass"),
      Matcher(pid: 4242, uid: 1000, name: "pid"),
      Matcher(instance: pat("xterm*"), comm: pat("bash")),
      Matcher(title: pat("/secret/"), name: "exact secret"),
    ]

    struct RuleCase: Sendable, CustomTestStringConvertible {
      var name: String
      var facts: Facts
      var identity: ClientIdentity?
      var rule: Int?
      var testDescription: String { name }
    }

    static let ruleCases: [RuleCase] = [
      RuleCase(name: "class and exe both match", facts: Facts(class: "KeePassXC"), identity: keepassID, rule: 0),
      RuleCase(
        name: "AND: exe does not match, a later rule decides", facts: Facts(class: "KeePassXC"),
        identity: grabberID, rule: 2),
      RuleCase(
        name: "first match wins", facts: Facts(class: "KeePassXC", title: "Bank login"), identity: keepassID,
        rule: 0),
      RuleCase(name: "title regex", facts: Facts(class: "Firefox", title: "Online Banking"), identity: nil, rule: 1),
      RuleCase(name: "regex is case-sensitive", facts: Facts(title: "BANK"), identity: nil, rule: nil),
      RuleCase(name: "regex is anchored: exact", facts: Facts(title: "secret"), identity: nil, rule: 5),
      RuleCase(name: "regex is anchored: no substring", facts: Facts(title: "top secret"), identity: nil, rule: nil),
      RuleCase(
        name: "pid and uid from the client", facts: Facts(),
        identity: ClientIdentity(pid: 4242, exe: "/bin/x", uid: 1000), rule: 3),
      RuleCase(
        name: "pid matches but uid does not", facts: Facts(),
        identity: ClientIdentity(pid: 4242, exe: "/bin/x", uid: 0), rule: nil),
      RuleCase(
        name: "instance glob and comm", facts: Facts(instance: "xterm-256color"),
        identity: ClientIdentity(pid: 7, comm: "bash"), rule: 4),
      RuleCase(
        name: "the window's own fact wins over the client's", facts: Facts(class: "KeePassXC", exe: "/opt/keepassxc"),
        identity: grabberID, rule: 0),
      RuleCase(name: "unknown facts never match", facts: Facts(), identity: nil, rule: nil),
      RuleCase(name: "class glob is case-sensitive", facts: Facts(class: "keepassxc"), identity: keepassID, rule: nil),
    ]

    @Test("rules: first match wins, criteria AND-ed, client facts merged", arguments: ruleCases)
    func ruleDecides(_ c: RuleCase) throws {
      var e = Engine(policy: policy(when: .always, secure: Self.rules))
      if let id = c.identity { _ = e.handle(.clientConnected(app, id), now: t(0)) }
      let info = WindowInfo(id: w1, client: app, facts: c.facts)
      let fx = e.handle(.windowAppeared(info), now: t(1))
      let expected = c.rule.map { SecureReason.rule(index: $0, label: Self.rules[$0].label) } ?? SecureReason.none
      #expect(e.windows[w1]?.reason == expected)
      #expect(e.policy.secureReason(facts: e.effectiveFacts(info), tag: .absent) == expected)
      #expect(e.policy.firstSecureRule(e.effectiveFacts(info)) == c.rule)
      #expect(e.shielded == (c.rule == nil ? [] : [w1]))
      if c.rule != nil {
        #expect(audits(fx, "secure-decision").first?["reason"] == .string(expected.description))
      }
      let explanation = try #require(e.explain(window: w1))
      #expect(explanation.reason == expected)
      #expect(explanation.rules.map(\.matched).firstIndex(of: true) == c.rule)
    }

    @Test func explainLinesNameTheDecidingRule() throws {
      var e = Engine(policy: policy(when: .always, secure: Array(Self.rules.prefix(3))))
      _ = e.handle(.clientConnected(app, keepassID), now: t(0))
      _ = e.handle(.windowAppeared(window(w1, class: "KeePassXC", title: "Bank")), now: t(1))
      #expect(
        try #require(e.explain(window: w1)).lines == [
          "tag: none",
          #"rule #1 "keepass": class = "KeePassXC" (is "KeePassXC"), exe = "*/keepassxc" (is "/usr/bin/keepassxc") -> MATCH -> secure (first match wins)"#,
          #"rule #2 "bank": title = "/.*[Bb]ank.*/" (is "Bank") -> matches, but an earlier rule already decided"#,
          #"rule #3 "any keepass": class = "KeePassXC" (is "KeePassXC") -> matches, but an earlier rule already decided"#,
          #"decision: SECURE (rule #1 "keepass")"#,
        ])
      // The same through the policy directly, with the merged facts.
      let facts = e.effectiveFacts(e.windows[w1]!.info)
      #expect(e.policy.explainWindow(facts: facts, tag: .absent) == e.explain(window: w1))
    }

    @Test func explainLinesWhenNothingMatches() throws {
      var e = Engine(policy: policy(when: .always, secure: Array(Self.rules.prefix(3))))
      _ = e.handle(.windowAppeared(window(w1, client: nil, class: "Firefox")), now: t(1))
      #expect(
        try #require(e.explain(window: w1)).lines == [
          "tag: none",
          #"rule #1 "keepass": class != "KeePassXC" (is "Firefox"), exe != "*/keepassxc" (is unknown) -> no match"#,
          #"rule #2 "bank": title != "/.*[Bb]ank.*/" (is unknown) -> no match"#,
          #"rule #3 "any keepass": class != "KeePassXC" (is "Firefox") -> no match"#,
          "decision: not secure (not secure)",
        ])
      #expect(e.explain(window: 0x999) == nil)
    }

    @Test func explainShowsProvisionalDecision() throws {
      var e = Engine(policy: policy(when: .always, secure: [Self.rules[0]]))
      _ = e.handle(.clientConnected(app, keepassID), now: t(0))
      _ = e.handle(.windowAppeared(window(w3, known: false)), now: t(1))
      let x = try #require(e.explain(window: w3))
      #expect(x.reason == .provisional)
      #expect(x.lines.last == "decision: SECURE (provisional (facts not known yet))")
    }
  }
}

import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension EngineTests {

  /// Derived state: the snapshot, deadlines, pause, policy reloads.
  @Suite struct DerivedState {
    @Test func snapshotPublishesSecureWindowsSessionsAndClients() throws {
      let p = policy(secure: [bankRule], allow: [allowShell], quarantine: .seconds(5))
      var e = Engine(policy: p)
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.windowAppeared(plainWindow), now: t(0))
      _ = e.handle(.windowAppeared(window(w4, class: "XTerm", title: "bash")), now: t(0))
      _ = e.handle(.clientConnected(app, keepassID), now: t(0))  // quarantined until 5
      _ = e.handle(.clientConnected(shell, shellID), now: t(0.5))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      _ = e.handle(.clientConnected(comp, picomID), now: t(2))
      _ = e.handle(.compositorChanged(comp), now: t(2))
      #expect(e.shielded == [w1, w2])
      _ = e.handle(.pause(until: t(13), by: "alice"), now: t(3))
      #expect(e.shielded.isEmpty)

      let s = e.snapshot(pid: 42, display: ":1", startedAt: 1_700_000_000)
      #expect(s.version == 1)
      #expect(s.pid == 42)
      #expect(s.display == ":1")
      #expect(s.paused)
      #expect(s.pauseRemaining == 10)
      #expect(s.capturing)
      #expect(!s.shieldsActive)
      #expect(
        s.policy
          == DaemonState.PolicySummary(
            sources: [], when: .capturing, failMode: .closed, rules: 1, quarantineMs: 5000, lingerMs: 2000,
            hold: "0s", builtinRules: 0, rememberedRules: 0))
      #expect(
        s.windows == [
          .init(
            id: w1, title: nil, class: "KeePassXC", exe: "/usr/bin/keepassxc", secure: true, reason: "tag",
            shielded: false),
          .init(
            id: w2, title: nil, class: "Firefox", exe: "/usr/bin/keepassxc", secure: true,
            reason: #"rule #1 "bank""#, shielded: false),
        ])
      // No title in the published state (any client reads it); the daemon's user gets them
      // over the command socket.
      let published = String(decoding: try JSONEncoder().encode(s), as: UTF8.self)
      for title in ["Passwords", "Online Banking", "bash"] { #expect(!published.contains(title), "\(title) published") }
      #expect(!published.contains("\"title\""))
      #expect(e.secureWindowTitles() == [w1: "Passwords", w2: "Online Banking"])
      #expect(s.sessions.map(\.id) == [1, 2, 3, 4])
      #expect(s.sessions.map(\.kind) == [.quarantine, .known, .quarantine, .compositor])
      #expect(s.sessions.map(\.client) == [app, ff, comp, comp])
      #expect(s.sessions.map(\.endsIn) == [2, nil, 4, nil])
      #expect(s.sessions.map(\.ageSeconds) == [3, 2, 1, 1])
      #expect(s.sessions.map(\.pid) == [100, 300, 500, 500])
      #expect(s.clients.map(\.client) == [app, ff, shell, comp])
      #expect(s.clients.map(\.class) == [.ordinary, .known, .allowed, .ordinary])
      #expect(s.clients.map(\.capturing) == [false, true, false, true])
      #expect(s.clients.map(\.compositor) == [false, false, false, true])
      #expect(s.compositor?.client == comp)

      // Round trip through the published JSON.
      let data = try JSONEncoder().encode(s)
      #expect(try JSONDecoder().decode(DaemonState.self, from: data) == s)
    }

    @Test func snapshotAfterEverythingEnds() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      _ = e.handle(.clientGone(ff), now: t(2))
      #expect(e.snapshot(pid: 1, display: ":0", startedAt: 0).sessions.map(\.endsIn) == [2])
      _ = e.handle(.tick, now: t(4))
      let s = e.snapshot(pid: 1, display: ":0", startedAt: 0)
      #expect(!s.capturing && !s.shieldsActive && !s.paused)
      #expect(s.pauseRemaining == nil)
      #expect(s.sessions.isEmpty && s.clients.isEmpty)
      #expect(s.compositor == nil)
      #expect(s.windows.map(\.id) == [w1])
      #expect(s.windows.map(\.shielded) == [false])
    }

    @Test func nextDeadlineIsTheEarliestOfSessionsAndPause() {
      var e = Engine(policy: policy(quarantine: .seconds(10)))
      #expect(e.nextDeadline == nil)
      _ = e.handle(.clientConnected(grab, grabberID), now: t(1))  // quarantine until 11
      #expect(e.nextDeadline == t(11))
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(2))  // until 4
      #expect(e.nextDeadline == t(4))
      _ = e.handle(.pause(until: t(3), by: "alice"), now: t(2))
      #expect(e.nextDeadline == t(3))
      _ = e.handle(.tick, now: t(3))
      #expect(!e.isPaused)
      #expect(e.nextDeadline == t(4))
      _ = e.handle(.tick, now: t(4))
      #expect(e.nextDeadline == t(11))
      _ = e.handle(.tick, now: t(11))
      #expect(e.nextDeadline == nil)
      #expect(e.sessions.isEmpty)
    }

    /// Provisional windows' deadlines (`provisionalLimit`, 1 s): `w3` appears at 0 (due at 1),
    /// `w4` at 0.5 (due at 1.5); then these events, each `(time, event)`.
    static let provisionalDeadlineCases: [(name: String, events: [(Double, Engine.Event)], deadline: Double?)] = [
      ("nothing else: the earliest", [], 1),
      ("the earliest is destroyed: the later one's", [(0.6, .windowGone(w3))], 1.5),
      ("the earliest is mapped (its facts known): the later one's", [(0.6, .windowChanged(window(w3)))], 1.5),
      ("the later one is destroyed: still the earliest", [(0.6, .windowGone(w4))], 1),
      ("the earliest settles at its deadline: the later one's", [(1, .tick)], 1.5),
      ("both go", [(0.6, .windowGone(w3)), (0.7, .windowChanged(window(w4)))], nil),
      ("both settle", [(1.5, .tick)], nil),
      (
        "the earliest is destroyed and its id comes back unmapped: behind the later one",
        [(0.6, .windowGone(w3)), (0.7, .windowAppeared(window(w3, known: false)))], 1.5
      ),
      (
        "the later one is destroyed and its id comes back: the earliest, then the new one",
        [(0.6, .windowGone(w4)), (0.7, .windowAppeared(window(w4, known: false))), (1, .tick)], 1.7
      ),
    ]

    @Test(arguments: provisionalDeadlineCases)
    func nextDeadlineFollowsTheProvisionalWindows(
      name: String, events: [(Double, Engine.Event)], deadline: Double?
    ) {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(window(w3, known: false)), now: t(0))
      _ = e.handle(.windowAppeared(window(w4, known: false)), now: t(0.5))
      for (at, event) in events { _ = e.handle(event, now: t(at)) }
      #expect(e.nextDeadline == deadline.map(t), "\(name)")
      // The deadline is what the loop wakes for: a tick then settles what is due, and the
      // next deadline is a later one (never the same, never in the past).
      if let d = deadline {
        _ = e.handle(.tick, now: t(d))
        if let next = e.nextDeadline { #expect(next > t(d), "\(name)") }
      }
    }

    /// `DeadlineQueue`: the earliest deadline at every step, against the minimum over a
    /// plain dictionary, for keys set, replaced, removed and taken when due in any order.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func deadlineQueueKeepsTheEarliest(seed: UInt64) {
      var rng = SplitMix64(seed: seed)
      var q = DeadlineQueue<UInt32>()
      var plain: [UInt32: MonotonicTime] = [:]
      var now = 10.0
      for step in 0..<2000 {
        let key = UInt32(rng.next() % 12)
        switch rng.next() % 4 {
        case 0, 1:
          // Mostly in time order (as the engine sets them), sometimes earlier.
          let at = t(now + (rng.next() % 5 == 0 ? -0.5 : 1))
          q[key] = at
          plain[key] = at
        case 2:
          q[key] = nil
          plain[key] = nil
        default:
          now += 0.1
          let due = plain.filter { $0.value <= t(now) }.keys.sorted()
          #expect(q.removeDue(at: t(now)) == due, "step \(step)")
          for k in due { plain[k] = nil }
        }
        #expect(q.earliest == plain.values.min(), "step \(step)")
        #expect(q.count == plain.count)
        #expect(q[key] == plain[key])
      }
    }

    @Test func pauseAuditsItsLength() {
      var e = Engine(policy: policy(when: .always))
      let fx = e.handle(.pause(until: t(31.5), by: "alice"), now: t(1.5))
      #expect(audits(fx, "pause").first?["seconds"] == .double(30))
      let fx2 = e.handle(.pause(until: nil, by: "bob"), now: t(2))
      #expect(audits(fx2, "pause").first?["seconds"] == "until resume")
      #expect(e.isPaused)
    }

    @Test func policyReplacedReclassifiesClients() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(0))
      #expect(e.isCapturing)
      var p = policy()
      p.captureKnown = []
      let fx = e.handle(.policyReplaced(p), now: t(1))
      #expect(
        describe(fx) == [
          "audit policy-loaded rules=0 when=capturing",
          "audit session-end session=1 kind=known client=0x800000 why='client no longer known'",
          "unshield 0x100", "audit unshield window=0x100 reason='no capture session'", "notify false [0x100]",
          "publish",
        ])
      #expect(e.clients[ff]?.clientClass == .ordinary)
      // And back: a known capturer again.
      let fx2 = e.handle(.policyReplaced(policy()), now: t(2))
      #expect(audits(fx2, "session-start").map { $0["kind"] } == ["known"])
      #expect(e.shielded == [w1])
    }

    @Test func policyRejectedKeepsThePolicy() {
      let p = policy(when: .always, secure: [bankRule])
      var e = Engine(policy: p)
      _ = e.handle(.windowAppeared(plainWindow), now: t(0))
      let fx = e.handle(.policyRejected("boom"), now: t(1))
      #expect(describe(fx) == ["audit policy-rejected error=boom"])
      #expect(audits(fx, "policy-rejected").first?["kept"] == "last good policy")
      #expect(e.policy == p)
      #expect(e.shielded == [w2])
    }

    @Test func wantsPromptRecordsWhileSessionsOrUnidentifiedClients() {
      var e = Engine(policy: policy())
      #expect(!e.wantsPromptRecords)
      _ = e.handle(.clientConnected(grab, nil), now: t(0))
      #expect(e.wantsPromptRecords)
      _ = e.handle(.clientIdentified(grab, grabberID), now: t(0))
      #expect(!e.wantsPromptRecords)
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(1))
      #expect(e.wantsPromptRecords)
      _ = e.handle(.tick, now: t(3))
      #expect(!e.wantsPromptRecords)
    }
  }

  /// Engine bugs found once, each kept as a test.
  @Suite struct KnownIssues {
    /// A client's identity that arrives after its windows (stalled lookup, start-up order)
    /// must re-evaluate those windows: `exe` rules depend on it.
    @Test("client facts arriving later re-evaluate the client's windows", arguments: [true, false])
    func lateIdentityReevaluatesWindows(connectedFirst: Bool) {
      var e = Engine(policy: policy(when: .always, secure: [Matcher(exe: pat("*/keepassxc"), name: "keepass")]))
      if connectedFirst { _ = e.handle(.clientConnected(app, nil), now: t(0)) }
      _ = e.handle(.windowAppeared(window(w1, class: "KeePassXC")), now: t(0))
      #expect(e.windows[w1]?.reason == SecureReason.none)
      let late: Engine.Event = connectedFirst ? .clientIdentified(app, keepassID) : .clientConnected(app, keepassID)
      let fx = e.handle(late, now: t(1))
      #expect(e.windows[w1]?.reason == .rule(index: 0, label: #""keepass""#))
      #expect(describe(fx).contains("shield 0x100"))
      #expect(e.shielded == [w1])
    }

    @Test func knownCapturerReusingABaseWithinLingerIsPinned() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      _ = e.handle(.clientGone(ff), now: t(2))  // linger until 4
      let second = ClientIdentity(pid: 301, exe: "/usr/bin/ffmpeg", comm: "ffmpeg", uid: 1000)
      _ = e.handle(.clientConnected(ff, second), now: t(2.5))  // same base, new ffmpeg
      _ = e.handle(.tick, now: t(10))
      #expect(e.isCapturing)
      #expect(e.shielded == [w1])
      #expect(e.sessions.values.contains { $0.kind == .known && $0.pinned && $0.identity == second })
    }

    @Test func allowedClientOnAReusedBaseDoesNotEndThePreviousClientsLinger() {
      var e = Engine(policy: policy(allow: [allowShell]))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      _ = e.handle(.clientGone(ff), now: t(2))  // linger until 4
      _ = e.handle(.clientConnected(ff, nil), now: t(2.5))
      let fx = e.handle(.clientIdentified(ff, shellID), now: t(3))
      #expect(audits(fx, "session-end").isEmpty)
      #expect(e.shielded == [w1])
      #expect(e.sessions.values.first?.identity == ffmpegID)
      _ = e.handle(.tick, now: t(4))
      #expect(e.shielded.isEmpty)
    }

    struct PlainWindowCase: Sendable, CustomTestStringConvertible {
      var name: String
      var info: WindowInfo
      var testDescription: String { name }
    }

    static let plainWindows: [PlainWindowCase] = [
      PlainWindowCase(name: "no tag", info: window(w4, class: "XTerm")),
      PlainWindowCase(name: "tag 0", info: window(w4, class: "XTerm", tag: .notSecure)),
      PlainWindowCase(name: "no rule matches", info: window(w4, class: "XTerm", title: "Dashboard")),
      PlainWindowCase(name: "unknown facts, no client", info: window(w4, client: nil, known: false)),
    ]

    /// `_CAPTURE_SHIELD_STATE` only lists secure or shielded windows, so a plain window
    /// appearing must not make the shell rewrite it.
    @Test("a non-secure window appearing does not publish state", arguments: plainWindows)
    func nonSecureWindowDoesNotPublish(_ c: PlainWindowCase) {
      var e = Engine(policy: policy(secure: [bankRule]))
      let before = e.snapshot(pid: 1, display: ":0", startedAt: 0)
      let fx = e.handle(.windowAppeared(c.info), now: t(0))
      #expect(e.snapshot(pid: 1, display: ":0", startedAt: 0) == before)
      #expect(describe(fx) == [])
    }

    @Test func secureWindowTitleChangeRepublishes() {
      var e = Engine(policy: policy(when: .always))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      let fx = e.handle(.windowChanged(window(w1, class: "KeePassXC", title: "Renamed", tag: .secure)), now: t(1))
      #expect(e.secureWindowTitles()[w1] == "Renamed")
      #expect(e.snapshot(pid: 1, display: ":0", startedAt: 0).windows.first?.title == nil)
      #expect(describe(fx) == ["publish"])
    }

    @Test func sessionsEndedByAReloadAreAuditedInSessionOrder() {
      var e = Engine(policy: policy())
      let clients = (0..<8).map { ClientID(0x100_0000 + $0 * 0x20_0000) }
      for (i, c) in clients.enumerated() {
        _ = e.handle(.clientConnected(c, ClientIdentity(pid: 1000 + i, exe: "/usr/bin/ffmpeg")), now: t(0))
      }
      var p = policy()
      p.captureKnown = []
      let ended = audits(e.handle(.policyReplaced(p), now: t(1)), "session-end").map { $0["session"] }
      #expect(ended.count == 8)
      #expect(ended == (1...8).map { AuditRecord.Value.int($0) })
    }

    /// Provisional windows count as the client's secure windows (`secureByClient`), so two
    /// unknown windows of one client keep each other provisional once the shields drop.
    @Test func unknownWindowsAreNotProvisionalAfterTheShieldsDrop() {
      var e = Engine(policy: policy())
      _ = e.handle(.clientConnected(grab, grabberID), now: t(0))
      _ = e.handle(.windowAppeared(window(w3, client: grab, known: false)), now: t(0.5))
      _ = e.handle(.windowAppeared(window(w4, client: grab, known: false)), now: t(0.5))
      _ = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      #expect(e.shielded == [w3, w4])
      _ = e.handle(.clientGone(ff), now: t(2))
      let fx = e.handle(.tick, now: t(4))
      #expect(!e.shieldsActive)
      #expect(e.shielded.isEmpty)
      #expect(e.windows[w3]?.reason == SecureReason.none)
      #expect(e.windows[w4]?.reason == SecureReason.none)
      #expect(describe(fx).contains("notify false []"))
      #expect(e.snapshot(pid: 1, display: ":0", startedAt: 0).windows.isEmpty)
    }

    /// `Session.bypass` is only set when a bypass request starts a session; one that
    /// extends a live session leaves it unset, so a later `allow` classification ends a
    /// session whose client attempted a bypass.
    @Test func bypassRequestExtendingASessionSurvivesAllow() {
      var e = Engine(policy: policy(allow: [allowShell]))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(shell, nil), now: t(0))
      _ = e.handle(.captureRequest(shell, CaptureRequest(kind: "GetImage")), now: t(1))
      let fx = e.handle(
        .captureRequest(
          shell, CaptureRequest(kind: "Composite RedirectWindow(Manual)", target: w1, bypassesShield: true)),
        now: t(1.5))
      #expect(audits(fx, "shield-bypass-attempt").count == 1)
      let fx2 = e.handle(.clientIdentified(shell, shellID), now: t(2))
      #expect(audits(fx2, "session-end").isEmpty)
      #expect(e.shielded == [w1])
    }

    /// `handle` keeps `self.now` monotonic but computes deadlines from the `now` parameter,
    /// so an event stamped before the previous one gets deadlines in the past.
    @Test func eventStampedInThePastUsesTheEngineClock() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.tick, now: t(10))
      let fx = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(7))
      #expect(e.now == t(10))
      #expect(audits(fx, "session-end").isEmpty)
      #expect(e.shielded == [w1])
      #expect(e.nextDeadline == t(12))
    }

    @Test func regexAlternationAndLazyQuantifiersMatchTheWholeValue() {
      let alternation = pat("/Bank|Banking/")
      let lazy = pat("/.*?Bank.*?/")
      #expect(alternation.matches("Bank"))
      #expect(!alternation.matches("Bankin"))
      #expect(alternation.matches("Banking"))
      #expect(lazy.matches("My Bank account"))
    }
  }
}

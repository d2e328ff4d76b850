import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension EngineTests {

  /// Client classes (`capture.allow`, `capture.known`) and client lifetimes.
  @Suite struct Clients {
    struct ClassCase: Sendable, CustomTestStringConvertible {
      var name: String
      var identity: ClientIdentity?
      var allowFFmpeg = false
      var expected: ClientClass
      var testDescription: String { name }
    }

    static let classCases: [ClassCase] = [
      ClassCase(name: "no identity", identity: nil, expected: .unidentified),
      ClassCase(
        name: "no pid, even with an allowed exe",
        identity: ClientIdentity(exe: "/usr/bin/gnome-shell", failure: "TCP client"), expected: .unidentified),
      ClassCase(name: "allowed", identity: shellID, expected: .allowed),
      ClassCase(name: "default known: ffmpeg", identity: ffmpegID, expected: .known),
      ClassCase(
        name: "default known: obs", identity: ClientIdentity(pid: 9, exe: "/snap/obs-studio/bin/obs"), expected: .known),
      ClassCase(
        name: "default known: vokoscreen*", identity: ClientIdentity(pid: 9, exe: "/usr/bin/vokoscreenNG"),
        expected: .known),
      ClassCase(
        name: "*/ffmpeg needs a directory", identity: ClientIdentity(pid: 9, exe: "ffmpeg"), expected: .ordinary),
      ClassCase(
        name: "*/ffmpeg is whole-value", identity: ClientIdentity(pid: 9, exe: "/usr/bin/ffmpeg-static"),
        expected: .ordinary),
      ClassCase(name: "ordinary", identity: grabberID, expected: .ordinary),
      ClassCase(name: "allow is checked before known", identity: ffmpegID, allowFFmpeg: true, expected: .allowed),
    ]

    @Test("capture.allow / capture.known classification", arguments: classCases)
    func classify(_ c: ClassCase) {
      var allow = [allowShell]
      if c.allowFFmpeg { allow.append(Matcher(exe: pat("*/ffmpeg"))) }
      var e = Engine(policy: policy(allow: allow))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      #expect(e.policy.classify(c.identity) == c.expected)
      let fx = e.handle(.clientConnected(grab, c.identity), now: t(1))
      #expect(e.clients[grab]?.clientClass == c.expected)
      #expect(e.isCapturing == (c.expected == .known))
      let kinds: [AuditRecord.Value?] = c.expected == .known ? ["known"] : []
      #expect(audits(fx, "session-start").map { $0["kind"] } == kinds)
    }

    @Test(
      "unidentified clients are never allowed: a request starts a session",
      arguments: [
        ClientIdentity?.none, ClientIdentity(exe: "/usr/bin/gnome-shell", failure: "TCP client"),
        ClientIdentity(exe: "/usr/bin/gnome-shell", comm: "gnome-shell", uid: 1000, failure: "process gone"),
      ])
    func unidentifiedNeverAllowed(_ identity: ClientIdentity?) {
      var e = Engine(policy: policy(allow: [allowShell]))
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      _ = e.handle(.clientConnected(shell, identity), now: t(0))
      let fx = e.handle(.captureRequest(shell, CaptureRequest(kind: "GetImage")), now: t(1))
      #expect(audits(fx, "capture-request").first?["class"] == "unidentified")
      #expect(audits(fx, "session-start").count == 1)
      #expect(e.shielded == [w1])
      #expect(e.isCapturing)
    }

    @Test func captureRequestFromAnUnconnectedClientIsUnidentified() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      let fx = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage", target: 0x1d0)), now: t(1))
      let r = audits(fx, "capture-request").first
      #expect(r?["class"] == "unidentified")
      #expect(r?["target"] == "0x1d0")
      #expect(r?["identity"] == "unknown")
      #expect(e.clients[grab]?.captureRequests == 1)
      #expect(e.shielded == [w1])
    }

    /// A request recorded before its client's end but handled after it (the shell reads
    /// RECORD in batches; the order of its parts is not the server's): the session must not
    /// be pinned to a connection that is over (a shield that never came down).
    struct LateRequestCase: Sendable, CustomTestStringConvertible {
      var name: String
      var before: [Engine.Event]
      /// Sessions after the request; then after `linger` (2 s) whether the shield is down.
      var sessions: [String]
      var downAfterLinger: Bool
      var testDescription: String { name }
    }

    static let lateRequestCases: [LateRequestCase] = [
      LateRequestCase(
        name: "handled after its client went: detached at once, ends after the linger",
        before: [.clientConnected(grab, grabberID), .clientGone(grab)],
        sessions: ["#1 request 0x600000 req=1 until 3"], downAfterLinger: true),
      LateRequestCase(
        name: "never seen connecting, gone, then its request: the same",
        before: [.clientGone(grab)], sessions: ["#1 request 0x600000 req=1 until 3"], downAfterLinger: true),
      // controls: a client that is connected keeps its session pinned
      LateRequestCase(
        name: "control: connected, its request: pinned while connected",
        before: [.clientConnected(grab, grabberID)], sessions: ["#1 request 0x600000 req=1 pinned"],
        downAfterLinger: false),
      LateRequestCase(
        name: "control: gone, then a new client with the same base connects: pinned",
        before: [.clientConnected(grab, grabberID), .clientGone(grab), .clientConnected(grab, xtermID)],
        sessions: ["#1 request 0x600000 req=1 pinned"], downAfterLinger: false),
    ]

    @Test("a capture request handled after its client's end", arguments: lateRequestCases)
    func lateRequest(_ c: LateRequestCase) {
      var e = Engine(policy: policy(hold: .connected))
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      for ev in c.before { _ = e.handle(ev, now: t(0.5)) }
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage(own window)", target: 0x60_0001)), now: t(1))
      #expect(sessionSummary(e) == c.sessions)
      #expect(e.shielded == [w1])
      _ = e.handle(.tick, now: t(3))
      #expect(e.shielded.isEmpty == c.downAfterLinger, "shielded after the linger: \(e.shielded)")
      #expect(e.sessions.isEmpty == c.downAfterLinger)
    }

    /// InputOnly windows have no pixels: never shielded, even secure, provisional or forced
    /// (a shield inside one fails with BadMatch: the "error" records at shutter's start).
    @Test("an InputOnly window is never shielded", arguments: [false, true])
    func inputOnlyNeverShielded(_ inputOnly: Bool) {
      var e = Engine(policy: policy())
      var tagged = window(w3, tag: .secure)
      tagged.inputOnly = inputOnly
      var unknown = window(w4, known: false)
      unknown.inputOnly = inputOnly
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      _ = e.handle(.windowAppeared(tagged), now: t(0))
      _ = e.handle(.clientConnected(grab, grabberID), now: t(0))
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(1))
      _ = e.handle(.windowAppeared(unknown), now: t(1.1))
      _ = e.handle(.manualOverride(w2, shielded: true, by: "test"), now: t(1.2))
      // control (inputOnly false): the tagged and the provisional window are shielded
      #expect(e.shielded == (inputOnly ? [w1, w2] : [w1, w2, w3, w4]))
      #expect(e.windows[w3]?.reason.isSecure == true)
      var forced = window(w2, class: "Firefox", title: "Online Banking")
      forced.inputOnly = inputOnly
      _ = e.handle(.windowChanged(forced), now: t(1.3))
      #expect(e.shielded.contains(w2) == !inputOnly)
    }

    @Test func departedClientsAreBounded() {
      var e = Engine(policy: policy())
      let n = Engine.departedLimit + 10
      for i in 0..<n { _ = e.handle(.clientGone(ClientID(UInt32(i + 1) << 21)), now: t(0)) }
      #expect(e.departed.count == Engine.departedLimit)
      #expect(!e.departed.contains(ClientID(1 << 21)))
      #expect(e.departed.contains(ClientID(UInt32(n) << 21)))
      _ = e.handle(.clientConnected(ClientID(UInt32(n) << 21), nil), now: t(1))
      #expect(!e.departed.contains(ClientID(UInt32(n) << 21)))
    }

    @Test func auditsCarryTheCapturerIdentity() {
      var e = Engine(policy: policy())
      _ = e.handle(.windowAppeared(secureWindow), now: t(0))
      let fx = e.handle(.clientConnected(ff, ffmpegID), now: t(1))
      for event in ["session-start", "shield"] {
        let r = audits(fx, event).first
        #expect(r?["pid"] == .int(300), "\(event)")
        #expect(r?["exe"] == "/usr/bin/ffmpeg", "\(event)")
        #expect(r?["comm"] == "ffmpeg", "\(event)")
        #expect(r?["uid"] == .int(1000), "\(event)")
      }
      _ = e.handle(.clientGone(ff), now: t(2))
      let end = audits(e.handle(.tick, now: t(4)), "session-end").first
      #expect(end?["seconds"] == .double(3))
      #expect(end?["requests"] == .int(0))
      #expect(end?["pid"] == .int(300))
    }

    @Test func reusedBaseDoesNotCarryClientState() {
      var e = Engine(policy: policy(allow: [allowShell]))
      _ = e.handle(.clientConnected(grab, grabberID), now: t(0))
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(1))
      _ = e.handle(.captureRequest(grab, CaptureRequest(kind: "GetImage")), now: t(1))
      _ = e.handle(.clientGone(grab), now: t(2))
      #expect(e.clients[grab] == nil)
      _ = e.handle(.clientConnected(grab, shellID), now: t(2.5))
      let c = e.clients[grab]
      #expect(c?.identity == shellID)
      #expect(c?.clientClass == .allowed)
      #expect(c?.captureRequests == 0)
      #expect(c?.firstCaptureAt == nil)
      #expect(c?.connectedAt == t(2.5))
    }
  }
}

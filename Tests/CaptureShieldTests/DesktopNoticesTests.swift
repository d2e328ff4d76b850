// The capture notices component (`DesktopNotices`) on a recording fake sender, driven as
// the loop drives it: on and off with `notify.enabled`, what it audits and sends, and the
// rate limit's held-back notice; no X server, no session bus.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// Records what the component asks of the session bus.
final class RecordingSender: NoticeSender {
  var probes = 0
  var sent: [CaptureNotifier.Notice] = []
  func probe() { probes += 1 }
  func send(_ notice: CaptureNotifier.Notice) { sent.append(notice) }
}

@Suite struct DesktopNoticesTests {
  static let app = ClientID(0x40_0000)
  static let secret: WindowID = 0x40_0001

  /// The component with its fakes, and an engine it follows (`sync` after every event, as
  /// the loop calls it).
  final class Rig {
    var senders: [RecordingSender] = []
    var audits: [String] = []
    var engine: Engine
    lazy var notices = DesktopNotices(
      makeSender: { [unowned self] in
        let s = RecordingSender()
        self.senders.append(s)
        return s
      }, audit: { [unowned self] in self.audits.append($0.event) })

    init(notify: Bool) {
      var p = Policy()
      p.notify = notify
      engine = Engine(policy: p)
    }

    func handle(_ e: Engine.Event, at t: Double) {
      _ = engine.handle(e, now: .seconds(t))
      notices.sync(engine: engine, serverEnforced: false)
    }

    /// A mapped secure window of the app, then `base` running `exe` captures it.
    func capture(_ base: UInt32, _ exe: String, at t: Double) {
      let id = ClientIdentity(pid: Int(base >> 16), exe: exe, comm: exe, uid: 1000)
      handle(.clientConnected(ClientID(base), id), at: t)
      handle(.captureRequest(ClientID(base), CaptureRequest(kind: "GetImage", target: 0x100)), at: t)
    }

    func secureWindow(at t: Double) {
      handle(
        .windowAppeared(
          WindowInfo(
            id: DesktopNoticesTests.secret, client: DesktopNoticesTests.app, tag: .secure,
            propertiesKnown: true, mapped: true)), at: t)
    }
  }

  /// With `notify.enabled` a capture of a protected window is audited and sent once; without
  /// it nothing is made, audited or sent.
  @Test(arguments: [true, false])
  func aCaptureIsNoticedOnlyWhenEnabled(notify: Bool) {
    let r = Rig(notify: notify)
    r.secureWindow(at: 0)
    r.capture(0x80_0000, "/usr/bin/xwd", at: 1)
    #expect(r.senders.count == (notify ? 1 : 0))
    #expect(r.senders.first?.probes == (notify ? 1 : nil))
    #expect(r.senders.first?.sent.map(\.program) == (notify ? ["xwd"] : nil))
    #expect(r.audits == (notify ? ["capture-notice"] : []))
    #expect(r.notices.nextDeadline == nil)
  }

  /// A second program within the rate limit's 5 s is held back, sent when due.
  @Test func aHeldBackNoticeIsSentWhenDue() {
    let r = Rig(notify: true)
    r.secureWindow(at: 0)
    r.capture(0x80_0000, "/usr/bin/xwd", at: 1)
    r.capture(0xa0_0000, "/usr/bin/import", at: 2)
    #expect(r.senders[0].sent.map(\.program) == ["xwd"])
    let d = r.notices.nextDeadline
    #expect(d == .seconds(6))
    r.notices.due(now: .seconds(5))
    #expect(r.senders[0].sent.count == 1)
    r.notices.due(now: .seconds(6))
    #expect(r.senders[0].sent.map(\.program) == ["xwd", "import"])
    #expect(r.audits == ["capture-notice", "capture-notice"])
  }

  /// Turned off by a reload: the sender is dropped (audited once), a notice held back is
  /// not sent, other parts' notices neither; turned on again: a new sender, probed, and a
  /// new decider, which tells of the capture still running (xwd's; import's is within 5 s).
  @Test func offAndOnWithThePolicy() {
    let r = Rig(notify: true)
    r.secureWindow(at: 0)
    r.capture(0x80_0000, "/usr/bin/xwd", at: 1)
    r.capture(0xa0_0000, "/usr/bin/import", at: 2)
    var off = r.engine.policy
    off.notify = false
    r.handle(.policyReplaced(off), at: 3)
    #expect(r.notices.sender == nil)
    #expect(r.notices.nextDeadline == nil)
    r.notices.due(now: .seconds(10))
    r.notices.send(CaptureNotifier.Notice(program: "x", pid: nil, windows: 1, protection: .hidden, trigger: "t"))
    #expect(r.senders[0].sent.count == 1)
    #expect(r.audits == ["capture-notice", "notifications"])
    var on = off
    on.notify = true
    r.handle(.policyReplaced(on), at: 4)
    #expect(r.senders.count == 2)
    #expect(r.senders[1].probes == 1)
    r.notices.send(CaptureNotifier.Notice(program: "x", pid: nil, windows: 1, protection: .hidden, trigger: "t"))
    #expect(r.senders[1].sent.map(\.program) == ["xwd", "x"])
  }

  /// Under the Xorg module a censored read is a notice (once a minute per program).
  @Test func censoredReads() {
    var p = Policy()
    p.notify = true
    p.when = .always
    let r = Rig(notify: true)
    r.engine = Engine(policy: p)
    r.secureWindow(at: 0)
    let id = ClientIdentity(pid: 7, exe: "/usr/bin/xwd", comm: "xwd", uid: 1000)
    for t in [1.0, 2, 30] {
      r.notices.censored(reader: ClientID(0x80_0000), identity: id, engine: r.engine, now: .seconds(t))
    }
    #expect(r.senders[0].sent.map(\.trigger) == ["censored"])
    #expect(r.audits == ["capture-notice"])
  }
}

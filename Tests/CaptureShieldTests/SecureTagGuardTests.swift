// The tag guard (`SecureTagGuard`, its decisions in `TagRemovals`) on a recording fake
// connection and a fake RECORD source: which removals of a secure tag stand, which tags are
// put back (the ChangeProperty it sends) and what is audited, with no X server.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension RecordingConnection: TagGuardConnection {
  func clientPID(of xid: UInt32) -> Int? { nil }
}

/// Recorded `DeleteProperty` requests, handed out by `drain` in the order a test queued them.
final class FakeTagDeletions: TagDeletionSource {
  let ownBases: [UInt32] = [0x60_0000, 0x80_0000]
  let fileDescriptor: Int32 = -1
  var hasError = false
  var queued: [(window: WindowID, client: ClientID)] = []
  func drain() -> [(window: WindowID, client: ClientID)] {
    defer { queued = [] }
    return queued
  }
}

@Suite struct SecureTagGuardTests {
  static let owner = ClientID(0x20_0000)
  static let other = ClientID(0xa0_0000)
  static let daemon: Set<ClientID> = [ClientID(0x40_0000)]
  static let w: WindowID = 0x20_0001
  static let secureAtom: UInt32 = 0x150

  /// A guard on fakes, with one tracked secure window of `owner`.
  final class Rig {
    let x = RecordingConnection()
    let deletions = FakeTagDeletions()
    var audits: [AuditRecord] = []
    var tracked: [WindowID: WindowInfo] = [
      SecureTagGuardTests.w: WindowInfo(
        id: SecureTagGuardTests.w, client: SecureTagGuardTests.owner, tag: .secure, propertiesKnown: true)
    ]
    lazy var guardian = SecureTagGuard(
      connection: x, secureAtom: SecureTagGuardTests.secureAtom, watch: deletions
    ) { [unowned self] in self.audits.append($0) }
    var view: SecureTagGuard.View {
      SecureTagGuard.View(
        daemon: SecureTagGuardTests.daemon, window: { self.tracked[$0] },
        knownIdentity: { _ in ClientIdentity(pid: 4242, exe: "/usr/bin/xprop", comm: "xprop", uid: 1000) })
    }
    /// The tag put back on `w`, as the fake saw it.
    var restores: [RecordingConnection.Request] { x.requests }
    static let restore = RecordingConnection.Request.property(
      SecureTagGuardTests.w, atom: SecureTagGuardTests.secureAtom, bytes: [1, 0, 0, 0])
  }

  static func field(_ r: AuditRecord, _ key: String) -> AuditRecord.Value? {
    r.fields.first { $0.key == key }?.value
  }

  static func lifts(_ effects: [SecureTagGuard.Effect]) -> [WindowID] {
    effects.compactMap { if case .lift(let w, _) = $0 { return w } else { return nil } }
  }

  /// The record comes before its PropertyNotify (the usual order): decided at once.
  @Test(arguments: [(owner, false), (ClientID(0x40_0000), false), (other, true)])
  func recordFirst(remover: ClientID, kept: Bool) {
    let r = Rig()
    r.deletions.queued = [(Self.w, remover)]
    let (keep, effects) = r.guardian.removed(Self.w, to: .absent, r.view, now: .seconds(10))
    #expect(keep == kept)
    #expect(effects.isEmpty)
    #expect(r.restores == (kept ? [Rig.restore] : []))
    #expect(r.audits.map(\.event) == (kept ? ["tag-tampered"] : []))
    #expect(r.guardian.nextDeadline == nil)
    if kept {
      #expect(Self.field(r.audits[0], "how") == .string("deleted"))
      #expect(Self.field(r.audits[0], "client") == .string(Self.other.description))
      #expect(Self.field(r.audits[0], "pid") == .int(4242))
    }
  }

  /// The PropertyNotify comes first: the removal is held; the record then decides, and a
  /// lift comes back to the loop as an effect with the tag the change gave.
  @Test(arguments: [(owner, false), (other, true)])
  func notifyFirst(remover: ClientID, restored: Bool) {
    let r = Rig()
    #expect(r.guardian.removed(Self.w, to: .absent, r.view, now: .seconds(10)).keep)
    #expect(r.guardian.isPending(Self.w))
    #expect(r.guardian.nextDeadline == .seconds(11))
    r.deletions.queued = [(Self.w, remover)]
    let effects = r.guardian.drain(r.view, now: .seconds(10.2))
    #expect(Self.lifts(effects) == (restored ? [] : [Self.w]))
    #expect(r.restores == (restored ? [Rig.restore] : []))
    #expect(!r.guardian.isPending(Self.w))
  }

  /// No DeleteProperty ever recorded (a ChangeProperty to 0): put back at the deadline.
  @Test func zeroedIsPutBackAtTheDeadline() {
    let r = Rig()
    #expect(r.guardian.removed(Self.w, to: .notSecure, r.view, now: .seconds(10)).keep)
    r.guardian.expire(r.view, now: .seconds(10.5))
    #expect(r.restores.isEmpty)
    r.guardian.expire(r.view, now: .seconds(11))
    #expect(r.restores == [Rig.restore])
    #expect(r.audits.count == 1)
    #expect(r.audits.first.flatMap { Self.field($0, "how") } == .string("zeroed"))
    #expect(r.guardian.nextDeadline == nil)
  }

  /// A window gone or tagged again while its removal is held: nothing is put back.
  @Test func goneOrTaggedAgainVoidsTheHold() {
    let r = Rig()
    _ = r.guardian.removed(Self.w, to: .absent, r.view, now: .seconds(10))
    r.guardian.tagSet(Self.w)
    r.guardian.expire(r.view, now: .seconds(12))
    _ = r.guardian.removed(Self.w, to: .absent, r.view, now: .seconds(20))
    r.guardian.windowGone(Self.w)
    r.tracked = [:]
    r.guardian.expire(r.view, now: .seconds(22))
    #expect(r.restores.isEmpty)
    #expect(r.audits.isEmpty)
  }

  /// `shieldctl untag`: the daemon's own removal stands, once.
  @Test func untagCommandStandsOnce() {
    let r = Rig()
    r.guardian.untagCommand(Self.w, hasTag: true)
    #expect(!r.guardian.removed(Self.w, to: .absent, r.view, now: .seconds(10)).keep)
    #expect(r.guardian.removed(Self.w, to: .absent, r.view, now: .seconds(11)).keep)
    #expect(r.restores.isEmpty)
  }

  /// A recorded deletion waits 2 s for its PropertyNotify; an older one is not matched.
  @Test func oldRecordsAreForgotten() {
    let r = Rig()
    r.deletions.queued = [(Self.w, Self.owner)]
    _ = r.guardian.drain(r.view, now: .seconds(10))
    #expect(r.guardian.removed(Self.w, to: .absent, r.view, now: .seconds(12)).keep)
    #expect(r.guardian.isPending(Self.w))
  }

  /// Without a RECORD source every removal stands; a source that ended is handed to the
  /// loop once (to replace) and dropped.
  @Test func withoutOrAfterTheWatch() {
    let r = Rig()
    r.deletions.hasError = true
    let effects = r.guardian.drain(r.view, now: .seconds(10))
    #expect(effects.count == 1)
    if case .watchEnded(let old) = effects.first { #expect(old === r.deletions) } else { Issue.record("no watchEnded") }
    #expect(r.guardian.watch == nil)
    #expect(!r.guardian.removed(Self.w, to: .absent, r.view, now: .seconds(10)).keep)
    #expect(r.restores.isEmpty)
  }
}

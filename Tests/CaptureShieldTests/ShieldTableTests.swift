// The shield lifecycle (`ShieldTable`) and the pump's bookkeeping (`PumpState`): pure state
// machines, tested with tables of event sequences and the operations they return.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

private let t1: WindowID = 0x40_0001
private let t2: WindowID = 0x40_0002
private let s1: UInt32 = 0x20_0001
private let s2: UInt32 = 0x20_0002
private let child: UInt32 = 0x40_0009
private let moved = ShieldTable.Placement(x: 30000, y: 30000, width: 32767, height: 32767, border: 0)
private let tiny = ShieldTable.Placement(x: 0, y: 0, width: 1, height: 1, border: 0)
private let unknown = ShieldTable.unknownClient

/// A table with shields `s1` in `t1` (up) and `s2` in `t2` (hidden), registry written.
private func twoShields() -> ShieldTable {
  var table = ShieldTable()
  _ = table.handle(.created(t1, shield: s1, mapped: true, plain: false))
  _ = table.handle(.created(t2, shield: s2, mapped: false, plain: false))
  _ = table.handle(.flushRegistry)
  return table
}

/// One row: events fed to `twoShields()` and the operations of the last one.
struct ShieldTableCase: CustomTestStringConvertible, Sendable {
  let name: String
  let events: [ShieldTable.Event]
  let ops: [ShieldTable.Operation]
  var testDescription: String { name }
}

private let cases: [ShieldTableCase] = [
  .init(name: "a new target's shield is created, mapped", events: [.shield(0x99)], ops: [.create(0x99, mapped: true)]),
  .init(name: "prepare creates unmapped", events: [.prepare(0x99)], ops: [.create(0x99, mapped: false)]),
  .init(name: "prepare of an existing shield does nothing", events: [.prepare(t2)], ops: []),
  .init(name: "an existing shield is mapped and raised", events: [.shield(t2)], ops: [.map(s2), .raise(s2)]),
  .init(
    name: "a plain shield gets its tile before it is mapped",
    events: [.created(0x99, shield: 0x77, mapped: true, plain: true), .shield(0x99)],
    ops: [.retile(0x99, shield: 0x77), .map(0x77), .raise(0x77)]),
  .init(name: "shieldAtOnce creates plain", events: [.shieldAtOnce(0x99)], ops: [.createPlain(0x99)]),
  .init(name: "shieldAtOnce of a shielded window does nothing", events: [.shieldAtOnce(t1)], ops: []),
  .init(name: "unshield is deferred to the commit", events: [.unshield(t1)], ops: []),
  .init(name: "the commit unmaps what was taken down", events: [.unshield(t1), .commitUnmaps], ops: [.unmap(s1)]),
  .init(
    name: "a shield put up again before the commit is left up", events: [.unshield(t1), .shield(t1), .commitUnmaps],
    ops: []),
  .init(name: "unshield of a hidden shield does nothing", events: [.unshield(t2), .commitUnmaps], ops: []),
  .init(
    name: "our own unmap is not tampering",
    events: [
      .unshield(t1), .commitUnmaps, .unmapSent(shield: s1, sequence: 7), .shield(t1),
      .unmapNotify(window: s1, event: t1, sequence: 7),
    ],
    ops: []),
  .init(
    name: "another client's unmap is re-asserted and reported",
    events: [.unmapNotify(window: s1, event: t1, sequence: 9)],
    ops: [.map(s1), .lost(t1, how: "unmapped by another client")]),
  .init(
    name: "an unmap of a hidden shield is not tampering", events: [.unmapNotify(window: s2, event: t2, sequence: 9)],
    ops: []),
  .init(
    name: "a shield destroyed by another client is reported",
    events: [.destroyNotify(window: s1, event: t1, targetAlive: true)],
    ops: [.lost(t1, how: "destroyed by another client")]),
  .init(
    name: "a shield destroyed with its target is not tampering",
    events: [.destroyNotify(window: s1, event: t1, targetAlive: false)], ops: []),
  .init(
    name: "after a destroyed shield, shielding creates a new one",
    events: [.destroyNotify(window: s1, event: t1, targetAlive: true), .shield(t1)], ops: [.create(t1, mapped: true)]),
  .init(
    name: "an app's new child raises the shield", events: [.childCreated(window: child, parent: t1)], ops: [.raise(s1)]),
  .init(
    name: "an app's mapped child raises the shield", events: [.childMapped(window: child, parent: t1)],
    ops: [.raise(s1)]),
  .init(
    name: "a child restacked above the shield raises it",
    events: [.childRestacked(window: child, parent: t1, aboveSibling: s1)], ops: [.raise(s1)]),
  .init(
    name: "a child restacked elsewhere does nothing",
    events: [.childRestacked(window: child, parent: t1, aboveSibling: 0)], ops: []),
  .init(name: "our own shield's creation raises nothing", events: [.childCreated(window: s1, parent: t1)], ops: []),
  .init(name: "an expose draws the label", events: [.exposed(window: s1)], ops: [.drawLabel(shield: s1, target: t1)]),
  .init(name: "destroy removes the shield", events: [.destroy(t1)], ops: [.destroy(shield: s1, target: t1)]),
  .init(
    name: "the registry is written after a change", events: [.destroy(t1), .flushRegistry],
    ops: [.writeRegistry([s2, t2])]),
  .init(name: "the registry is not rewritten without a change", events: [.flushRegistry], ops: []),
  .init(
    name: "forgetting a target without a shield changes nothing", events: [.forget(0x99), .flushRegistry], ops: []),
  .init(
    name: "forgetting a shielded target rewrites the registry", events: [.forget(t1), .flushRegistry],
    ops: [.writeRegistry([s2, t2])]),
  .init(
    name: "dropProvisional destroys a plain shield",
    events: [.created(0x99, shield: 0x77, mapped: true, plain: true), .dropProvisional(0x99)],
    ops: [.destroy(shield: 0x77, target: 0x99)]),
  .init(name: "dropProvisional keeps a tiled shield", events: [.dropProvisional(t1)], ops: []),
  .init(
    name: "an adopted shield is watched", events: [.adopted(0x99, shield: 0x77)], ops: [.watch(0x99, shield: 0x77)]),

  // Tampering other than unmap/destroy: repaired at the event that reveals it, reported
  // when the shield was up.
  .init(
    name: "a shield moved by another client is put back and reported",
    events: [.childRestacked(window: s1, parent: t1, aboveSibling: 0, placement: moved, sequence: 9)],
    ops: [.replace(s1), .lost(t1, how: "moved or resized to 32767x32767+30000+30000 \(unknown)")]),
  .init(
    name: "a shield resized by another client is put back and reported",
    events: [.childRestacked(window: s1, parent: t1, aboveSibling: 0, placement: tiny, sequence: 9)],
    ops: [.replace(s1), .lost(t1, how: "moved or resized to 1x1+0+0 \(unknown)")]),
  .init(
    name: "a hidden shield moved is put back, not reported",
    events: [.childRestacked(window: s2, parent: t2, aboveSibling: 0, placement: moved, sequence: 9)],
    ops: [.replace(s2)]),
  .init(
    name: "a shield restacked by another client is checked, as tampering",
    events: [.childRestacked(window: s1, parent: t1, aboveSibling: 0, sequence: 9)],
    ops: [.checkStacking(t1, shield: s1, tampered: true, how: "restacked \(unknown)")]),
  .init(
    name: "our own raise is checked too, not as tampering",
    events: [
      .configureSent(shield: s1, sequence: 9), .childRestacked(window: s1, parent: t1, aboveSibling: 0, sequence: 9),
    ],
    ops: [.checkStacking(t1, shield: s1, tampered: false, how: "restacked \(unknown)")]),
  .init(
    name: "a second restack with our raise's sequence is another client's",
    events: [
      .configureSent(shield: s1, sequence: 9), .childRestacked(window: s1, parent: t1, aboveSibling: 0, sequence: 9),
      .childRestacked(window: s1, parent: t1, aboveSibling: 0, sequence: 9),
    ],
    ops: [.checkStacking(t1, shield: s1, tampered: true, how: "restacked \(unknown)")]),
  .init(
    name: "a shield circulated by another client is checked, as tampering",
    events: [.childCirculated(window: s1, parent: t1)],
    ops: [.checkStacking(t1, shield: s1, tampered: true, how: "restacked (CirculateWindow) \(unknown)")]),
  .init(
    name: "a child circulated to the top is checked, not as tampering",
    events: [.childCirculated(window: child, parent: t1)],
    ops: [.checkStacking(t1, shield: s1, tampered: false, how: "restacked (CirculateWindow) \(unknown)")]),
  .init(
    name: "a shield reparented away is replaced and reported",
    events: [.reparented(window: s1, event: t1, parent: 0x60_0001)],
    ops: [
      .discard(s1), .create(t1, mapped: true), .lost(t1, how: "reparented into window 0x600001 \(unknown)"),
    ]),
  .init(
    name: "after a reparenting, the old shield's events are not ours",
    events: [
      .reparented(window: s1, event: t1, parent: 0x60_0001),
      .childRestacked(window: s1, parent: t1, aboveSibling: 0, placement: moved, sequence: 9),
    ],
    ops: []),
  .init(
    name: "a hidden shield reparented away is replaced, hidden, not reported",
    events: [.reparented(window: s2, event: t2, parent: 0x60_0001)], ops: [.discard(s2), .create(t2, mapped: false)]),
  .init(
    name: "a child reparented into the target is not tampering",
    events: [.reparented(window: child, event: t1, parent: t1)], ops: []),
  .init(
    name: "a bounding shape is reset and reported", events: [.shapeChanged(window: s1, kind: 0, shaped: true)],
    ops: [.resetShape(s1, kind: 0), .lost(t1, how: "given a bounding shape \(unknown)")]),
  .init(
    name: "a clip shape is reset and reported", events: [.shapeChanged(window: s1, kind: 1, shaped: true)],
    ops: [.resetShape(s1, kind: 1), .lost(t1, how: "given a clip shape \(unknown)")]),
  .init(
    name: "a default shape (our reset) is not tampering", events: [.shapeChanged(window: s1, kind: 0, shaped: false)],
    ops: []),
  .init(name: "the input shape is not tampering", events: [.shapeChanged(window: s1, kind: 2, shaped: true)], ops: []),
  .init(
    name: "a redirected shield is replaced and reported", events: [.redirected(window: s1, how: "redirected by 0x5")],
    ops: [.discard(s1), .create(t1, mapped: true), .lost(t1, how: "redirected by 0x5")]),
  .init(
    name: "a redirected window that is not a shield changes nothing",
    events: [.redirected(window: child, how: "redirected by 0x5")], ops: []),
  .init(
    name: "the replacement after a reparenting is watched with its shape",
    events: [
      .reparented(window: s1, event: t1, parent: 0x60_0001), .created(t1, shield: 0x77, mapped: true, plain: false),
    ],
    ops: [.watch(t1, shield: 0x77)]),
]

@Suite("Shield lifecycle (ShieldTable)")
struct ShieldTableTests {
  @Test(arguments: cases)
  func operations(_ c: ShieldTableCase) {
    var table = twoShields()
    var ops: [ShieldTable.Operation] = []
    for e in c.events { ops = table.handle(e) }
    #expect(ops == c.ops)
  }

  @Test func ownRestacksAreKeptBounded() {
    // X sends no ConfigureNotify for a restack that changes nothing: such numbers stay,
    // only the last few, and an old one is no longer taken for ours.
    var table = twoShields()
    for seq: UInt16 in 1...UInt16(ShieldTable.maxOwnConfigures + 1) {
      _ = table.handle(.configureSent(shield: s1, sequence: seq))
    }
    #expect(table.ownConfigures[s1]?.count == ShieldTable.maxOwnConfigures)
    let old = table.handle(.childRestacked(window: s1, parent: t1, aboveSibling: 0, sequence: 1))
    #expect(old == [.checkStacking(t1, shield: s1, tampered: true, how: "restacked \(ShieldTable.unknownClient)")])
    let recent = table.handle(.childRestacked(window: s1, parent: t1, aboveSibling: 0, sequence: 2))
    #expect(recent == [.checkStacking(t1, shield: s1, tampered: false, how: "restacked \(ShieldTable.unknownClient)")])
  }

  @Test func armableNamesHiddenShieldsOnly() {
    var table = twoShields()
    #expect(table.armable([t1, t2, 0x99]).shields == [s2])
    _ = table.handle(.unshield(t1))
    // Going down at the next commit: armable too.
    #expect(table.armable([t1, t2]).shields == [s1, s2])
    #expect(table.hasPendingUnmaps)
  }

  @Test func markMappedUnlessARemovalIsPending() {
    var table = twoShields()
    _ = table.handle(.markMapped(t2))
    #expect(table.isUp(t2))
    _ = table.handle(.unshield(t1))
    _ = table.handle(.markMapped(t1))
    #expect(!table.isUp(t1))
    #expect(table.handle(.commitUnmaps) == [.unmap(s1)])
  }

  @Test func ownUnmapsAreMatchedInOrder() {
    var table = twoShields()
    for seq: UInt16 in [3, 5] {
      _ = table.handle(.unshield(t1))
      _ = table.handle(.commitUnmaps)
      _ = table.handle(.unmapSent(shield: s1, sequence: seq))
      _ = table.handle(.shield(t1))
    }
    // The event of the second unmap also retires the first (events come in order).
    #expect(table.handle(.unmapNotify(window: s1, event: t1, sequence: 5)) == [])
    #expect(table.ownUnmaps[s1] == nil)
    #expect(table.handle(.unmapNotify(window: s1, event: t1, sequence: 3)).contains(.map(s1)))
  }
}

/// One row of the pump's bookkeeping: records delivered after arming, and what fires.
struct PumpCase: CustomTestStringConvertible, Sendable {
  let name: String
  let armed: [UInt32]
  let excluded: Set<UInt32>
  let started: [UInt32]
  let fires: [[UInt32]]
  var testDescription: String { name }
}

/// A ClientStarted record of `base` (RECORD reply, category 2, client base at offset 12).
private func clientStarted(_ base: UInt32) -> [UInt8] {
  var b = [UInt8](repeating: 0, count: 32)
  b[0] = 1
  b[1] = RecordedReply.Category.clientStarted.rawValue
  withUnsafeBytes(of: base.littleEndian) { for (i, v) in $0.enumerated() { b[12 + i] = v } }
  return b
}

private let pumpCases: [PumpCase] = [
  .init(
    name: "a new client fires what is armed", armed: [s1, s2], excluded: [], started: [0x60_0000], fires: [[s1, s2]]),
  .init(
    name: "a second client fires nothing until re-armed", armed: [s1], excluded: [], started: [0x60_0000, 0x80_0000],
    fires: [[s1], []]),
  .init(
    name: "our own connections fire nothing", armed: [s1], excluded: [0x60_0000], started: [0x60_0000], fires: [[]]),
  .init(name: "nothing armed, nothing fires", armed: [], excluded: [], started: [0x60_0000], fires: [[]]),
]

@Suite("RECORD pump bookkeeping (PumpState)")
struct PumpStateTests {
  @Test(arguments: pumpCases)
  func fires(_ c: PumpCase) throws {
    var p = PumpState(excluded: c.excluded)
    let conn = XCBHandle(raw: try #require(OpaquePointer(bitPattern: 0x1000)))
    let committed1 = p.commit(
      removesShields: false, connection: conn, shields: c.armed, targets: c.armed.map { $0 + 1 })
    #expect(committed1)
    #expect(c.started.map { p.deliver(clientStarted($0)) } == c.fires)
  }

  @Test func removalsWaitForTheLoopToTakeANewClient() throws {
    var p = PumpState(excluded: [])
    let conn = XCBHandle(raw: try #require(OpaquePointer(bitPattern: 0x1000)))
    let committed2 = p.commit(removesShields: false, connection: conn, shields: [s1], targets: [t1])
    #expect(committed2)
    #expect(p.deliver(clientStarted(0x60_0000)) == [s1])
    let committed3 = p.commit(removesShields: true, connection: conn, shields: [], targets: [])
    #expect(!committed3)
    let taken = p.take()
    #expect(taken.fired == [t1])
    #expect(taken.replies.count == 1)
    let committed4 = p.commit(removesShields: true, connection: conn, shields: [], targets: [])
    #expect(committed4)
  }

  @Test func launchesFireAndHoldRemovals() throws {
    var p = PumpState(excluded: [])
    let conn = XCBHandle(raw: try #require(OpaquePointer(bitPattern: 0x1000)))
    _ = p.commit(removesShields: false, connection: conn, shields: [s1], targets: [t1])
    #expect(p.launched(["xwd"]) == [s1])
    let committed5 = p.commit(removesShields: true, connection: conn, shields: [], targets: [])
    #expect(!committed5)
    #expect(p.take().launches == ["xwd"])
  }

  /// Learning without quarantine: a learned capturer's start fires, a connection does not.
  @Test func withoutQuarantineOnlyLaunchesFire() throws {
    var p = PumpState(excluded: [], firesOnStart: false)
    let conn = XCBHandle(raw: try #require(OpaquePointer(bitPattern: 0x1000)))
    _ = p.commit(removesShields: false, connection: conn, shields: [s1], targets: [t1])
    #expect(p.deliver(clientStarted(0x60_0000)) == [])
    #expect(p.launched(["scrot"]) == [s1])
    #expect(p.take().fired == [t1])
  }

  @Test func disarmForgetsWhatFired() throws {
    var p = PumpState(excluded: [])
    let conn = XCBHandle(raw: try #require(OpaquePointer(bitPattern: 0x1000)))
    _ = p.commit(removesShields: false, connection: conn, shields: [s1], targets: [t1])
    _ = p.deliver(clientStarted(0x60_0000))
    p.disarm()
    #expect(p.take().fired.isEmpty)
    #expect(p.deliver(clientStarted(0x80_0000)) == [])
  }
}

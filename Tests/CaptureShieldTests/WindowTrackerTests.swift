// Window tracking (`WindowTracker`) on a fake main connection: a new window's facts read in one
// pipelined batch (class, tag, title), gone and InputOnly windows dropped, a property change
// (the tag set, WM_NAME under _NET_WM_NAME), deferred tracking, and a client's last window.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// The main connection's window facts, as a test sets them; records what was asked.
final class FakeWindowConnection: WindowConnection {
  struct Window {
    var mapped = true
    var inputOnly = false
    var properties: [UInt32: PropertyValue] = [:]
  }
  var windows: [WindowID: Window] = [:]
  /// The batches `windowFacts` and `properties` were asked for, and the single property reads.
  private(set) var factBatches: [[WindowID]] = []
  private(set) var propertyReads: [(WindowID, UInt32)] = []

  func clientBase(of xid: UInt32) -> UInt32 { xid & ~0x1f_ffff }
  func windowFacts(_ ids: [WindowID], atoms: [UInt32], maxBytes: UInt32) -> [WindowFacts] {
    factBatches.append(ids)
    return ids.map { w in
      guard let win = windows[w] else { return WindowFacts(attributes: nil, properties: atoms.map { _ in nil }) }
      return WindowFacts(attributes: (win.mapped, win.inputOnly), properties: atoms.map { win.properties[$0] })
    }
  }
  func properties(_ ids: [WindowID], atoms: [UInt32], maxBytes: UInt32) -> [[PropertyValue?]] {
    factBatches.append(ids)
    return ids.map { w in atoms.map { windows[w]?.properties[$0] } }
  }
  func property(_ window: UInt32, _ atom: UInt32, maxBytes: UInt32) -> PropertyValue? {
    propertyReads.append((window, atom))
    return windows[window]?.properties[atom]
  }

  /// `_CAPTURE_SHIELD_SECURE` = 1 on `w`.
  func tag(_ w: WindowID, atoms: DaemonAtoms) {
    windows[w, default: Window()].properties[atoms.secure] = PropertyValue(
      type: atoms.cardinal, format: 32, bytes: [1, 0, 0, 0])
  }
}

@Suite struct WindowTrackerTests {
  /// Atoms as a server might intern them (any distinct values do).
  static let atoms = DaemonAtoms(interned: (0..<14).map { 0x100 + UInt32($0) })
  static let app: WindowID = 0x40_0001
  static let other: WindowID = 0x60_0001

  static func text(_ s: String, type: UInt32 = PredefinedAtom.string) -> PropertyValue {
    PropertyValue(type: type, format: 8, bytes: Array(s.utf8))
  }

  @Test func newWindowsFactsAreReadInOneBatch() {
    let x = FakeWindowConnection()
    let a = Self.atoms
    x.windows[Self.app] = .init(properties: [
      a.wmClass: PropertyValue(type: PredefinedAtom.string, format: 8, bytes: Array("keepassxc\0KeePassXC\0".utf8)),
      a.netWMName: Self.text("vault.kdbx", type: a.utf8), a.wmName: Self.text("legacy"),
    ])
    x.tag(Self.app, atoms: a)
    x.windows[0x40_0002] = .init(inputOnly: true)
    let t = WindowTracker(connection: x, atoms: a)
    let (infos, dropped) = t.read([Self.app, 0x40_0002, 0x40_0003], initial: false, wantTitle: true)
    #expect(x.factBatches == [[Self.app, 0x40_0002, 0x40_0003]])
    #expect(dropped == [0x40_0002, 0x40_0003])  // InputOnly; gone
    let info = infos[0]
    #expect(info.client == ClientID(0x40_0000))
    #expect(info.tag == .secure)
    #expect(info.facts.class == "KeePassXC")
    #expect(info.facts.title == "vault.kdbx")  // _NET_WM_NAME over WM_NAME
    #expect(info.mapped && info.propertiesKnown)
    #expect(t.netNamed == [Self.app])
  }

  @Test func aTagSetLaterIsReadAndWMNameUnderNetWMNameIsIgnored() throws {
    let x = FakeWindowConnection()
    let a = Self.atoms
    x.windows[Self.app] = .init(mapped: false, properties: [a.netWMName: Self.text("editor", type: a.utf8)])
    let t = WindowTracker(connection: x, atoms: a)
    let info = try #require(t.read([Self.app], initial: false, wantTitle: true).infos.first)
    #expect(!info.propertiesKnown)
    t.add(info)
    #expect(t.propertyChanged(Self.app, atom: a.wmName, deleted: false) == nil)
    #expect(x.propertyReads.isEmpty)
    x.tag(Self.app, atoms: a)
    let tagged = try #require(t.propertyChanged(Self.app, atom: a.secure, deleted: false))
    #expect(tagged.tag == .secure)
    #expect(t.propertyChanged(Self.app, atom: a.secure, deleted: true)?.tag == .absent)
    #expect(t.propertyChanged(Self.other, atom: a.secure, deleted: false) == nil)  // not tracked
    #expect(t.propertyChanged(Self.app, atom: a.state, deleted: false) == nil)  // not read
  }

  @Test func titlesAreReadInOneBatchForTrackedWindowsOnly() {
    let x = FakeWindowConnection()
    let a = Self.atoms
    let t = WindowTracker(connection: x, atoms: a)
    t.add(WindowInfo(id: Self.app, client: ClientID(0x40_0000), tag: .secure, propertiesKnown: true))
    x.windows[Self.app] = .init(properties: [a.wmName: Self.text("vault.kdbx - KeePassXC")])
    let infos = t.readTitles([Self.app, Self.other])
    #expect(x.factBatches == [[Self.app, Self.other]])
    #expect(infos.map(\.id) == [Self.app])
    #expect(infos.first?.facts.title == "vault.kdbx - KeePassXC")
    #expect(t.tracked[Self.app]?.facts.title == "vault.kdbx - KeePassXC")
  }

  @Test func deferredWindowsComeOnceInCreationOrder() {
    let t = WindowTracker(connection: FakeWindowConnection(), atoms: Self.atoms)
    t.deferTracking(3, now: .seconds(1))
    t.deferTracking(1, now: .seconds(2))
    t.deferTracking(3, now: .seconds(3))
    t.deferTracking(2, now: .seconds(3))
    #expect(t.pendingSince == .seconds(1))
    #expect(t.isPending(1))
    #expect(t.pendingDestroyed(1))
    #expect(!t.pendingDestroyed(1))
    #expect(t.takePending() == [3, 2])
    #expect(t.pendingSince == nil)
    #expect(t.takePending().isEmpty)
  }

  @Test func aClientsLastWindowGoneIsTold() {
    let t = WindowTracker(connection: FakeWindowConnection(), atoms: Self.atoms)
    let c = ClientID(0x40_0000)
    t.add(WindowInfo(id: 0x40_0001, client: c, tag: .absent, propertiesKnown: true))
    t.add(WindowInfo(id: 0x40_0002, client: c, tag: .absent, propertiesKnown: true))
    #expect(t.remove(0x40_0001)?.id == 0x40_0001)
    #expect(!t.clientWindowGone(c.base))
    #expect(t.remove(0x40_0001) == nil)
    #expect(t.remove(0x40_0002) != nil)
    #expect(t.clientWindowGone(c.base))
    #expect(t.tracked.isEmpty)
  }
}

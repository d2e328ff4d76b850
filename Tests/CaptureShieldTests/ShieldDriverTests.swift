// The shield driver against a recording fake connection: the X requests it sends for each
// lifecycle step, with no X server. Also the X error policy and the single-writer rule.

import Foundation
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// A fake shield connection: answers the driver's queries from a small window table and
/// records every request, in order.
final class RecordingConnection: ShieldConnection {
  enum Request: Equatable {
    case create(UInt32, parent: UInt32, checked: Bool)
    case map(UInt32)
    case unmap(UInt32)
    case destroy(UInt32)
    case raise(UInt32)
    case place(UInt32)
    case shapeReset(UInt32, kind: UInt8)
    case shapeBounding(UInt32, [ViewRect])
    case shapeSelect(UInt32)
    case attributes(UInt32, mask: UInt32, values: [UInt32])
    case clear(UInt32)
    case property(UInt32, atom: UInt32, bytes: [UInt8])
    case deleteProperty(UInt32, UInt32)
    case selectionOwner(UInt32, UInt32)
    case convert(UInt32)
    case sendEvent(UInt32)
    case shapeInputEmpty(UInt32)
    case selectSelection(UInt32)
    case closeDown(retain: Bool)
    case pixmap(UInt32)
    case gc(UInt32)
    case changeGC(UInt32)
    case freeGC(UInt32)
    case fill(UInt32)
    case text(UInt32, String)
    case flush
  }

  let root: UInt32 = 0x1
  let rootDepth: UInt8 = 24
  let blackPixel: UInt32 = 0
  private(set) var requests: [Request] = []
  private var nextID: UInt32 = 0x20_0000
  private var sequence: UInt16 = 100
  /// Windows that exist, with their depth, parent and properties.
  var windows: [UInt32: (depth: UInt8, parent: UInt32)] = [:]
  var properties: [UInt32: [UInt32: PropertyValue]] = [:]

  /// Forgets the requests recorded so far.
  func reset() { requests = [] }

  func generateID() -> UInt32 {
    nextID += 1
    return nextID
  }
  func atoms(_ names: [String]) -> [UInt32] { names.indices.map { 0x100 + UInt32($0) } }
  func geometry(_ window: UInt32) -> (depth: UInt8, x: Int16, y: Int16, width: UInt16, height: UInt16)? {
    windows[window].map { ($0.depth, 0, 0, 32767, 32767) }
  }
  func parent(of window: UInt32) -> UInt32? { windows[window]?.parent }
  func isInputOnly(_ window: UInt32) -> Bool? { windows[window] == nil ? nil : false }
  /// Windows a test unmapped or shaped (all others are mapped and unshaped).
  var unmapped: Set<UInt32> = []
  var shaped: Set<UInt32> = []
  func isMapped(_ window: UInt32) -> Bool? { windows[window] == nil ? nil : !unmapped.contains(window) }
  func isShaped(_ window: UInt32) -> Bool? { windows[window] == nil ? nil : shaped.contains(window) }
  /// Children in creation order, unless a test set `stacking` for that parent.
  var stacking: [UInt32: [UInt32]] = [:]
  func children(of window: UInt32) -> [UInt32]? {
    guard windows[window] != nil else { return nil }
    return stacking[window] ?? windows.filter { $0.value.parent == window }.keys.sorted()
  }
  func firstEvent(_ name: String) -> UInt8 { name == "SHAPE" ? 64 : 0 }
  func property(_ window: UInt32, _ atom: UInt32, maxBytes: UInt32) -> PropertyValue? { properties[window]?[atom] }
  func clientBase(of xid: UInt32) -> UInt32 { xid & ~0x1F_FFFF }

  func createWindow(
    _ window: UInt32, parent: UInt32, x: Int16, y: Int16, width: UInt16, height: UInt16, inputOnly: Bool,
    mask: UInt32, values: [UInt32], checked: Bool
  ) -> Bool {
    requests.append(.create(window, parent: parent, checked: checked))
    guard windows[parent] != nil else { return !checked }
    windows[window] = (windows[parent]!.depth, parent)
    return true
  }
  func mapWindow(_ window: UInt32) { requests.append(.map(window)) }
  func unmapWindow(_ window: UInt32) -> UInt16 {
    requests.append(.unmap(window))
    sequence += 1
    return sequence
  }
  func destroyWindow(_ window: UInt32) {
    requests.append(.destroy(window))
    windows[window] = nil
  }
  func raiseWindow(_ window: UInt32) -> UInt16 {
    requests.append(.raise(window))
    sequence += 2  // and a NoOperation
    return sequence - 1
  }
  func placeWindow(_ window: UInt32, x: Int16, y: Int16, width: UInt16, height: UInt16) -> UInt16 {
    requests.append(.place(window))
    sequence += 2  // and a NoOperation
    return sequence - 1
  }
  func shapeReset(_ window: UInt32, kind: UInt8) { requests.append(.shapeReset(window, kind: kind)) }
  func shapeBounding(_ window: UInt32, rects: [ViewRect]) { requests.append(.shapeBounding(window, rects)) }
  func shapeSelectInput(_ window: UInt32) { requests.append(.shapeSelect(window)) }
  func changeAttributes(_ window: UInt32, mask: UInt32, values: [UInt32]) {
    requests.append(.attributes(window, mask: mask, values: values))
  }
  func clearArea(_ window: UInt32) { requests.append(.clear(window)) }
  func changeProperty(_ window: UInt32, _ property: UInt32, type: UInt32, format: UInt8, bytes: [UInt8]) {
    requests.append(.property(window, atom: property, bytes: bytes))
  }
  func changeProperty(_ window: UInt32, _ property: UInt32, type: UInt32, from bytes: UnsafeRawPointer, count: Int) {
    requests.append(.property(window, atom: property, bytes: Array(UnsafeRawBufferPointer(start: bytes, count: count))))
  }
  func deleteProperty(_ window: UInt32, _ property: UInt32) { requests.append(.deleteProperty(window, property)) }
  func setSelectionOwner(_ owner: UInt32, selection: UInt32, time: UInt32) {
    requests.append(.selectionOwner(owner, selection))
  }
  func convertSelection(requestor: UInt32, selection: UInt32, target: UInt32, property: UInt32, time: UInt32) {
    requests.append(.convert(requestor))
  }
  func sendEvent(to destination: UInt32, _ event: [UInt8]) { requests.append(.sendEvent(destination)) }
  func shapeInputEmpty(_ window: UInt32) { requests.append(.shapeInputEmpty(window)) }
  func selectSelectionInput(_ window: UInt32, selection: UInt32, mask: UInt32) {
    requests.append(.selectSelection(window))
  }
  func setCloseDownMode(retainPermanent: Bool) { requests.append(.closeDown(retain: retainPermanent)) }
  func createPixmap(_ pixmap: UInt32, depth: UInt8, drawable: UInt32, width: UInt16, height: UInt16) {
    requests.append(.pixmap(pixmap))
  }
  func createGC(_ gc: UInt32, drawable: UInt32, mask: UInt32, values: [UInt32]) { requests.append(.gc(gc)) }
  func changeGC(_ gc: UInt32, mask: UInt32, values: [UInt32]) { requests.append(.changeGC(gc)) }
  func freeGC(_ gc: UInt32) { requests.append(.freeGC(gc)) }
  func fillRectangles(_ drawable: UInt32, gc: UInt32, _ rects: [(x: Int16, y: Int16, width: UInt16, height: UInt16)]) {
    requests.append(.fill(drawable))
  }
  func drawText(_ drawable: UInt32, gc: UInt32, x: Int16, y: Int16, _ bytes: [UInt8]) {
    requests.append(.text(drawable, String(decoding: bytes, as: UTF8.self)))
  }
  func moduleRequest(major: UInt8, minor: UInt8, _ argument: UInt32) {}
  func openFont(_ font: UInt32, name: String) -> Bool { true }
  func flush() { requests.append(.flush) }

  /// The requests that touch windows (maps, unmaps, creates, destroys, restacks).
  var windowRequests: [Request] {
    requests.filter {
      switch $0 {
      case .create, .map, .unmap, .destroy, .raise, .place: return true
      default: return false
      }
    }
  }
}

@Suite("Shield driver on a recording connection")
struct ShieldDriverTests {
  let target: WindowID = 0x40_0001

  func driver(_ c: RecordingConnection, input: ShieldInput = .passthrough) -> ShieldDriver {
    c.windows[c.root] = (24, 0)
    c.windows[target] = (24, c.root)
    return ShieldDriver(connection: c, failMode: .open, input: input, label: "Protected")
  }

  @Test func shieldCreatesAMarkedChildMappedAndWatchesTheTarget() throws {
    let c = RecordingConnection()
    let d = driver(c)
    #expect(c.requests.contains(.closeDown(retain: false)))
    c.reset()
    #expect(d.shield(target))
    let s = try #require(d.shields[target])
    #expect(c.windowRequests == [.create(s, parent: target, checked: true), .map(s)])
    #expect(c.requests.contains(.shapeInputEmpty(s)))
    #expect(c.requests.contains(.property(s, atom: d.atomShield, bytes: [UInt32(target)].littleEndianBytes)))
    #expect(
      c.requests.contains(
        .attributes(target, mask: 1 << 11, values: [(1 << 19) | (1 << 17)])))  // event mask: Substructure|Structure
  }

  @Test func blockingInputHasNoInputShape() throws {
    let c = RecordingConnection()
    let d = driver(c, input: .block)
    d.shield(target)
    #expect(!c.requests.contains { if case .shapeInputEmpty = $0 { return true } else { return false } })
  }

  @Test func aGoneTargetIsReportedAndNothingIsRecorded() {
    let c = RecordingConnection()
    let d = driver(c)
    #expect(!d.shield(0x99))
    #expect(d.shields.isEmpty)
  }

  @Test func unshieldUnmapsOnlyAtTheCommitAndOwnUnmapIsNotTampering() throws {
    let c = RecordingConnection()
    let d = driver(c)
    d.shield(target)
    let s = try #require(d.shields[target])
    c.reset()
    d.unshield(target)
    #expect(c.requests.isEmpty)
    #expect(d.hasPendingUnmaps)
    d.commitUnmaps()
    #expect(c.requests == [.unmap(s)])
    // The server reports our unmap with its sequence (101 here): not a loss.
    #expect(d.handle(.unmap(window: s, event: target, sequence: 101)) == nil)
  }

  @Test func tamperingIsRepairedAndReported() throws {
    let c = RecordingConnection()
    let d = driver(c)
    d.shield(target)
    let s = try #require(d.shields[target])
    c.reset()
    #expect(
      d.handle(.unmap(window: s, event: target, sequence: 555)) == .lost(target, how: "unmapped by another client"))
    #expect(c.requests == [.map(s)])
    c.windows[s] = nil
    #expect(d.handle(.destroy(window: s, event: target)) == .lost(target, how: "destroyed by another client"))
    #expect(d.shields[target] == nil)
    c.reset()
    d.shield(target)
    #expect(c.windowRequests.first == .create(try #require(d.shields[target]), parent: target, checked: true))
  }

  @Test func displacedShieldsAreRepairedAndReported() throws {
    let c = RecordingConnection()
    let d = driver(c)
    d.shield(target)
    let s = try #require(d.shields[target])
    #expect(c.requests.contains(.shapeSelect(s)))
    let unknown = ShieldTable.unknownClient
    c.reset()
    // Moved: put back.
    let moved = ShieldTable.Placement(x: 30000, y: 30000, width: 32767, height: 32767, border: 0)
    #expect(
      d.handle(.configure(window: s, event: target, aboveSibling: 0, placement: moved, sequence: 7))
        == .lost(target, how: "moved or resized to 32767x32767+30000+30000 \(unknown)"))
    #expect(c.requests == [.place(s)])
    // Our placement's own ConfigureNotify (sequence 101): the server says it is on top.
    c.reset()
    #expect(d.handle(.configure(window: s, event: target, aboveSibling: 0, sequence: 101)) == nil)
    #expect(c.requests.isEmpty)
    // Lowered below an app child: the server says so, raised and reported.
    let appChild: UInt32 = 0x40_0005
    c.windows[appChild] = (24, target)
    c.stacking[target] = [s, appChild]
    #expect(
      d.handle(.configure(window: s, event: target, aboveSibling: 0, sequence: 7))
        == .lost(target, how: "restacked \(unknown)"))
    #expect(c.requests == [.raise(s)])
    // Shaped: reset.
    c.reset()
    #expect(
      d.handle(.shape(window: s, kind: 0, shaped: true)) == .lost(target, how: "given a bounding shape \(unknown)"))
    #expect(c.requests == [.shapeReset(s, kind: 0)])
    // Reparented away: a new shield in its place.
    c.reset()
    c.stacking = [:]
    #expect(
      d.handle(.reparent(window: s, event: target, parent: 0x60_0001))
        == .lost(target, how: "reparented into window 0x600001 \(unknown)"))
    let s2 = try #require(d.shields[target])
    #expect(s2 != s)
    #expect(c.windowRequests == [.destroy(s), .create(s2, parent: target, checked: true), .map(s2)])
    // Redirected (seen through RECORD): a new shield again.
    #expect(d.isShield(s2) && !d.isShield(s))
    #expect(d.redirected(s2, how: "redirected by 0x5") == .lost(target, how: "redirected by 0x5"))
    #expect(d.shields[target] != s2)
    #expect(d.redirected(0x40_0005, how: "redirected by 0x5") == nil)
  }

  @Test func childrenOfTheTargetDoNotCoverTheShield() throws {
    let c = RecordingConnection()
    let d = driver(c)
    d.shield(target)
    let s = try #require(d.shields[target])
    c.reset()
    _ = d.handle(.create(window: 0x40_0005, parent: target))
    _ = d.handle(.map(window: 0x40_0005, event: target))
    _ = d.handle(.configure(window: 0x40_0005, event: target, aboveSibling: s))
    #expect(c.requests == [.raise(s), .raise(s), .raise(s)])
  }

  @Test func plainShieldAtOnceThenTiled() throws {
    let c = RecordingConnection()
    let d = driver(c)
    c.reset()
    d.shieldAtOnce(target)
    let s = try #require(d.shields[target])
    #expect(c.windowRequests == [.create(s, parent: target, checked: false), .map(s)])
    // On the wire at once (the target's watch follows, no need to hurry it).
    let mapped = try #require(c.requests.firstIndex(of: .map(s)))
    #expect(c.requests[mapped + 1] == .flush)
    c.reset()
    d.shield(target)
    #expect(c.requests.contains(.clear(s)))
    #expect(c.windowRequests == [.map(s), .raise(s)])
    d.dropProvisional(target)
    #expect(d.shields[target] == s)  // tiled now: kept
  }

  @Test func registryAndAdoption() throws {
    var template = Array("/tmp/shield-registry-XXXXXX".utf8CString)
    let dir = String(cString: try #require(mkdtemp(&template)))
    defer { _ = try? FileManager.default.removeItem(atPath: dir) }
    let file = ShieldRegistryFile(path: dir + "/shields-:9")
    let c = RecordingConnection()
    c.windows[c.root] = (24, 0)
    c.windows[target] = (24, c.root)
    let d = ShieldDriver(connection: c, failMode: .closed, input: .passthrough, label: "", registryFile: file)
    d.shield(target)
    let s = try #require(d.shields[target])
    c.reset()
    d.writeRegistry()
    #expect(c.requests == [.property(c.root, atom: d.atomShields, bytes: [s, UInt32(target)].littleEndianBytes)])
    #expect(file.read().map { [$0.shield, $0.target] } == [[s, UInt32(target)]])
    c.reset()
    d.writeRegistry()
    #expect(c.requests.isEmpty)

    // A second daemon adopts the shield that its file lists and that covers; a window that
    // only the root property lists (a forged fake) is refused and left alone.
    let fake: UInt32 = 0x60_0001
    let c2 = RecordingConnection()
    c2.windows = c.windows
    c2.windows[fake] = (24, target)
    c2.stacking[target] = [fake, s]
    c2.properties[c2.root] = [
      0x101: PropertyValue(type: 6, format: 32, bytes: [fake, UInt32(target)].littleEndianBytes)
    ]
    for w in [s, fake] {
      c2.properties[w] = [
        0x100: PropertyValue(type: 6, format: 32, bytes: [UInt32(target)].littleEndianBytes),
        PredefinedAtom.wmName: PropertyValue(type: 31, format: 8, bytes: Array("CaptureShield".utf8)),
      ]
    }
    let d2 = ShieldDriver(connection: c2, failMode: .closed, input: .passthrough, label: "", registryFile: file)
    #expect(d2.adoptExisting() == [target])
    #expect(d2.shields[target] == s)
    #expect(d2.refusedAdoptions.map(\.shield) == [fake])
    #expect(!c2.requests.contains(.destroy(fake)))
    // Without the file nothing is adopted.
    let d3 = ShieldDriver(connection: c2, failMode: .closed, input: .passthrough, label: "")
    #expect(d3.adoptExisting().isEmpty)
    // Ours but no longer covering (shaped, unmapped, or under the app's child): destroyed.
    for fault in ["shaped", "unmapped", "lowered"] {
      let c4 = RecordingConnection()
      c4.windows = c2.windows
      c4.properties = c2.properties
      c4.stacking[target] = fault == "lowered" ? [s, fake] : [fake, s]
      if fault == "shaped" { c4.shaped = [s] }
      if fault == "unmapped" { c4.unmapped = [s] }
      let d4 = ShieldDriver(connection: c4, failMode: .closed, input: .passthrough, label: "", registryFile: file)
      #expect(d4.adoptExisting().isEmpty, "\(fault)")
      #expect(c4.requests.contains(.destroy(s)), "\(fault)")
      #expect(d4.refusedAdoptions.map(\.shield) == (fault == "unmapped" ? [fake] : [fake, s]), "\(fault)")
    }
    // A forged mark (it names another window): not ours any more, left alone.
    c2.properties[s]![0x100] = PropertyValue(type: 6, format: 32, bytes: [UInt32(0x99)].littleEndianBytes)
    let d5 = ShieldDriver(connection: c2, failMode: .closed, input: .passthrough, label: "", registryFile: file)
    #expect(d5.adoptExisting().isEmpty)
  }

  @Test func labelIsDrawnOnExpose() throws {
    let c = RecordingConnection()
    let d = driver(c)
    d.shield(target)
    let s = try #require(d.shields[target])
    c.reset()
    _ = d.handle(.expose(window: s, count: 0))
    #expect(c.requests.contains(.text(s, "Protected")))
  }
}

@Suite("X error policy")
struct XErrorPolicyTests {
  @Test(arguments: [
    (UInt8(3), XErrorPolicy.Meaning.expectedRace), (9, .expectedRace), (4, .expectedRace), (8, .unexpected),
    (2, .unexpected), (10, .unexpected), (11, .unexpected),
  ])
  func meaning(code: UInt8, meaning: XErrorPolicy.Meaning) {
    #expect(XErrorPolicy.meaning(code: code) == meaning)
  }

  @Test(
    "on the shield connection",
    arguments: [
      // a shield's CreateWindow under an InputOnly target: expected
      (UInt8(8), UInt8(1), true, XErrorPolicy.Meaning.expectedRace),
      // controls: BadMatch of another request, or naming no target of ours, is not
      (8, 1, false, .unexpected), (8, 12, true, .unexpected), (3, 1, false, .expectedRace), (10, 1, true, .unexpected),
    ])
  func shieldMeaning(code: UInt8, major: UInt8, target: Bool, meaning: XErrorPolicy.Meaning) {
    #expect(XErrorPolicy.shieldMeaning(code: code, major: major, resourceIsTarget: target) == meaning)
  }

  @Test func theLineNamesTheRequest() {
    let line = XErrorPolicy.describe(code: 8, major: 12, minor: 0, resource: 0x40_0001, connection: "shield")
    #expect(line == "X error 8 on the shield connection: request major 12 minor 0, resource 0x400001")
  }
}

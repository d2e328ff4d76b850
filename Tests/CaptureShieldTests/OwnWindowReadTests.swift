// Reads of a client's own window: which requests the catalog hands
// out as own reads, and the pure verdict on them.

import CaptureShield
import Testing

struct OwnReadCase: Sendable, CustomStringConvertible {
  let name: String
  let bytes: [UInt8]
  let expected: OwnDrawableRead?
  var description: String { name }
}

struct VerdictCase: Sendable, CustomStringConvertible {
  let name: String
  let read: OwnDrawableRead
  let facts: [UInt32: DrawableFact]
  let expected: OwnDrawableRead.Verdict
  var description: String { name }
}

extension OwnReadCase {
  typealias F = Fixture
  static let otherOwn: UInt32 = 0x0040_0007

  static let all: [OwnReadCase] = [
    OwnReadCase(
      name: "GetImage of an own drawable", bytes: RequestBytes(73, 2, words: 5).with { $0.put32(4, F.own) },
      expected: OwnDrawableRead(kind: "GetImage(own window)", source: F.own)),
    OwnReadCase(
      name: "GetImage of a foreign drawable (a capture request, not an own read)",
      bytes: RequestBytes(73, 2, words: 5).with { $0.put32(4, F.foreign) }, expected: nil),
    OwnReadCase(
      name: "MIT-SHM ShmGetImage of an own drawable",
      bytes: RequestBytes(130, 4, words: 8).with { $0.put32(4, F.own) },
      expected: OwnDrawableRead(kind: "MIT-SHM ShmGetImage(own window)", source: F.own)),
    OwnReadCase(
      name: "CopyArea from an own drawable into another",
      bytes: RequestBytes(62, 0, words: 7).with {
        $0.put32(4, F.own)
        $0.put32(8, F.ownPixmap)
      }, expected: OwnDrawableRead(kind: "CopyArea(own window)", source: F.own, destination: F.ownPixmap)),
    OwnReadCase(
      name: "CopyArea within one drawable (scrolling)",
      bytes: RequestBytes(62, 0, words: 7).with {
        $0.put32(4, F.own)
        $0.put32(8, F.own)
      }, expected: nil),
    OwnReadCase(
      name: "CopyPlane from an own drawable into another",
      bytes: RequestBytes(63, 0, words: 8).with {
        $0.put32(4, F.own)
        $0.put32(8, otherOwn)
      }, expected: OwnDrawableRead(kind: "CopyPlane(own window)", source: F.own, destination: otherOwn)),
    OwnReadCase(
      name: "Composite NameWindowPixmap of an own window: a copy of what it showed into a new pixmap",
      bytes: RequestBytes(142, 6, words: 3).with {
        $0.put32(4, F.own)
        $0.put32(8, F.ownPixmap)
      },
      expected: OwnDrawableRead(kind: "Composite NameWindowPixmap(own window)", source: F.own, destination: F.ownPixmap)
    ),
    OwnReadCase(
      name: "Composite NameWindowPixmap of a foreign window (a capture request, not an own read)",
      bytes: RequestBytes(142, 6, words: 3).with {
        $0.put32(4, F.foreign)
        $0.put32(8, F.ownPixmap)
      }, expected: nil),
    OwnReadCase(
      name: "CreatePicture on an own drawable (not an own read)",
      bytes: RequestBytes(139, 4, words: 5).with { $0.put32(8, F.own) }, expected: nil),
    OwnReadCase(
      name: "ReparentWindow of an own window", bytes: RequestBytes(7, 0, words: 4).with { $0.put32(4, F.own) },
      expected: nil),
    OwnReadCase(name: "truncated GetImage", bytes: [73, 2, 5, 0, 5, 0], expected: nil),
  ]
}

extension VerdictCase {
  static let window: UInt32 = 0x0040_0005
  static let pixmap: UInt32 = 0x0040_0009
  static let other: UInt32 = 0x0040_000b
  /// The secure window's area.
  static let secure = ScreenRect(x: 100, y: 100, width: 200, height: 150)
  static let over = ScreenRect(x: 150, y: 120, width: 50, height: 50)
  static let beside = ScreenRect(x: 300, y: 100, width: 50, height: 50)
  static let get = OwnDrawableRead(kind: "GetImage(own window)", source: window)
  static let copy = OwnDrawableRead(kind: "CopyArea(own window)", source: window, destination: pixmap)
  static let present = OwnDrawableRead(kind: "CopyArea(own window)", source: pixmap, destination: window)
  static let windowToWindow = OwnDrawableRead(kind: "CopyArea(own window)", source: window, destination: other)

  static let all: [VerdictCase] = [
    VerdictCase(name: "a read of an unknown drawable: look it up", read: get, facts: [:], expected: .lookUp([window])),
    VerdictCase(
      name: "a read of a window known only by kind: look up its area", read: get, facts: [window: .window(nil)],
      expected: .lookUp([window])),
    VerdictCase(
      name: "a read of a window over the secure window", read: get, facts: [window: .window(over)], expected: .capture),
    VerdictCase(
      name: "a read of a window that covers the secure window exactly", read: get, facts: [window: .window(secure)],
      expected: .capture),
    VerdictCase(
      name: "a read of a window beside it", read: get, facts: [window: .window(beside)], expected: .notCapture),
    VerdictCase(
      name: "a window touching its edge shares no pixel", read: get,
      facts: [window: .window(ScreenRect(x: 300, y: 100, width: 10, height: 10))], expected: .notCapture),
    VerdictCase(name: "a read of a pixmap", read: get, facts: [window: .pixmap], expected: .notCapture),
    VerdictCase(
      name: "a read of a drawable already gone (fail safe)", read: get, facts: [window: .gone], expected: .capture),
    VerdictCase(
      name: "a copy of unknown drawables: look both up", read: copy, facts: [:], expected: .lookUp([window, pixmap])),
    VerdictCase(
      name: "a copy from a window over it into a pixmap (two-step read)", read: copy,
      facts: [window: .window(over), pixmap: .pixmap], expected: .capture),
    VerdictCase(
      name: "a copy from a window beside it into a pixmap", read: copy,
      facts: [window: .window(beside), pixmap: .pixmap], expected: .notCapture),
    VerdictCase(
      name: "a copy from a window known by kind into a pixmap: look up its area", read: copy,
      facts: [window: .window(nil), pixmap: .pixmap], expected: .lookUp([window])),
    VerdictCase(
      name: "a copy into a pixmap freed since (read back before?)", read: copy,
      facts: [window: .window(over), pixmap: .gone], expected: .capture),
    VerdictCase(
      name: "a copy from a gone source into a pixmap (fail safe)", read: copy,
      facts: [window: .gone, pixmap: .pixmap], expected: .capture),
    VerdictCase(
      name: "presenting a back buffer (pixmap into window), kinds known: no lookup", read: present,
      facts: [pixmap: .pixmap], expected: .notCapture),
    VerdictCase(
      name: "presenting into a window known by kind: no lookup", read: present, facts: [window: .window(nil)],
      expected: .notCapture),
    VerdictCase(
      name: "a copy between two own windows (known by kind): no lookup", read: windowToWindow,
      facts: [other: .window(nil)], expected: .notCapture),
    VerdictCase(
      name: "a copy between two own windows, even over the secure window", read: windowToWindow,
      facts: [window: .window(over), other: .window(nil)], expected: .notCapture),
  ]
}

struct OwnWindowReadTests {
  @Test("own reads the catalog hands out", arguments: OwnReadCase.all)
  func classify(_ c: OwnReadCase) {
    #expect(
      Fixture.resolved.classifyOwnRead(c.bytes, clientBase: Fixture.base, resourceMask: Fixture.mask) == c.expected)
    // An own read is never also a capture request (and vice versa).
    if c.expected != nil { #expect(Fixture.classify(c.bytes) == nil) }
  }

  @Test("the verdict on an own read", arguments: VerdictCase.all)
  func verdict(_ c: VerdictCase) {
    var asked = 0
    let v = c.read.verdict(facts: c.facts) {
      asked += 1
      return [VerdictCase.secure]
    }
    #expect(v == c.expected)
    #expect(asked <= 1)
  }

  @Test("no secure window: nothing counts, and the areas are asked only when a window's area is compared")
  func noSecureWindow() {
    var asked = 0
    let v = VerdictCase.get.verdict(facts: [VerdictCase.window: .window(VerdictCase.over)]) {
      asked += 1
      return []
    }
    #expect(v == .notCapture)
    #expect(asked == 1)
    _ = VerdictCase.present.verdict(facts: [VerdictCase.pixmap: .pixmap]) {
      asked += 1
      return []
    }
    #expect(asked == 1)
  }

  @Test("own-window kinds are listed by their entries")
  func kinds() {
    let c = CaptureCatalog.standard
    for kind in [
      "GetImage(own window)", "MIT-SHM ShmGetImage(own window)", "CopyArea(own window)", "CopyPlane(own window)",
      "Composite NameWindowPixmap(own window)",
    ] {
      #expect(c.entry(forKind: kind)?.readsOwnWindows == true, "\(kind)")
      #expect(c.startsSession(CaptureRequest(kind: kind, target: 1)), "\(kind)")
    }
    #expect(c.resolved(extensions: [:]).secureTargetsOnlyKinds == ["ReparentWindow"])
    #expect(c.sessionStartersOnly.windowReaders.entry(forKind: "ReparentWindow") != nil, "the daemon records it")
  }

  @Test("a window read counts where the client's windows have been since mapped, not only where it is")
  func earlierAreas() {
    let read = VerdictCase.get
    let facts: [UInt32: DrawableFact] = [VerdictCase.window: .window(VerdictCase.beside)]
    let secure = { [VerdictCase.secure] }
    #expect(read.verdict(facts: facts, secureAreas: secure) == .notCapture)
    #expect(read.verdict(facts: facts, secureAreas: secure, earlierAreas: { [VerdictCase.over] }) == .capture)
    #expect(read.verdict(facts: facts, secureAreas: secure, earlierAreas: { [VerdictCase.beside] }) == .notCapture)
    var asked = false
    _ = read.verdict(
      facts: facts, secureAreas: { [] },
      earlierAreas: {
        asked = true
        return []
      })
    #expect(!asked, "no secure window: the history is not consulted")
  }

  @Test("the history of top-levels: places since the last map, per client")
  func history() {
    let mask: UInt32 = 0x1f_ffff
    let a: UInt32 = 0x0040_0001
    let b: UInt32 = 0x0060_0001
    var h = TopLevelHistory()
    h.placed(a, VerdictCase.over)
    #expect(h.places(ofClient: 0x0040_0000, resourceMask: mask).isEmpty, "not mapped yet")
    h.mapped(a)
    h.placed(a, VerdictCase.beside)
    #expect(h.places(ofClient: 0x0040_0000, resourceMask: mask) == [VerdictCase.over, VerdictCase.beside])
    #expect(h.places(ofClient: 0x0060_0000, resourceMask: mask).isEmpty)
    h.mapped(a)  // mapped again, where it is now
    #expect(h.places(ofClient: 0x0040_0000, resourceMask: mask) == [VerdictCase.beside])
    h.placed(b, VerdictCase.secure)
    h.mapped(b)
    #expect(h.places(ofClient: 0x0060_0000, resourceMask: mask) == [VerdictCase.secure])
    h.destroyed(b)
    #expect(h.places(ofClient: 0x0060_0000, resourceMask: mask).isEmpty)
    #expect(h.count == 1)
    // A long drag: the places stay bounded, the last one grows to cover the rest.
    for i in 0..<100 { h.placed(a, ScreenRect(x: i * 10, y: 0, width: 10, height: 10)) }
    let places = h.places(ofClient: 0x0040_0000, resourceMask: mask)
    #expect(places.count == TopLevelHistory.limit)
    #expect(places.last == ScreenRect(x: (TopLevelHistory.limit - 2) * 10, y: 0, width: (100 - 14) * 10, height: 10))
  }
}

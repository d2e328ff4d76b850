// The keyboard watch (client-side mode of secure input): the decoding of
// recorded requests on hand-built bytes (offsets written from the protocol: xproto,
// XI 1.x and XI2, XKB, RECORD), and the state machine (once per client and kind, the
// keymap-polling rate, the notice once per client per focus period, the allow list).

import CaptureShield
import Foundation
import ShieldTestSupport
import Testing

private let mask: UInt32 = 0x001f_ffff
private let client: UInt32 = 0x0040_0000
private let own: UInt32 = 0x0040_0005
private let other: UInt32 = 0x0060_0001  // another client's window
private let root: UInt32 = 0x0000_03c3
private let opcodes = KeylogOpcodes(xinput: 131, xinputFirstEvent: 66, xkb: 135, record: 146)

private func decode(_ bytes: [UInt8], bigEndian: Bool = false) -> [KeylogRecord] {
  bytes.withUnsafeBytes {
    KeylogDecoder.decode($0, clientBase: client, resourceMask: mask, bigEndian: bigEndian, opcodes: opcodes, root: root)
  }
}

private func kinds(_ records: [KeylogRecord]) -> [KeyListenKind] {
  records.compactMap {
    if case .listens(let s) = $0 { return s.kind }
    return nil
  }
}

/// ChangeWindowAttributes of `window` with only CWEventMask (bit 11) = `events`.
private func changeAttributes(_ window: UInt32, events: UInt32, bigEndian: Bool = false) -> [UInt8] {
  RequestBytes(2, 0, words: 4, bigEndian: bigEndian).with {
    $0.put32(4, window)
    $0.put32(8, 1 << 11)
    $0.put32(12, events)
  }
}

/// XISelectEvents of `window`: one mask per (device, event bits).
private func xiSelect(_ window: UInt32, _ masks: [(UInt16, [Int])], bigEndian: Bool = false) -> [UInt8] {
  let words = 3 + masks.count * 2  // one 4-byte mask word each
  return RequestBytes(131, 46, words: words, bigEndian: bigEndian).with {
    $0.put32(4, window)
    $0.put16(8, UInt16(masks.count))
    var p = 12
    for (device, bits) in masks {
      $0.put16(p, device)
      $0.put16(p + 2, 1)
      for b in bits { $0.bytes[p + 4 + b / 8] |= UInt8(1 << (b % 8)) }
      p += 8
    }
  }
}

/// RECORD CreateContext (minor 1) with one client spec and one range whose device events
/// are `device` and delivered events `delivered`.
private func recordContext(
  minor: UInt8 = 1, device: (UInt8, UInt8), delivered: (UInt8, UInt8) = (0, 0), bigEndian: Bool = false
) -> [UInt8] {
  RequestBytes(146, minor, words: 5 + 1 + 6, bigEndian: bigEndian).with {
    $0.put32(4, 0x0040_0009)  // context
    $0.put32(12, 1)  // client specs
    $0.put32(16, 1)  // ranges
    $0.put32(20, 3)  // AllClients
    let r = 24
    $0.put8(r + 16, delivered.0)
    $0.put8(r + 17, delivered.1)
    $0.put8(r + 18, device.0)
    $0.put8(r + 19, device.1)
  }
}

/// XKB SelectEvents: affectWhich, clear, selectAll, then the detail pairs (`details`: raw
/// bytes after the 16-byte fixed part).
private func xkbSelect(which: UInt16, clear: UInt16 = 0, all: UInt16, details: [UInt8] = []) -> [UInt8] {
  let words = 4 + (details.count + 3) / 4
  return RequestBytes(135, 1, words: words).with {
    $0.put16(4, 0x100)  // UseCoreKbd
    $0.put16(6, which)
    $0.put16(8, clear)
    $0.put16(10, all)
    for (i, b) in details.enumerated() { $0.bytes[16 + i] = b }
  }
}

@Suite("Keyboard watch: decoding recorded requests")
struct KeylogDecoderTests {
  struct Case: Sendable, CustomStringConvertible {
    let name: String
    let bytes: [UInt8]
    let expected: [KeyListenKind]
    var bigEndian = false
    var description: String { name }
  }

  static let cases: [Case] = [
    // XI2: `xinput test-xi2 --root` selects everything on the root.
    Case(
      name: "XISelectEvents raw and device keys on the root",
      bytes: xiSelect(root, [(0, [2, 3, 13, 14])]), expected: [.xi2RawKeys, .xi2DeviceKeys]),
    Case(name: "XISelectEvents RawKeyPress only", bytes: xiSelect(root, [(1, [13])]), expected: [.xi2RawKeys]),
    Case(
      name: "XISelectEvents KeyPress on another client's window",
      bytes: xiSelect(other, [(3, [2])]), expected: [.xi2DeviceKeys]),
    Case(name: "XISelectEvents KeyPress on its own window", bytes: xiSelect(own, [(0, [2, 3])]), expected: []),
    Case(
      name: "XISelectEvents of pointer and hierarchy events on the root",
      bytes: xiSelect(root, [(0, [4, 5, 6, 11, 15, 17])]), expected: []),
    Case(
      name: "XISelectEvents: key bits in the second mask",
      bytes: xiSelect(root, [(2, [4]), (3, [14])]), expected: [.xi2RawKeys]),
    Case(
      name: "XISelectEvents big-endian",
      bytes: xiSelect(root, [(0, [13])], bigEndian: true), expected: [.xi2RawKeys], bigEndian: true),
    // Core event masks (xev -id).
    Case(
      name: "ChangeWindowAttributes KeyPress on another client's window",
      bytes: changeAttributes(other, events: 1), expected: [.keyPressSelected]),
    Case(
      name: "ChangeWindowAttributes KeyRelease on the root",
      bytes: changeAttributes(root, events: 2), expected: [.keyPressSelected]),
    Case(
      name: "ChangeWindowAttributes KeyPress on its own window",
      bytes: changeAttributes(own, events: 3), expected: []),
    Case(
      name: "ChangeWindowAttributes PropertyChange|StructureNotify on another's window",
      bytes: changeAttributes(other, events: 0x0042_0000), expected: []),
    Case(
      name: "ChangeWindowAttributes without an event mask",
      bytes: RequestBytes(2, 0, words: 4).with {
        $0.put32(4, other)
        $0.put32(8, 1 << 1)  // CWBackPixel
        $0.put32(12, 1)
      }, expected: []),
    Case(
      name: "ChangeWindowAttributes KeyPress, big-endian",
      bytes: changeAttributes(other, events: 1, bigEndian: true), expected: [.keyPressSelected], bigEndian: true),
    // Grabs.
    Case(
      name: "GrabKeyboard on the root",
      bytes: RequestBytes(31, 0, words: 4).with { $0.put32(4, root) }, expected: [.keyboardGrab]),
    Case(
      name: "GrabKeyboard on its own window (a menu)",
      bytes: RequestBytes(31, 0, words: 4).with { $0.put32(4, own) }, expected: []),
    Case(
      name: "GrabKey AnyKey AnyModifier on the root",
      bytes: RequestBytes(33, 1, words: 4).with {
        $0.put32(4, root)
        $0.put16(8, 0x8000)
        $0.put8(10, 0)
      }, expected: [.anyKeyGrab]),
    Case(
      name: "GrabKey of one key on the root (a hotkey)",
      bytes: RequestBytes(33, 1, words: 4).with {
        $0.put32(4, root)
        $0.put16(8, 0x40)
        $0.put8(10, 38)
      }, expected: []),
    // XI 1.x: classes are device << 8 | type; DeviceKeyPress = first event + 1.
    Case(
      name: "SelectExtensionEvent DeviceKeyPress on the root",
      bytes: RequestBytes(131, 6, words: 5).with {
        $0.put32(4, root)
        $0.put16(8, 2)
        $0.put32(12, 3 << 8 | 67)
        $0.put32(16, 3 << 8 | 68)
      }, expected: [.xi1DeviceKeys]),
    Case(
      name: "SelectExtensionEvent DeviceMotionNotify on the root",
      bytes: RequestBytes(131, 6, words: 4).with {
        $0.put32(4, root)
        $0.put16(8, 1)
        $0.put32(12, 2 << 8 | 71)
      }, expected: []),
    // XI2 grabs.
    Case(
      name: "XIGrabDevice of key events on the root",
      bytes: RequestBytes(131, 51, words: 7).with {
        $0.put32(4, root)
        $0.put16(16, 3)
        $0.put16(22, 1)
        $0.put8(24, 1 << 2)
      }, expected: [.keyboardGrab]),
    Case(
      name: "XIGrabDevice of button events on the root",
      bytes: RequestBytes(131, 51, words: 7).with {
        $0.put32(4, root)
        $0.put16(16, 2)
        $0.put16(22, 1)
        $0.put8(24, 1 << 4 | 1 << 5)
      }, expected: []),
    Case(
      name: "XIPassiveGrabDevice of XIAnyKeycode on the root",
      bytes: RequestBytes(131, 54, words: 10).with {
        $0.put32(8, root)
        $0.put32(16, 0)
        $0.put16(20, 3)
        $0.put16(24, 1)
        $0.put8(26, 1)
        $0.put8(32, 1 << 2)
      }, expected: [.anyKeyGrab]),
    Case(
      name: "XIPassiveGrabDevice of one keycode on the root (a hotkey)",
      bytes: RequestBytes(131, 54, words: 10).with {
        $0.put32(8, root)
        $0.put32(16, 38)
        $0.put16(20, 3)
        $0.put16(24, 1)
        $0.put8(26, 1)
      }, expected: []),
    Case(
      name: "XIPassiveGrabDevice of AnyButton on the root",
      bytes: RequestBytes(131, 54, words: 10).with {
        $0.put32(8, root)
        $0.put16(20, 2)
        $0.put16(24, 1)
        $0.put8(26, 0)
      }, expected: []),
    // RECORD.
    Case(
      name: "RECORD CreateContext of device events 2..6", bytes: recordContext(device: (2, 6)),
      expected: [.recordKeyEvents]),
    Case(
      name: "RECORD RegisterClients of delivered KeyPress",
      bytes: recordContext(minor: 2, device: (0, 0), delivered: (2, 2)), expected: [.recordKeyEvents]),
    Case(
      name: "RECORD CreateContext of XI DeviceKeyPress",
      bytes: recordContext(device: (67, 67)), expected: [.recordKeyEvents]),
    Case(
      name: "RECORD CreateContext of pointer events only",
      bytes: recordContext(device: (4, 6)), expected: []),
    Case(name: "RECORD CreateContext of requests only", bytes: recordContext(device: (0, 0)), expected: []),
    Case(
      name: "RECORD CreateContext, big-endian", bytes: recordContext(device: (2, 3), bigEndian: true),
      expected: [.recordKeyEvents], bigEndian: true),
    // XKB.
    Case(
      name: "XKB SelectEvents all ActionMessage", bytes: xkbSelect(which: 1 << 9, all: 1 << 9),
      expected: [.xkbKeyEvents]),
    Case(
      name: "XKB SelectEvents AccessXNotify details",
      bytes: xkbSelect(which: 1 << 10, all: 0, details: [0x01, 0x00, 0x01, 0x00]), expected: [.xkbKeyEvents]),
    Case(
      name: "XKB SelectEvents StateNotify (lock details, as toolkits do) and AccessXNotify without details",
      bytes: xkbSelect(which: 1 << 2 | 1 << 10, all: 0, details: [0x88, 0x00, 0x88, 0x00, 0xff, 0x00, 0x00, 0x00]),
      expected: []),
    Case(
      name: "XKB SelectEvents StateNotify all, NewKeyboardNotify all",
      bytes: xkbSelect(which: 1 << 0 | 1 << 2, all: 1 << 0 | 1 << 2), expected: []),
    Case(
      name: "XKB SelectEvents after ControlsNotify (4-byte details): ActionMessage",
      bytes: xkbSelect(which: 1 << 3 | 1 << 9, all: 0, details: [1, 0, 0, 0, 1, 0, 0, 0, 1, 1]),
      expected: [.xkbKeyEvents]),
    Case(
      name: "XKB SelectEvents of ActionMessage, cleared",
      bytes: xkbSelect(which: 1 << 9, clear: 1 << 9, all: 1 << 9), expected: []),
    // Truncated requests decode to nothing.
    Case(name: "XISelectEvents cut short", bytes: Array(xiSelect(root, [(0, [13])]).prefix(8)), expected: []),
    Case(
      name: "RECORD CreateContext with a huge range count",
      bytes: RequestBytes(146, 1, words: 6).with {
        $0.put32(12, 0)
        $0.put32(16, 0xffff_ffff)
      }, expected: []),
  ]

  @Test("each request decodes to the expected kinds", arguments: cases)
  func decodes(_ c: Case) {
    #expect(kinds(decode(c.bytes, bigEndian: c.bigEndian)) == c.expected)
  }

  @Test("20,000 random requests of the recorded opcodes decode without trapping, within their bytes")
  func hostileBytes() {
    var rng = SplitMix64(seed: 27)
    let majors: [UInt8] = KeylogOpcodes.core + [131, 135, 146]
    let minors: [UInt8] = [1, 2, 6, 46, 51, 54, 0, 255]
    var decoded = 0
    for _ in 0..<20_000 {
      let words = Int.random(in: 1...24, using: &rng)
      var bytes = (0..<(words * 4)).map { _ in UInt8.random(in: 0...255, using: &rng) }
      bytes[0] = majors.randomElement(using: &rng)!
      bytes[1] = minors.randomElement(using: &rng)!
      // A declared length that fits, is too long, or is 0 (BIG-REQUESTS), at random.
      let declared = [UInt16(words), UInt16(words + Int.random(in: 1...3, using: &rng)), 0].randomElement(using: &rng)!
      bytes[2] = UInt8(declared & 0xff)
      bytes[3] = UInt8(declared >> 8)
      let cut = Int.random(in: 0...bytes.count, using: &rng)
      decoded += decode(Array(bytes.prefix(cut)), bigEndian: Bool.random(using: &rng)).count
    }
    #expect(decoded > 0, "some random requests mean something")
  }

  @Test("a BIG-REQUESTS form decodes as the normal form")
  func bigRequests() {
    let normal = xiSelect(root, [(0, [13, 14])])
    #expect(kinds(decode(RequestBytes.bigRequestForm(normal))) == [.xi2RawKeys])
  }

  @Test("details name the window, the events and the device")
  func details() throws {
    guard case .listens(let s) = try #require(decode(xiSelect(root, [(0, [13, 14])])).first) else {
      Issue.record("not a listening request")
      return
    }
    #expect(s.detail == "RawKeyPress, RawKeyRelease on the root (device 0)")
    #expect(s.request == "XInputExtension XISelectEvents")
    #expect(s.window == root)
    guard case .listens(let g) = try #require(decode(changeAttributes(other, events: 3)).first) else {
      Issue.record("not a listening request")
      return
    }
    #expect(g.detail == "KeyPress, KeyRelease in the event mask of window 0x600001")
  }

  @Test("QueryKeymap and SetInputFocus")
  func keymapAndFocus() {
    #expect(decode(RequestBytes(44, 0, words: 1).bytes) == [.keymapQuery])
    #expect(decode(RequestBytes(42, 1, words: 3).with { $0.put32(4, other) }) == [.focusSet(window: other)])
  }

  @Test("without XInput, XKB or RECORD, their opcodes mean nothing")
  func unknownExtensions() {
    let none = KeylogOpcodes()
    let bytes = xiSelect(root, [(0, [13])])
    let r = bytes.withUnsafeBytes {
      KeylogDecoder.decode($0, clientBase: client, resourceMask: mask, bigEndian: false, opcodes: none)
    }
    #expect(r.isEmpty)
    #expect(none.extensionRanges.isEmpty)
    #expect(opcodes.extensionRanges.count == 6)
  }
}

@Suite("Keyboard watch: state")
struct KeyloggerWatchStateTests {
  static let a = ClientID(0x0040_0000)
  static let b = ClientID(0x0060_0000)
  static let raw = KeyListenSignal(
    kind: .xi2RawKeys, request: "XInputExtension XISelectEvents", window: root, detail: "")
  static let grab = KeyListenSignal(kind: .keyboardGrab, request: "GrabKeyboard", window: root, detail: "")

  @Test("each client and kind is found once")
  func oncePerKind() {
    var w = KeyloggerWatch()
    #expect(w.observe(Self.a, Self.raw) != nil)
    #expect(w.observe(Self.a, Self.raw) == nil)
    #expect(w.observe(Self.a, Self.grab) != nil)
    #expect(w.observe(Self.b, Self.raw) != nil)
    w.clientGone(Self.a)
    #expect(w.observe(Self.a, Self.raw) != nil, "a new client with the same id base")
  }

  @Test("an allowed client is never found; allowing one forgets it")
  func allowed() {
    var w = KeyloggerWatch()
    #expect(w.needsDecision(Self.a))
    w.decide(Self.a, allowed: true)
    #expect(!w.needsDecision(Self.a))
    #expect(w.observe(Self.a, Self.raw) == nil)
    #expect(w.suspects.isEmpty)
    #expect(w.observe(Self.b, Self.raw) != nil)
    w.decide(Self.b, allowed: true)
    #expect(w.suspects.isEmpty)
  }

  @Test("keymap polling: 5 QueryKeymap within 1 s, not 5 over several seconds")
  func keymapPolling() {
    var w = KeyloggerWatch()
    var found: [Int] = []
    for i in 0..<30 {
      if w.keymapQueried(Self.a, atMs: UInt32(i * 500)) != nil { found.append(i) }  // 2 per second
    }
    #expect(found.isEmpty)
    for i in 0..<30 {
      if w.keymapQueried(Self.b, atMs: 4_294_967_000 &+ UInt32(i)) != nil { found.append(i) }  // 1 kHz, wrapping
    }
    #expect(found == [4])
    let f = w.suspects[Self.b]?[.keymapPolling]
    #expect(f?.detail == "5 QueryKeymap within 4 ms (1000 per second)")
  }

  @Test("notice: once per client per focus period, and a new suspect during one")
  func notices() {
    var w = KeyloggerWatch()
    _ = w.observe(Self.a, Self.raw)
    #expect(w.noticeDue().isEmpty, "no secure window has the focus")
    w.focusChanged(secureWindow: other)
    #expect(w.noticeDue() == [Self.a])
    #expect(w.noticeDue().isEmpty, "told once in this period")
    _ = w.observe(Self.a, Self.grab)
    #expect(w.noticeDue().isEmpty, "another kind of a client already told")
    _ = w.observe(Self.b, Self.grab)
    #expect(w.noticeDue() == [Self.b])
    w.focusChanged(secureWindow: other)
    #expect(w.noticeDue().isEmpty, "the same focus period")
    w.focusChanged(secureWindow: nil)
    #expect(w.noticeDue().isEmpty)
    w.focusChanged(secureWindow: other)
    #expect(w.noticeDue() == [Self.a, Self.b], "a new focus period")
    w.clientGone(Self.a)
    w.focusChanged(secureWindow: 0x0070_0001)
    #expect(w.noticeDue() == [Self.b])
  }

  @Test("the notice names the programs, the new ones first, and what they did")
  func noticeText() {
    var w = KeyloggerWatch()
    _ = w.observe(Self.a, Self.raw)
    w.focusChanged(secureWindow: other)
    _ = w.noticeDue()
    _ = w.observe(Self.b, Self.grab)
    let due = w.noticeDue()
    let n = w.notice(due: due) { c in c == Self.a ? ("xinput", 12) : ("grabber", nil) }
    #expect(n.summary == "Keyboard: 2 programs may read what you type")
    #expect(
      n.body.hasPrefix("grabber grabbed the keyboard; xinput (pid 12) selected raw key events of every keyboard."))
    #expect(n.audit.event == "keylogger-notice")
    #expect(n.audit["new"] == .int(1))
    let notice = CaptureNotifier.Notice(keylogger: n)
    #expect(notice.summary == n.summary)
    #expect(notice.body == n.body)
  }

  @Test("the audit record has the client's identity fields and what it did")
  func audit() {
    let f = KeyloggerWatch.Finding(
      client: Self.a,
      signal: KeyListenSignal(kind: .anyKeyGrab, request: "GrabKey", window: root, detail: "AnyKey grabbed"))
    let r = f.audit(identity: [("pid", .int(7)), ("exe", .string("/usr/bin/x"))])
    #expect(r.event == "keylogger-suspected")
    #expect(r["kind"] == .string("anykey-grab"))
    #expect(r["target"] == .string("0x3c3"))
    #expect(r["what"] == .string("AnyKey grabbed"))
    #expect(r["pid"] == .int(7))
    #expect(r["exe"] == .string("/usr/bin/x"))
  }
}

@Suite("Keyboard watch: policy")
struct KeyloggerPolicyTests {
  @Test("defaults allow input methods and hotkey daemons, by executable")
  func defaults() {
    let p = Policy()
    #expect(p.keyloggers.enabled)
    for exe in [
      "/usr/bin/ibus-daemon", "/usr/libexec/ibus-x11", "/usr/bin/fcitx5", "/usr/bin/xbindkeys", "/usr/bin/sxhkd",
      "/usr/bin/xcape", "/usr/libexec/at-spi2-registryd",
    ] {
      #expect(p.keyloggers.allowRule(ClientIdentity(pid: 1, exe: exe)) != nil, "\(exe)")
    }
    #expect(p.keyloggers.allowRule(ClientIdentity(pid: 1, exe: "/usr/bin/xinput")) == nil)
    #expect(p.keyloggers.allowRule(ClientIdentity(pid: 1)) == nil, "unidentified")
    #expect(p.keyloggers.allowRule(nil) == nil)
  }

  @Test("a file's allow list is added to the defaults, or replaces them")
  func files() throws {
    let added = try PolicyLoader.merge([
      PolicyParser.parse("{version: 1, keyloggers: {allow: [{exe: \"*/xinput\"}]}}", path: "a")
    ])
    #expect(added.keyloggers.allowRule(ClientIdentity(pid: 1, exe: "/usr/bin/xinput")) != nil)
    #expect(added.keyloggers.allowRule(ClientIdentity(pid: 1, exe: "/usr/bin/sxhkd")) != nil)
    let replaced = try PolicyLoader.merge([
      PolicyParser.parse(
        "{version: 1, keyloggers: {enabled: false, replaceDefaultAllow: true, allow: [{exe: \"*/xinput\"}]}}",
        path: "a")
    ])
    #expect(!replaced.keyloggers.enabled)
    #expect(replaced.keyloggers.allowRule(ClientIdentity(pid: 1, exe: "/usr/bin/sxhkd")) == nil)
  }

  @Test("unknown keys and wrong types are errors")
  func errors() {
    #expect(throws: PolicyError.self) {
      try PolicyParser.parse("{version: 1, keyloggers: {allowed: []}}", path: "a")
    }
    #expect(throws: PolicyError.self) {
      try PolicyParser.parse("{version: 1, keyloggers: {enabled: \"yes\"}}", path: "a")
    }
    #expect(throws: PolicyError.self) {
      try PolicyParser.parse("{version: 1, keyloggers: []}", path: "a")
    }
  }
}
